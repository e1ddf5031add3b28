crate::tools::workspace::live_app::live_app_tool!(DeleteActiveFile {
    name: "delete_active_file",
    title: "Delete the active file (live app)",
    description: "Deletes the file open in a running Obsidian. A hosted vault has no open file: answers plugin_unavailable; delete_note deletes by path.",
    domain: Workspace,
    scopes: ["delete:notes"],
    class: Delete,
    needs: "the file open in the app",
    hints: [
        ("A hosted vault has no active file: name the note by its path and use delete_note.", ["delete_note"]),
        ("A hosted vault has no active file: name the note by its path.", []),
    ],
});
