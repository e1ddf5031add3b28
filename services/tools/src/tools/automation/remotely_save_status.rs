crate::tools::workspace::live_app::live_app_tool!(RemotelySaveStatus {
    name: "remotely_save_status",
    title: "Remotely Save status (live app)",
    description: "Reports Remotely Save's sync state. Needs a running Obsidian: answers plugin_unavailable.",
    domain: Automation,
    scopes: ["read:remotely-save"],
    class: Read,
    needs: "the Remotely Save plugin",
    hints: [
        (
            "This vault is stored by the server, not synced by Remotely Save. get_index_status shows its state.",
            ["get_index_status"]
        ),
        ("This vault is stored by the server, not synced by Remotely Save.", []),
    ],
});
