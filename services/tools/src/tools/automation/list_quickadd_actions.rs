crate::tools::workspace::live_app::live_app_tool!(ListQuickaddActions {
    name: "list_quickadd_actions",
    title: "List QuickAdd actions (live app)",
    description: "Lists QuickAdd choices. Needs a running Obsidian: answers plugin_unavailable.",
    domain: Automation,
    scopes: ["read:quickadd"],
    class: Read,
    needs: "the QuickAdd plugin",
    hints: [
        (
            "QuickAdd runs only inside the app. Capture with append_note or create with write_note.",
            ["append_note", "write_note"]
        ),
        ("QuickAdd runs only inside the app. Write the note directly.", []),
    ],
});
