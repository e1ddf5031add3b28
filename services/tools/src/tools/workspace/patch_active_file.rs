crate::tools::workspace::live_app::live_app_tool!(PatchActiveFile {
    name: "patch_active_file",
    title: "Patch the active file (live app)",
    description: "Patches the file open in a running Obsidian. Answers plugin_unavailable here: use patch_note.",
    domain: Workspace,
    scopes: ["write:notes"],
    class: Write,
    needs: "the file open in the app",
    hints: [
        ("A hosted vault has no active file: name the note by its path and use patch_note.", ["patch_note"]),
        ("A hosted vault has no active file: name the note by its path.", []),
    ],
});
