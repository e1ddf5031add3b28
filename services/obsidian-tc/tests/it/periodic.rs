//! Periodic notes and templates through the MCP surface, from the vault's own Daily notes,
//! Periodic Notes and Templates settings: where a period's note lives, creating it from its
//! template, appending, listing by date, and the refusals.

use serde_json::json;

use crate::index::commit;
use crate::write::{V, err, ok, setup_with, text};

const DAILY_TEMPLATE: &str =
    "# {{date:dddd, MMMM Do YYYY}}\n\nPrevious: [[{{yesterday:YYYY-MM-DD}}]] · title {{title}}\n\n## Log\n";

/// A vault with Daily notes in Journal/ from a template, weekly notes through the Periodic
/// Notes plugin, a templates folder and a few existing notes.
async fn vault() -> (crate::harness::TestApp, String) {
    let (app, token) = setup_with(true, None).await;
    commit(
        &app,
        &token,
        V,
        &[
            (".obsidian/daily-notes.json", Some(r#"{"folder": "Journal", "format": "YYYY-MM-DD", "template": "Templates/Daily"}"#)),
            (
                ".obsidian/plugins/periodic-notes/data.json",
                Some(r#"{"weekly": {"enabled": true, "folder": "Weeks/", "format": "gggg-[W]ww", "templatePath": "Templates/Weekly.md"}, "monthly": {"enabled": false}}"#),
            ),
            (".obsidian/templates.json", Some(r#"{"folder": "Templates", "dateFormat": "DD.MM.YYYY"}"#)),
            ("Templates/Daily.md", Some(DAILY_TEMPLATE)),
            ("Templates/Weekly.md", Some("Week of {{sunday:YYYY-MM-DD}} to {{saturday:YYYY-MM-DD}}\n")),
            ("Templates/Meeting.md", Some("# {{title}}\nProject: {{project}}\nOn {{date}} ({{mystery}})\n")),
            ("Templates/Scripted.md", Some("<% tp.date.now() %>\n")),
            ("Journal/2026-11-30.md", Some("# Monday\n")),
            ("Journal/2026-12-01.md", Some("# Tuesday\n")),
            ("Journal/2026-12-02.md", Some("# Wednesday\n")),
            ("Journal/notes about journaling.md", Some("not a daily note\n")),
            ("Journal/2026-02-30.md", Some("no such day\n")),
        ],
    )
    .await;
    (app, token)
}

#[tokio::test]
async fn periodic_notes_resolve_create_from_their_template_append_and_list() {
    let (app, token) = vault().await;
    let resolved = ok(&app, &token, "resolve_daily_note", json!({"vault": V, "date": "2026-12-03"})).await;
    assert_eq!(resolved, json!({"vault": V, "date": "2026-12-03", "path": "Journal/2026-12-03.md", "exists": false}));
    let missing =
        ok(&app, &token, "get_periodic_note", json!({"vault": V, "period": "daily", "date": "2026-12-03"})).await;
    assert_eq!((missing["exists"].clone(), missing.get("content").is_none()), (json!(false), true));

    let made =
        ok(&app, &token, "create_periodic_note", json!({"vault": V, "period": "daily", "date": "2026-12-03"})).await;
    assert_eq!(made["path"], "Journal/2026-12-03.md");
    assert_eq!(
        (made["template"].clone(), made["template_expanded"].clone()),
        (json!("Templates/Daily.md"), json!(true))
    );
    let created = text(&app, &token, "Journal/2026-12-03.md").await.unwrap();
    assert_eq!(created, "# Thursday, December 3rd 2026\n\nPrevious: [[2026-12-02]] · title 2026-12-03\n\n## Log\n");
    let again =
        err(&app, &token, "create_periodic_note", json!({"vault": V, "period": "daily", "date": "2026-12-03"})).await;
    assert_eq!(again["code"], "note_exists");

    let appended = ok(
        &app,
        &token,
        "append_to_periodic_note",
        json!({"vault": V, "period": "daily", "date": "2026-12-03", "content": "- 09:00 standup\n", "heading": "Log"}),
    )
    .await;
    assert_eq!((appended["created"].clone(), appended["bytes_appended"].clone()), (json!(false), json!(16)));
    assert_eq!(text(&app, &token, "Journal/2026-12-03.md").await.unwrap(), format!("{created}- 09:00 standup\n"));
    // Appending to a day with no note creates it from the template first.
    let fresh = ok(
        &app,
        &token,
        "append_to_periodic_note",
        json!({"vault": V, "period": "daily", "date": "2026-12-05", "content": "first"}),
    )
    .await;
    assert_eq!((fresh["created"].clone(), fresh["template_expanded"].clone()), (json!(true), json!(true)));
    assert!(text(&app, &token, "Journal/2026-12-05.md").await.unwrap().ends_with("## Log\nfirst"));

    let found = ok(
        &app,
        &token,
        "find_or_create_periodic_note",
        json!({"vault": V, "period": "daily", "date": "2026-12-01", "response_format": "concise"}),
    )
    .await;
    assert_eq!((found["created"].clone(), found["content"].clone()), (json!(false), json!("# Tuesday\n")));
    assert!(found.get("period").is_none(), "concise drops the period echo");
    let week = ok(
        &app,
        &token,
        "find_or_create_periodic_note",
        json!({"vault": V, "period": "weekly", "date": "2026-12-03", "response_format": "detailed"}),
    )
    .await;
    assert_eq!(
        (week["created"].clone(), week["path"].clone(), week["date"].clone()),
        (json!(true), json!("Weeks/2026-W49.md"), json!("2026-11-29"))
    );
    assert_eq!((week["period"].clone(), week["template"].clone()), (json!("weekly"), json!("Templates/Weekly.md")));
    assert_eq!(week["content"], "Week of 2026-11-29 to 2026-12-05\n");

    let detailed = ok(
        &app,
        &token,
        "get_periodic_note",
        json!({"vault": V, "period": "daily", "date": "2026-12-01", "response_format": "detailed"}),
    )
    .await;
    assert_eq!((detailed["exists"].clone(), detailed["period"].clone()), (json!(true), json!("daily")));

    // Newest first, only names the format writes, a range, and pages that join up.
    let listed =
        ok(&app, &token, "list_periodic_notes", json!({"vault": V, "period": "daily", "response_format": "concise"}))
            .await;
    let dates: Vec<&str> = listed["notes"].as_array().unwrap().iter().map(|n| n["date"].as_str().unwrap()).collect();
    assert_eq!(dates, ["2026-12-05", "2026-12-03", "2026-12-02", "2026-12-01", "2026-11-30"]);
    assert!(listed["notes"][0].get("size").is_none());
    let ranged = ok(&app, &token, "list_periodic_notes", json!({"vault": V, "period": "daily", "from": "2026-12-01", "to": "2026-12-03", "limit": 2, "response_format": "detailed"})).await;
    assert_eq!(ranged["notes"].as_array().unwrap().len(), 2);
    assert!(ranged["notes"][0]["size"].is_number());
    let rest = ok(&app, &token, "list_periodic_notes", json!({"vault": V, "period": "daily", "from": "2026-12-01", "to": "2026-12-03", "limit": 2, "cursor": ranged["next_cursor"], "response_format": "concise"})).await;
    assert_eq!(rest["notes"], json!([{"date": "2026-12-01", "path": "Journal/2026-12-01.md"}]));
    assert!(rest.get("next_cursor").is_none());

    let refusals = [
        ("get_periodic_note", json!({"vault": V, "period": "monthly"}), "invalid_input", "period"),
        ("get_periodic_note", json!({"vault": V, "period": "daily", "date": "03/12/2026"}), "invalid_input", "date"),
        ("get_periodic_note", json!({"vault": V, "period": "hourly"}), "validation_error", "period"),
        (
            "list_periodic_notes",
            json!({"vault": V, "period": "daily", "from": "2026-12-05", "to": "2026-12-01"}),
            "invalid_input",
            "from",
        ),
        ("list_periodic_notes", json!({"vault": V, "period": "daily", "cursor": "bogus"}), "invalid_input", "cursor"),
        (
            "create_periodic_note",
            json!({"vault": V, "period": "daily", "date": "2026-12-09", "template_override": "Nope"}),
            "invalid_input",
            "template_override",
        ),
        (
            "create_periodic_note",
            json!({"vault": V, "period": "daily", "date": "2026-12-09", "template_override": "Scripted"}),
            "plugin_unavailable",
            "",
        ),
        ("resolve_daily_note", json!({"vault": "Elsewhere"}), "vault_not_found", ""),
    ];
    for (tool, args, code, field) in refusals {
        let e = err(&app, &token, tool, args.clone()).await;
        assert_eq!(e["code"], code, "{tool} {args}: {e}");
        if !field.is_empty() {
            assert_eq!(e["details"]["field"], field, "{tool} {args}: {e}");
        }
    }
    assert_eq!(text(&app, &token, "Journal/2026-12-09.md").await, None, "no refusal wrote");
    // A Templater template is copied as it is when asked.
    let raw = ok(&app, &token, "create_periodic_note", json!({"vault": V, "period": "daily", "date": "2026-12-09", "template_override": "Scripted", "expand_template": false})).await;
    assert_eq!(raw["template_expanded"], false);
    assert_eq!(text(&app, &token, "Journal/2026-12-09.md").await.unwrap(), "<% tp.date.now() %>\n");
}

#[tokio::test]
async fn a_vault_without_settings_keeps_daily_notes_at_its_root_as_obsidian_does() {
    let (app, token) = setup_with(false, None).await;
    let made =
        ok(&app, &token, "find_or_create_periodic_note", json!({"vault": V, "period": "daily", "date": "2026-01-02"}))
            .await;
    assert_eq!(
        (made["path"].clone(), made["created"].clone(), made["content"].clone()),
        (json!("2026-01-02.md"), json!(true), json!(""))
    );
    let weekly = err(&app, &token, "get_periodic_note", json!({"vault": V, "period": "weekly"})).await;
    assert_eq!(weekly["code"], "invalid_input");
}

#[tokio::test]
async fn templates_are_listed_and_written_with_their_variables_filled_in() {
    let (app, token) = vault().await;
    let listed = ok(&app, &token, "list_templates", json!({"vault": V})).await;
    assert_eq!(listed["folder"], "Templates");
    let names: Vec<&str> =
        listed["templates"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["Daily", "Meeting", "Scripted", "Weekly"]);

    let made = ok(
        &app,
        &token,
        "execute_template",
        json!({"vault": V, "template": "Meeting", "target": "Meetings/Kickoff", "args": {"project": "Apollo"}}),
    )
    .await;
    assert_eq!(
        (made["path"].clone(), made["template"].clone(), made["created"].clone()),
        (json!("Meetings/Kickoff.md"), json!("Templates/Meeting.md"), json!(true))
    );
    assert_eq!(made["unknown_variables"], json!(["mystery"]));
    let written = text(&app, &token, "Meetings/Kickoff.md").await.unwrap();
    let today = chrono::Utc::now().format("%d.%m.%Y").to_string();
    assert_eq!(written, format!("# Kickoff\nProject: Apollo\nOn {today} ({{{{mystery}}}})\n"));

    let exists = err(
        &app,
        &token,
        "execute_template",
        json!({"vault": V, "template": "Meeting", "target": "Meetings/Kickoff.md"}),
    )
    .await;
    assert_eq!(exists["code"], "note_exists");
    // Replacing asks a person first (confirmation is on in this vault), and writes nothing until then.
    let gated = err(
        &app,
        &token,
        "execute_template",
        json!({"vault": V, "template": "Templates/Daily.md", "target": "Meetings/Kickoff.md", "overwrite": true}),
    )
    .await;
    assert_eq!(gated["code"], "elicit_required");
    assert_eq!(text(&app, &token, "Meetings/Kickoff.md").await.unwrap(), written);
    let scripted =
        err(&app, &token, "execute_template", json!({"vault": V, "template": "Scripted", "target": "S.md"})).await;
    assert_eq!(
        (scripted["code"].clone(), scripted["details"]["needs"].clone()),
        (json!("plugin_unavailable"), json!("the Templater plugin"))
    );
    let bad_name =
        err(&app, &token, "execute_template", json!({"vault": V, "template": "Meeting", "target": "Bad|name"})).await;
    assert_eq!(bad_name["code"], "path_invalid");
    assert_eq!(text(&app, &token, "S.md").await, None);
}
