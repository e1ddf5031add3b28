//! obsidian_execute_command: the command palette exists only inside a running Obsidian.

crate::tools::workspace::live_app::live_app_tool!(ObsidianExecuteCommand {
    name: "obsidian_execute_command",
    title: "Run an Obsidian command (live app)",
    description: "Runs a command-palette command in a running Obsidian. No app runs here: answers plugin_unavailable; the obsidian_* note tools change files directly.",
    domain: Automation,
    scopes: ["execute:command"],
    class: Execute,
    needs: "the command palette",
    hints: [
        (
            "Obsidian's commands run only inside the app. Make the change with obsidian_patch_note or obsidian_write_note.",
            ["obsidian_patch_note", "obsidian_write_note"]
        ),
        ("Obsidian's commands run only inside the app.", []),
    ],
});
