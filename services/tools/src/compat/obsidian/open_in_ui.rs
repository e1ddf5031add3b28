//! obsidian_open_in_ui: opening a note in the app needs a running Obsidian.

crate::tools::workspace::live_app::live_app_tool!(ObsidianOpenInUi {
    name: "obsidian_open_in_ui",
    title: "Open a note in Obsidian (live app)",
    description: "Opens a file in a running Obsidian. No app runs here: answers plugin_unavailable; read the note with obsidian_get_note.",
    domain: Automation,
    scopes: ["execute:uri"],
    class: Execute,
    needs: "a running app to open the file in",
    hints: [
        ("No Obsidian app runs here to open the file in. Read it with obsidian_get_note.", ["obsidian_get_note"]),
        ("No Obsidian app runs here to open the file in.", []),
    ],
});
