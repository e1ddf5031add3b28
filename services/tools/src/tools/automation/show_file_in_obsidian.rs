crate::tools::workspace::live_app::live_app_tool!(ShowFileInObsidian {
    name: "show_file_in_obsidian",
    title: "Show a file in Obsidian (live app)",
    description: "Opens a file in Obsidian. Needs a running Obsidian: answers plugin_unavailable; see generate_uri.",
    domain: Automation,
    scopes: ["execute:uri"],
    class: Execute,
    needs: "an Obsidian window",
    hints: [
        ("The server cannot open a window. Give the person an obsidian:// link from generate_uri.", ["generate_uri"]),
        ("The server cannot open a window. Give the person the note's path.", []),
    ],
});
