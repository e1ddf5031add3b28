crate::tools::workspace::live_app::live_app_tool!(MakemdQuery {
    name: "makemd_query",
    title: "Query a Make.md space (live app)",
    description: "Queries a Make.md space. Needs a running Obsidian: answers plugin_unavailable.",
    domain: Automation,
    scopes: ["read:makemd"],
    class: Read,
    needs: "the Make.md plugin",
    hints: [
        (
            "Make.md's spaces live in the app. search_jsonlogic filters notes by their properties and folders.",
            ["search_jsonlogic"]
        ),
        ("Make.md's spaces live in the app. Filter the notes by their properties instead.", []),
    ],
});
