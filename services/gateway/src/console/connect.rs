//! Connect a client: for every member, the MCP endpoint, the vaults they can name in tool calls,
//! and a ready-to-paste configuration for each AI client, each with a Copy button. The client
//! signs in through the organisation's identity provider the first time it connects.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use maud::html;

use super::api::{Call, Peer};
use super::layout::{self, Nav};
use super::{Console, signed_in};
use crate::me::MyClients;

pub async fn page(State(console): State<Console>, headers: HeaderMap, peer: Peer) -> Response {
    let session = signed_in!(console, headers, peer);
    let clients =
        match console.api.json::<MyClients>(&session.origin, &session.token, Call::get("/v1/me/clients")).await {
            Ok(c) => c,
            Err(f) => return layout::failure_page(&f),
        };
    let content = html! {
        p { "Your AI client connects to this endpoint and signs you in through your organisation the first time:" }
        div.copyable {
            pre #mcp-url { code { (clients.url) } }
            button type="button" data-copy="mcp-url" { "Copy" }
        }
        h2 { "Your vaults" }
        @if clients.vaults.is_empty() {
            p { "You can reach no vault yet. Ask your administrator." }
        } @else {
            p { "Name one of these as " code { "vault" } " in tool calls: " (clients.vaults.join(", ")) "." }
        }
        @for (i, c) in clients.clients.iter().enumerate() {
            h2 id=(format!("client-{i}")) { (c.client) }
            p.hint { "Where: " (c.place) }
            div.copyable {
                pre id=(format!("setup-{i}")) { code { (c.text) } }
                button type="button" data-copy=(format!("setup-{i}")) { "Copy" }
            }
        }
    };
    layout::page(&session, Nav::Connect, "Connect a client", content)
}
