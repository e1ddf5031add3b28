crate::tools::workspace::live_app::live_app_tool!(GitCommit {
    name: "git_commit",
    title: "Commit (Obsidian Git)",
    description: "Obsidian Git commit. Every write is already committed, so answers plugin_unavailable; see git_log.",
    domain: Git,
    scopes: ["execute:git"],
    class: Execute,
    needs: "the Obsidian Git plugin",
    hints: [
        (
            "Every write is already a commit of the vault's history. git_log shows them, git_diff what one changed.",
            ["git_log", "git_diff"]
        ),
        ("Every write is already a commit of the vault's history.", []),
    ],
});
