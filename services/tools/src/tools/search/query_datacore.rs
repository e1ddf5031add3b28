crate::tools::workspace::live_app::live_app_tool!(QueryDatacore {
    name: "query_datacore",
    title: "Datacore query (live app)",
    description: "Datacore query; needs a running Obsidian, so answers plugin_unavailable. Use search_jsonlogic.",
    domain: Search,
    scopes: ["read:datacore"],
    class: Read,
    needs: "the Datacore plugin",
    hints: [
        (
            "Datacore runs only inside the app. search_jsonlogic filters notes by their properties, tags and folders.",
            ["search_jsonlogic"]
        ),
        ("Datacore runs only inside the app. Filter the notes by their properties instead.", []),
    ],
});
