crate::tools::workspace::live_app::live_app_tool!(RemotelySaveTrigger {
    name: "remotely_save_trigger",
    title: "Run a Remotely Save sync (live app)",
    description: "Starts a Remotely Save sync in a running Obsidian. A hosted vault is stored by the server itself: answers plugin_unavailable; every write is already saved.",
    domain: Automation,
    scopes: ["write:remotely-save"],
    class: Write,
    needs: "the Remotely Save plugin",
    hints: [
        (
            "This vault is stored by the server: every write is saved when it answers. get_index_status shows its state.",
            ["get_index_status"]
        ),
        ("This vault is stored by the server: every write is saved when it answers.", []),
    ],
});
