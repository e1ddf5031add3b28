crate::tools::workspace::live_app::live_app_tool!(ListCommands {
    name: "list_commands",
    title: "List Obsidian commands (live app)",
    description: "Lists Obsidian's command-palette commands. Needs a running Obsidian: answers plugin_unavailable.",
    domain: Automation,
    scopes: ["read:command"],
    class: Read,
    needs: "the command palette",
    hints: [
        (
            "Obsidian's commands exist only inside the app. find_capability finds the tool that does a job on the files.",
            ["find_capability"]
        ),
        ("Obsidian's commands exist only inside the app; use the tools that work on the files.", []),
    ],
});
