crate::tools::workspace::live_app::live_app_tool!(SearchOmnisearch {
    name: "search_omnisearch",
    title: "Omnisearch (live app)",
    description: "Omnisearch search; needs a running Obsidian, so answers plugin_unavailable. Use search_vault.",
    domain: Search,
    scopes: ["read:omnisearch"],
    class: Read,
    needs: "the Omnisearch plugin",
    hints: [
        ("Omnisearch runs only inside the app. search_vault ranks notes by relevance.", ["search_vault"]),
        ("Omnisearch runs only inside the app. Use the server's own search.", []),
    ],
});
