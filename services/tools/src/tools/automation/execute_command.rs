crate::tools::workspace::live_app::live_app_tool!(ExecuteCommand {
    name: "execute_command",
    title: "Run an Obsidian command (live app)",
    description: "Runs an Obsidian command-palette command. Needs a running Obsidian: answers plugin_unavailable.",
    domain: Automation,
    scopes: ["execute:command"],
    class: Execute,
    needs: "the command palette",
    hints: [
        (
            "Obsidian's commands run only inside the app. Make the change to the files with write_note or patch_note.",
            ["write_note", "patch_note"]
        ),
        ("Obsidian's commands run only inside the app. Make the change to the files directly.", []),
    ],
});
