crate::tools::workspace::live_app::live_app_tool!(DeleteActiveFile {
    name: "delete_active_file",
    title: "Delete the active file (live app)",
    description: "Deletes the file open in a running Obsidian. Answers plugin_unavailable here: use delete_note.",
    domain: Workspace,
    scopes: ["delete:notes"],
    class: Delete,
    needs: "the file open in the app",
    hints: [
        ("A hosted vault has no active file: name the note by its path and use delete_note.", ["delete_note"]),
        ("A hosted vault has no active file: name the note by its path.", []),
    ],
});
