crate::tools::workspace::live_app::live_app_tool!(SearchOmnisearch {
    name: "search_omnisearch",
    title: "Omnisearch (live app)",
    description: "Searches with the Omnisearch plugin of a running Obsidian. Omnisearch runs only inside the app: answers plugin_unavailable; search_vault ranks notes the same way.",
    domain: Search,
    scopes: ["read:omnisearch"],
    class: Read,
    needs: "the Omnisearch plugin",
    hints: [
        ("Omnisearch runs only inside the app. search_vault ranks notes by relevance.", ["search_vault"]),
        ("Omnisearch runs only inside the app. Use the server's own search.", []),
    ],
});
