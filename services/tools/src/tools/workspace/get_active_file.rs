crate::tools::workspace::live_app::live_app_tool!(GetActiveFile {
    name: "get_active_file",
    title: "Active file (live app)",
    description: "Reads the file open in a running Obsidian. Answers plugin_unavailable here: use read_note.",
    domain: Workspace,
    scopes: ["read:notes"],
    class: Read,
    needs: "the file open in the app",
    hints: [
        ("A hosted vault has no active file: name the note by its path and read it with read_note.", ["read_note"]),
        ("A hosted vault has no active file: name the note by its path.", []),
    ],
});
