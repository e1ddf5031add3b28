crate::tools::workspace::live_app::live_app_tool!(GitStage {
    name: "git_stage",
    title: "Stage files (Obsidian Git)",
    description: "Obsidian Git staging. Every write is already committed, so answers plugin_unavailable.",
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
