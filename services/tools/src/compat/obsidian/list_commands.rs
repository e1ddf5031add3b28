//! obsidian_list_commands: the command palette exists only inside a running Obsidian.

crate::tools::workspace::live_app::live_app_tool!(ObsidianListCommands {
    name: "obsidian_list_commands",
    title: "List Obsidian commands (live app)",
    description: "Lists a running Obsidian's command-palette commands. No app runs here: answers plugin_unavailable; the obsidian_* note tools change files directly.",
    domain: Automation,
    scopes: ["read:command"],
    class: Read,
    needs: "the command palette",
    hints: [
        (
            "Obsidian's commands exist only inside the app. Change notes directly with obsidian_patch_note or obsidian_write_note.",
            ["obsidian_patch_note", "obsidian_write_note"]
        ),
        ("Obsidian's commands exist only inside the app.", []),
    ],
});
