//! The overview: what the tenant holds against its quotas, its calls per day over 30 days as a
//! chart (with the same figures as a table for screen readers), and each vault's index and
//! embedding health. A member without the admin scopes sees their vaults and where to connect.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use maud::{Markup, PreEscaped, html};

use super::Console;
use super::api::{Call, Failure, Peer};
use super::layout::{self, Nav};
use super::session::{self, Session};
use crate::admin_usage::{Held, Usage};
use crate::scopes;

/// `GET /v1/admin/health`, as the overview reads it.
pub type Health = crate::admin_vaults::VaultsHealth;

pub async fn page(State(console): State<Console>, headers: HeaderMap, peer: Peer) -> Response {
    let session = match session::load(&console, &headers, peer).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    let api = &console.api;
    let usage = if session.can(scopes::USAGE) {
        Some(api.json::<Usage>(&session.origin, &session.token, Call::get("/v1/admin/usage?days=30")).await)
    } else {
        None
    };
    let health = if session.can(scopes::VAULTS) {
        Some(api.json::<Health>(&session.origin, &session.token, Call::get("/v1/admin/health")).await)
    } else {
        None
    };
    let mine = if usage.is_none() && health.is_none() {
        Some(api.json::<crate::me::MyVaults>(&session.origin, &session.token, Call::get("/v1/me/vaults")).await)
    } else {
        None
    };
    let content = html! {
        @if let Some(usage) = &usage {
            @match usage {
                Ok(u) => (usage_section(u)),
                Err(f) => (failed(f)),
            }
        }
        @if let Some(health) = &health {
            @match health {
                Ok(h) => (health_section(h)),
                Err(f) => (failed(f)),
            }
        }
        @if let Some(mine) = &mine {
            @match mine {
                Ok(v) => (member_section(&session, v)),
                Err(f) => (failed(f)),
            }
        }
    };
    layout::page(&session, Nav::Overview, "Overview", content)
}

fn failed(f: &Failure) -> Markup {
    html! { p.flash.error role="alert" { (f.message) " (" (f.code) ")" } }
}

fn quota_card(title: &str, held: &Held, show: impl Fn(i64) -> String) -> Markup {
    html! {
        div.card {
            h3 { (title) }
            p.figure { (show(held.used)) }
            @match held.quota {
                Some(quota) if quota > 0 => {
                    meter min="0" max=(quota) value=(held.used.min(quota)) aria-label=(format!("{title} used of the quota")) {}
                    p.hint { "of " (show(quota)) " (" (held.used * 100 / quota) "%)" }
                }
                _ => p.hint { "No quota" },
            }
        }
    }
}

/// Calls on one day, all classes and outcomes together.
fn calls_of(day: &crate::admin_usage::Day) -> i64 {
    day.calls.values().flat_map(|outcomes| outcomes.values()).sum()
}

fn usage_section(usage: &Usage) -> Markup {
    let today = chrono::Utc::now().date_naive();
    // Thirty days, oldest first, a day without usage as zero.
    let days: Vec<(chrono::NaiveDate, i64, i64)> = (0..30)
        .rev()
        .map(|back| {
            let day = today - chrono::Duration::days(back);
            let found = usage.days.iter().find(|d| d.day == day);
            (day, found.map(calls_of).unwrap_or(0), found.map(|d| d.throttled).unwrap_or(0))
        })
        .collect();
    let total: i64 = days.iter().map(|d| d.1).sum();
    html! {
        h2 { "Usage" }
        div.cards {
            (quota_card("Storage", &usage.storage_bytes, layout::bytes))
            (quota_card("Notes", &usage.notes, |n| n.to_string()))
            div.card {
                h3 { "Calls, last 30 days" }
                p.figure { (total) }
                p.hint { (days.iter().map(|d| d.2).sum::<i64>()) " throttled" }
            }
        }
        figure.chart {
            (chart(&days))
            figcaption.hint { "Calls per day (UTC), last 30 days." }
        }
        details {
            summary { "The same figures as a table" }
            div.table-wrap tabindex="0" role="region" aria-label="Table, scrolls sideways" {
                table {
                    caption.visually-hidden { "Calls per day, last 30 days" }
                    thead { tr { th scope="col" { "Day" } th.num scope="col" { "Calls" } th.num scope="col" { "Throttled" } } }
                    tbody {
                        @for (day, calls, throttled) in &days {
                            tr { td { (day) } td.num { (calls) } td.num { (throttled) } }
                        }
                    }
                }
            }
        }
    }
}

/// Calls per day as an SVG bar chart (no script; the figures are in the table beside it).
fn chart(days: &[(chrono::NaiveDate, i64, i64)]) -> Markup {
    let (width, height, left, bottom) = (600.0_f64, 160.0_f64, 36.0_f64, 18.0_f64);
    let most = days.iter().map(|d| d.1).max().unwrap_or(0).max(1) as f64;
    let slot = (width - left) / days.len().max(1) as f64;
    let mut svg = format!(
        "<svg viewBox=\"0 0 {width} {height}\" role=\"img\" aria-label=\"Calls per day over the last 30 days; at most {most} on one day\">"
    );
    svg.push_str(&format!(
        "<line class=\"axis\" x1=\"{left}\" y1=\"{y}\" x2=\"{width}\" y2=\"{y}\"></line>",
        y = height - bottom
    ));
    svg.push_str(&format!("<text x=\"0\" y=\"10\">{most}</text><text x=\"0\" y=\"{}\">0</text>", height - bottom));
    for (i, (day, calls, _)) in days.iter().enumerate() {
        let h = (*calls as f64 / most) * (height - bottom - 8.0);
        let x = left + i as f64 * slot + 1.0;
        svg.push_str(&format!(
            "<rect class=\"bar\" x=\"{x:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{h:.1}\"><title>{day}: {calls}</title></rect>",
            y = height - bottom - h,
            w = (slot - 2.0).max(1.0)
        ));
        if i % 7 == 0 {
            svg.push_str(&format!("<text x=\"{x:.1}\" y=\"{}\">{}</text>", height - 4.0, day.format("%m-%d")));
        }
    }
    svg.push_str("</svg>");
    // Every value above is a number or a date we formatted: nothing a person typed.
    PreEscaped(svg)
}

fn health_section(health: &Health) -> Markup {
    html! {
        h2 { "Vaults" }
        @if health.vaults.is_empty() {
            p { "No vaults yet. " a href="/console/vaults" { "Create one" } "." }
        } @else {
            div.table-wrap tabindex="0" role="region" aria-label="Table, scrolls sideways" {
                table {
                    thead {
                        tr {
                            th scope="col" { "Vault" }
                            th scope="col" { "Index" }
                            th scope="col" { "Embeddings" }
                            th.num scope="col" { "Commits" }
                        }
                    }
                    tbody {
                        @for v in &health.vaults {
                            tr {
                                td { (v.name) }
                                td { (index_badge(v)) }
                                td { (embed_badge(v)) }
                                td.num { (v.head_seq) }
                            }
                        }
                    }
                }
            }
            @for v in health.vaults.iter().filter(|v| v.last_error.is_some()) {
                p.hint { strong { (v.name) } ": last error: " (v.last_error.as_deref().unwrap_or("")) }
            }
        }
    }
}

fn index_badge(v: &crate::admin_vaults::VaultHealthOut) -> Markup {
    let behind = (v.head_seq - v.indexed_seq).max(0);
    html! {
        @if v.index_dead > 0 {
            span.badge.bad { (layout::count(v.index_dead, "failed job")) }
        } @else if behind > 0 || v.index_queued > 0 {
            span.badge.warn { "catching up: " (layout::count(behind, "commit")) " behind" }
        } @else {
            span.badge.good { "up to date" }
        }
    }
}

fn embed_badge(v: &crate::admin_vaults::VaultHealthOut) -> Markup {
    html! {
        @if v.embed_dead > 0 {
            span.badge.bad { (layout::count(v.embed_dead, "failed job")) }
        } @else if v.embed_queued > 0 {
            span.badge.warn { (layout::count(v.embed_queued, "batch")) " queued" }
        } @else {
            span.badge.good { "up to date" }
        }
    }
}

fn member_section(_session: &Session, vaults: &crate::me::MyVaults) -> Markup {
    html! {
        h2 { "Your vaults" }
        @if vaults.vaults.is_empty() {
            p { "You can reach no vault yet. Ask your administrator." }
        } @else {
            ul { @for v in &vaults.vaults { li { (v.name) } } }
        }
        p { a.button href="/console/connect" { "Connect an AI client" } }
    }
}
