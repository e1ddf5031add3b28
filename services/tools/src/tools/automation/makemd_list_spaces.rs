crate::tools::workspace::live_app::live_app_tool!(MakemdListSpaces {
    name: "makemd_list_spaces",
    title: "List Make.md spaces (live app)",
    description: "Lists Make.md spaces. Needs a running Obsidian: answers plugin_unavailable.",
    domain: Automation,
    scopes: ["read:makemd"],
    class: Read,
    needs: "the Make.md plugin",
    hints: [
        ("Make.md's spaces live in the app. list_notes lists a folder's notes.", ["list_notes"]),
        ("Make.md's spaces live in the app. List the folder's notes instead.", []),
    ],
});
