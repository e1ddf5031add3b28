crate::tools::workspace::live_app::live_app_tool!(RemotelySaveTrigger {
    name: "remotely_save_trigger",
    title: "Run a Remotely Save sync (live app)",
    description: "Starts a Remotely Save sync. Needs a running Obsidian: answers plugin_unavailable.",
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
