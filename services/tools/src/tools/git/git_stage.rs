crate::tools::workspace::live_app::live_app_tool!(GitStage {
    name: "git_stage",
    title: "Stage files (Obsidian Git)",
    description: "Stages files with the Obsidian Git plugin. A hosted vault has no staging area: every write is committed when it answers, so this answers plugin_unavailable; git_log shows the commits.",
    domain: Git,
    scopes: ["write:git"],
    class: Write,
    needs: "the Obsidian Git plugin",
    hints: [
        (
            "Nothing needs staging: every write is committed when it answers. git_log shows the vault's history.",
            ["git_log"]
        ),
        ("Nothing needs staging: every write is committed when it answers.", []),
    ],
});
