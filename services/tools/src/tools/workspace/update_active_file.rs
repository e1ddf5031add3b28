crate::tools::workspace::live_app::live_app_tool!(UpdateActiveFile {
    name: "update_active_file",
    title: "Replace the active file (live app)",
    description: "Replaces the file open in a running Obsidian. Answers plugin_unavailable here: use write_note.",
    domain: Workspace,
    scopes: ["write:notes"],
    class: Write,
    needs: "the file open in the app",
    hints: [
        ("A hosted vault has no active file: name the note by its path and use write_note.", ["write_note"]),
        ("A hosted vault has no active file: name the note by its path.", []),
    ],
});
