crate::tools::workspace::live_app::live_app_tool!(TriggerQuickadd {
    name: "trigger_quickadd",
    title: "Run a QuickAdd action (live app)",
    description: "Runs a QuickAdd choice. Needs a running Obsidian: answers plugin_unavailable.",
    domain: Automation,
    scopes: ["execute:quickadd"],
    class: Execute,
    needs: "the QuickAdd plugin",
    hints: [
        (
            "QuickAdd runs only inside the app. Capture with append_note or create with write_note.",
            ["append_note", "write_note"]
        ),
        ("QuickAdd runs only inside the app. Write the note directly.", []),
    ],
});
