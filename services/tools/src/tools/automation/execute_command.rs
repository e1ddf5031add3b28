crate::tools::workspace::live_app::live_app_tool!(ExecuteCommand {
    name: "execute_command",
    title: "Run an Obsidian command (live app)",
    description: "Runs a command-palette command in a running Obsidian. Commands exist only inside the app: answers plugin_unavailable; the note tools change files directly.",
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
