//! Heavy work shared fairly between tenants on one gateway (`[fair_share]`): a tenant's heavy
//! calls past its places wait behind its own, another tenant's run meanwhile, the gateway's
//! places go to waiting tenants in turn, and a wait past `fair_share.max_wait_ms` answers
//! throttled.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::harness::{Tenant, TestApp};
use crate::mcp::{call, error_of};

/// When each probe call ran: (tenant, principal, start, end).
static RUNS: Mutex<Vec<(uuid::Uuid, uuid::Uuid, Instant, Instant)>> = Mutex::new(Vec::new());

/// A scan that takes `ms` and records when it ran.
struct SlowScan;

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct SlowInput {
    ms: u64,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct SlowOutput {
    ok: bool,
}

impl otc_kernel::Tool for SlowScan {
    type Input = SlowInput;
    type Output = SlowOutput;
    const SPEC: otc_catalog::ToolSpec = otc_catalog::ToolSpec {
        scopes: &["read:notes"],
        heavy: Some(otc_catalog::Heavy::Scan),
        response_format: otc_catalog::ResponseFormat::Fixed { why: "test probe" },
        ..otc_catalog::ToolSpec::base("slow_scan", "Slow scan", "Scans slowly.", otc_catalog::Domain::Admin)
    };

    async fn call(ctx: &otc_kernel::CallContext<'_>, input: SlowInput) -> Result<SlowOutput, otc_errors::ToolError> {
        let start = Instant::now();
        tokio::time::sleep(Duration::from_millis(input.ms)).await;
        RUNS.lock().unwrap().push((ctx.caller.tenant_id, ctx.caller.principal_id, start, Instant::now()));
        Ok(SlowOutput { ok: true })
    }
}

/// Tenants acme and bolt, each with a token of every scope.
async fn two_tenants(app: &TestApp) -> (Tenant, String, Tenant, String) {
    let a = Tenant::create(&app.store, "acme").await;
    let b = Tenant::create(&app.store, "bolt").await;
    let (token_a, _) = a.token(&app.store, "*", false, None).await;
    let (token_b, _) = b.token(&app.store, "*", false, None).await;
    (a, token_a, b, token_b)
}

/// The most runs of `tenant` that overlapped at one moment.
fn most_at_once(tenant: uuid::Uuid) -> usize {
    let runs: Vec<_> = RUNS.lock().unwrap().iter().filter(|r| r.0 == tenant).map(|r| (r.2, r.3)).collect();
    runs.iter().map(|(s, _)| runs.iter().filter(|(s2, e2)| s2 <= s && s < e2).count()).max().unwrap_or(0)
}

/// How many of `tenant`'s calls started after `other`'s first did.
fn started_after(tenant: uuid::Uuid, other: uuid::Uuid) -> usize {
    let runs = RUNS.lock().unwrap().clone();
    let first = runs.iter().find(|r| r.0 == other).unwrap().2;
    runs.iter().filter(|r| r.0 == tenant && r.2 > first).count()
}

#[tokio::test]
async fn a_tenants_heavy_calls_queue_behind_its_own_while_another_tenants_run() {
    let app = TestApp::spawn_with_tools(
        |c| {
            c.fair_share.per_tenant = 2;
            c.fair_share.per_principal = 2;
            c.fair_share.per_gateway = 16;
        },
        vec![otc_kernel::entry::<SlowScan>()],
    )
    .await;
    let (a, token_a, b, token_b) = two_tenants(&app).await;

    // Six of A's at once, two places: three rounds. B's one, sent while A's queue is full.
    let a_calls =
        futures::future::join_all((0..6).map(|_| call(&app, "/mcp", &token_a, "slow_scan", json!({"ms": 300}))));
    let b_call = async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        call(&app, "/mcp", &token_b, "slow_scan", json!({"ms": 300})).await
    };
    let (a_results, b_result) = tokio::join!(a_calls, b_call);
    assert!(a_results.iter().all(|r| r["isError"] == false), "{a_results:?}");
    assert_eq!(b_result["isError"], false, "{b_result}");

    assert_eq!(most_at_once(a.id), 2, "A never ran more than its places");
    let a_after_b = started_after(a.id, b.id);
    assert!(a_after_b >= 2, "B ran before A's queue drained ({a_after_b} of A's started after it)");
    app.stop().await;
}

#[tokio::test]
async fn a_wait_past_the_limit_answers_throttled_per_tenant_and_per_principal() {
    let app = TestApp::spawn_with_tools(
        |c| {
            c.fair_share.per_tenant = 2;
            c.fair_share.per_principal = 1;
            c.fair_share.max_wait_ms = 200;
            c.fair_share.per_gateway = 16;
        },
        vec![otc_kernel::entry::<SlowScan>()],
    )
    .await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (alice, _) = tenant.token(&app.store, "*", false, None).await;
    let bob = tenant.token_as(&app.store, "bob", "*").await;
    let carol = tenant.token_as(&app.store, "carol", "*").await;

    // Alice's second call waits for her one place, past the limit.
    let (first, second) = tokio::join!(call(&app, "/mcp", &alice, "slow_scan", json!({"ms": 1000})), async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        call(&app, "/mcp", &alice, "slow_scan", json!({"ms": 10})).await
    });
    assert_eq!(first["isError"], false, "{first}");
    let err = error_of(&second);
    assert_eq!(err["code"], "throttled", "{err}");
    assert_eq!(err["details"]["limit"], "fair_share.per_principal");
    assert_eq!(err["details"]["class"], "scan");
    assert!(err["details"]["retry_after"].as_f64().unwrap() >= 1.0);

    // Alice and Bob hold the tenant's two places; Carol's call waits past the limit.
    let (a, b, c) = tokio::join!(
        call(&app, "/mcp", &alice, "slow_scan", json!({"ms": 1000})),
        call(&app, "/mcp", &bob, "slow_scan", json!({"ms": 1000})),
        async {
            tokio::time::sleep(Duration::from_millis(50)).await;
            call(&app, "/mcp", &carol, "slow_scan", json!({"ms": 10})).await
        }
    );
    assert_eq!((a["isError"].clone(), b["isError"].clone()), (json!(false), json!(false)));
    assert_eq!(error_of(&c)["details"]["limit"], "fair_share.per_tenant", "{c}");
    // Once they are done, the places are free again.
    assert_eq!(call(&app, "/mcp", &carol, "slow_scan", json!({"ms": 10})).await["isError"], false);
    app.stop().await;
}

/// One gateway place for heavy work: A runs one call and queues three, then B queues one. B's
/// runs after at most one more of A's, before A's last two (tenants take the place in turn);
/// a wait past the limit names fair_share.per_gateway.
#[tokio::test]
async fn the_gateways_heavy_places_go_to_waiting_tenants_in_turn() {
    let app = TestApp::spawn_with_tools(
        |c| {
            c.fair_share.per_gateway = 1;
            c.fair_share.max_wait_ms = 5_000;
        },
        vec![otc_kernel::entry::<SlowScan>()],
    )
    .await;
    let (a, token_a, b, token_b) = two_tenants(&app).await;
    let a_calls = futures::future::join_all((0..4).map(|i| {
        let token = token_a.clone();
        let app = &app;
        async move {
            tokio::time::sleep(Duration::from_millis(20 * i)).await;
            call(app, "/mcp", &token, "slow_scan", json!({"ms": 300})).await
        }
    }));
    let b_call = async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        call(&app, "/mcp", &token_b, "slow_scan", json!({"ms": 300})).await
    };
    let (a_results, b_result) = tokio::join!(a_calls, b_call);
    assert!(a_results.iter().all(|r| r["isError"] == false), "{a_results:?}");
    assert_eq!(b_result["isError"], false, "{b_result}");
    assert_eq!(most_at_once(a.id), 1, "one place in all");
    let a_after_b = started_after(a.id, b.id);
    assert_eq!(a_after_b, 2, "B's call waited for one more of A's, not for all of A's queue");

    // Waiting past the limit for the gateway's place: throttled, naming it.
    let (held, waited) = tokio::join!(call(&app, "/mcp", &token_a, "slow_scan", json!({"ms": 6_000})), async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        call(&app, "/mcp", &token_b, "slow_scan", json!({"ms": 10})).await
    });
    assert_eq!(held["isError"], false, "{held}");
    let err = error_of(&waited);
    assert_eq!(
        (err["code"].as_str(), err["details"]["limit"].as_str()),
        (Some("throttled"), Some("fair_share.per_gateway")),
        "{err}"
    );
    app.stop().await;
}
