//! A round-robin HTTP proxy on loopback: each request goes to the next upstream in turn, as a
//! Kubernetes Service or an Ingress spreads them over a Deployment's pods.
//!
//! An upstream that refuses the connection (a pod that died) is skipped for a while and the
//! request goes to the next one: nothing was sent, so nothing can have happened twice. A
//! failure after the request was sent is answered 502 and never retried (the call may have
//! run), as a load balancer does for a POST.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::Request;
use axum::http::{Response, StatusCode};

/// How long an upstream that refused a connection is left out.
const EJECT_FOR: Duration = Duration::from_secs(2);
/// The largest body passed either way.
const BODY_LIMIT: usize = 64 << 20;

/// How a request that names its MCP method picks its upstream.
#[derive(Debug, Clone)]
pub enum Turns {
    /// One turn over all requests, as a plain load balancer.
    RoundRobin,
    /// A turn per method: consecutive requests of one method reach different upstreams
    /// whatever came between them.
    PerMethod,
    /// Methods starting with a prefix go to that upstream (by index); others take turns.
    Pinned(Vec<(String, usize)>),
}

/// A running proxy.
pub struct Proxy {
    pub addr: SocketAddr,
    state: Arc<State>,
}

struct State {
    upstreams: Vec<SocketAddr>,
    /// Requests each upstream answered.
    answered: Vec<AtomicUsize>,
    down_until: Vec<Mutex<Option<Instant>>>,
    next: AtomicUsize,
    /// How requests naming an MCP method (`Mcp-Method` header) pick their upstream.
    turns: Turns,
    /// The turn of each MCP method, under [`Turns::PerMethod`].
    method_turns: Mutex<std::collections::HashMap<String, usize>>,
    /// Requests answered 502 (every upstream down, or one failed mid-request).
    failed: AtomicUsize,
    /// Each answered request in turn: the upstream's index and the request's `Mcp-Method`
    /// header (MCP 2026-07-28 requests carry it; empty otherwise).
    routed: Mutex<Vec<(usize, String)>>,
    client: reqwest::Client,
}

impl Proxy {
    /// Listens on `listen` (port 0 for any) and forwards to `upstreams`.
    pub async fn start(listen: SocketAddr, upstreams: Vec<SocketAddr>) -> std::io::Result<Self> {
        Self::start_with(listen, upstreams, Turns::RoundRobin).await
    }

    /// [`Proxy::start`] with MCP 2026-07-28 requests (they name their method in `Mcp-Method`)
    /// routed as `turns` says; other requests take the round-robin turn.
    pub async fn start_with(listen: SocketAddr, upstreams: Vec<SocketAddr>, turns: Turns) -> std::io::Result<Self> {
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(256)
            .timeout(Duration::from_secs(120))
            .build()
            .map_err(std::io::Error::other)?;
        let state = Arc::new(State {
            answered: upstreams.iter().map(|_| AtomicUsize::new(0)).collect(),
            down_until: upstreams.iter().map(|_| Mutex::new(None)).collect(),
            upstreams,
            next: AtomicUsize::new(0),
            turns,
            method_turns: Mutex::default(),
            failed: AtomicUsize::new(0),
            routed: Mutex::new(Vec::new()),
            client,
        });
        let forwarding = state.clone();
        let app = axum::Router::new().fallback(move |request: Request| forward(forwarding.clone(), request));
        let listener = tokio::net::TcpListener::bind(listen).await?;
        let addr = listener.local_addr()?;
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self { addr, state })
    }

    /// Requests each upstream answered, in the order given.
    pub fn answered(&self) -> Vec<usize> {
        self.state.answered.iter().map(|c| c.load(Ordering::SeqCst)).collect()
    }

    /// Which upstream answered each request, in order, with the MCP method it named.
    pub fn routed(&self) -> Vec<(usize, String)> {
        self.state.routed.lock().expect("proxy state").clone()
    }

    /// Requests answered 502.
    pub fn failed(&self) -> usize {
        self.state.failed.load(Ordering::SeqCst)
    }
}

fn bad_gateway(state: &State, why: String) -> Response<Body> {
    state.failed.fetch_add(1, Ordering::SeqCst);
    Response::builder().status(StatusCode::BAD_GATEWAY).body(Body::from(why)).expect("static response")
}

async fn forward(state: Arc<State>, request: Request) -> Response<Body> {
    let (parts, body) = request.into_parts();
    let Ok(body) = axum::body::to_bytes(body, BODY_LIMIT).await else {
        return bad_gateway(&state, "request body unreadable or too large".into());
    };
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str()).to_string();
    let method = parts.headers.get("mcp-method").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    let pinned = match &state.turns {
        Turns::Pinned(pins) => pins.iter().find(|(prefix, _)| method.starts_with(prefix)).map(|(_, to)| *to),
        _ => None,
    };
    let first = match (&state.turns, pinned) {
        (_, Some(to)) => to,
        (Turns::PerMethod, None) if !method.is_empty() => {
            let mut turns = state.method_turns.lock().expect("proxy state");
            let turn = turns.entry(method.clone()).or_default();
            *turn += 1;
            *turn - 1
        }
        _ => state.next.fetch_add(1, Ordering::SeqCst),
    };
    let n = state.upstreams.len();
    for turn in (0..n).map(|i| (first + i) % n) {
        {
            let mut down = state.down_until[turn].lock().expect("proxy state");
            match *down {
                Some(until) if Instant::now() < until => continue,
                Some(_) => *down = None,
                None => {}
            }
        }
        let mut upstream = state
            .client
            .request(parts.method.clone(), format!("http://{}{path}", state.upstreams[turn]))
            .body(body.clone());
        for (k, v) in &parts.headers {
            if k != "host" && k != "content-length" && k != "connection" {
                upstream = upstream.header(k, v);
            }
        }
        let response = match upstream.send().await {
            Ok(response) => response,
            Err(e) if e.is_connect() => {
                *state.down_until[turn].lock().expect("proxy state") = Some(Instant::now() + EJECT_FOR);
                continue;
            }
            Err(e) => return bad_gateway(&state, format!("upstream {} failed: {e}", state.upstreams[turn])),
        };
        let mut builder = Response::builder().status(response.status());
        for (k, v) in response.headers() {
            if k != "content-length" && k != "transfer-encoding" && k != "connection" {
                builder = builder.header(k, v);
            }
        }
        let bytes = match response.bytes().await {
            Ok(bytes) => bytes,
            Err(e) => return bad_gateway(&state, format!("upstream {} failed mid-answer: {e}", state.upstreams[turn])),
        };
        state.answered[turn].fetch_add(1, Ordering::SeqCst);
        state.routed.lock().expect("proxy state").push((turn, method.clone()));
        return builder.body(Body::from(bytes)).expect("copied response");
    }
    bad_gateway(&state, "no upstream is accepting connections".into())
}
