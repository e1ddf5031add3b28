crate::tools::workspace::live_app::live_app_tool!(AppendActiveFile {
    name: "append_active_file",
    title: "Append to the active file (live app)",
    description: "Appends to the file open in a running Obsidian. Answers plugin_unavailable here: use append_note.",
    domain: Workspace,
    scopes: ["write:notes"],
    class: Write,
    needs: "the file open in the app",
    hints: [
        ("A hosted vault has no active file: name the note by its path and use append_note.", ["append_note"]),
        ("A hosted vault has no active file: name the note by its path.", []),
    ],
});
