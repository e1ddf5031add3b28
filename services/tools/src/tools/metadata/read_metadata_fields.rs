crate::tools::workspace::live_app::live_app_tool!(ReadMetadataFields {
    name: "read_metadata_fields",
    title: "Metadata Menu fields (live app)",
    description: "Reads Metadata Menu fields in live Obsidian. Answers plugin_unavailable here: use read_frontmatter.",
    domain: Metadata,
    scopes: ["read:metadata-menu"],
    class: Read,
    needs: "the Metadata Menu plugin",
    hints: [
        (
            "Metadata Menu's field classes live in the app. read_frontmatter reads the note's properties.",
            ["read_frontmatter"]
        ),
        ("Metadata Menu's field classes live in the app. Read the note's properties instead.", []),
    ],
});
