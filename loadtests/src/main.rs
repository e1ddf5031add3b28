//! `otc-load`: a closed-loop HTTP load generator for obsidian-tc on this machine.
//!
//! N workers each send one request at a time for a fixed duration (or request count) and
//! record latencies; the report gives calls/s and latency percentiles. Targets loopback only.
//!
//!   cargo run --release -p otc-loadtests -- --url http://127.0.0.1:8080/v1/whoami \
//!       --token "$TOKEN" --concurrency 16 --duration 10
//!
//! A bodies file may give each body its own bearer token (`TOKEN<TAB>{json}` per line), so
//! one run can speak for many tenants. With `--refusals-ok` a refusal (a tool error, a
//! JSON-RPC error, an HTTP 4xx) is counted by its code rather than as a failure: an abusive
//! mix is expected to be refused; only 5xx answers and transport errors fail the run. The last
//! line is a `summary` JSON object for scripts.
//!
//! MCP tools/call (see loadtests/README.md for the full command):
//!   otc-load --url http://127.0.0.1:8080/mcp --token "$TOKEN" --header "Accept: application/json, text/event-stream" \
//!       --json '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"find_capability","arguments":{"query":"health"}}}'

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Parser;

#[derive(Parser, Debug)]
struct Args {
    /// Target URL (loopback only).
    #[arg(long)]
    url: String,
    /// Bearer token.
    #[arg(long, env = "OTC_LOAD_TOKEN")]
    token: Option<String>,
    /// Requests in flight at once.
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    /// Seconds to run (after the warm-up).
    #[arg(long, default_value_t = 10)]
    duration: u64,
    /// Stop after this many requests in total, whichever comes first.
    #[arg(long, default_value_t = 5_000_000)]
    max_requests: u64,
    /// Seconds of warm-up whose requests are not counted.
    #[arg(long, default_value_t = 1)]
    warmup: u64,
    /// POST this JSON body instead of a GET.
    #[arg(long, conflicts_with = "bodies")]
    json: Option<String>,
    /// POST the JSON bodies in this file, one per line, each worker going through them in
    /// turn from its own starting point (many different requests instead of one).
    #[arg(long)]
    bodies: Option<std::path::PathBuf>,
    /// Extra request header, "Name: value" (repeatable).
    #[arg(long = "header")]
    headers: Vec<String>,
    /// Count refusals (tool errors, JSON-RPC errors, HTTP 4xx) by code instead of as failures.
    #[arg(long)]
    refusals_ok: bool,
}

/// One request to send: its body and, when the bodies file gives one, its own token.
struct Request {
    token: Option<String>,
    body: String,
}

#[derive(Default)]
struct Tally {
    latencies_us: Vec<u64>,
    errors: u64,
    /// 5xx answers (among the errors).
    server_errors: u64,
    /// Refusals by code, with --refusals-ok.
    refused: std::collections::BTreeMap<String, u64>,
    /// What the first failed request answered (warm-up included), for the report.
    first_failure: Option<String>,
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank] as f64 / 1000.0
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let url = url::Url::parse(&args.url).context("--url")?;
    match url.host() {
        Some(url::Host::Ipv4(ip)) if ip.is_loopback() => {}
        Some(url::Host::Ipv6(ip)) if ip.is_loopback() => {}
        Some(url::Host::Domain("localhost")) => {}
        _ => bail!("--url must point at this machine (127.0.0.0/8, [::1] or localhost)"),
    }
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(args.concurrency)
        .tcp_nodelay(true)
        .timeout(Duration::from_secs(30))
        .build()?;
    let start = Instant::now();
    let measure_from = start + Duration::from_secs(args.warmup);
    let stop_at = measure_from + Duration::from_secs(args.duration);
    let per_worker = args.max_requests / args.concurrency as u64 + 1;
    let mut headers = reqwest::header::HeaderMap::new();
    for header in &args.headers {
        let (name, value) = header.split_once(':').context("--header must be \"Name: value\"")?;
        headers.insert(
            reqwest::header::HeaderName::from_bytes(name.trim().as_bytes()).context("--header name")?,
            reqwest::header::HeaderValue::from_str(value.trim()).context("--header value")?,
        );
    }

    let bodies: Vec<Request> = match (&args.json, &args.bodies) {
        (Some(json), _) => vec![Request { token: None, body: json.clone() }],
        (None, Some(file)) => {
            let text = std::fs::read_to_string(file).with_context(|| format!("--bodies {}", file.display()))?;
            let lines: Vec<Request> = text
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(|line| match line.split_once('\t') {
                    Some((token, body)) if !token.starts_with('{') => {
                        Request { token: Some(token.to_string()), body: body.to_string() }
                    }
                    _ => Request { token: None, body: line.to_string() },
                })
                .collect();
            anyhow::ensure!(!lines.is_empty(), "--bodies {}: no bodies", file.display());
            lines
        }
        (None, None) => Vec::new(),
    };
    let bodies = std::sync::Arc::new(bodies);

    let mut workers = Vec::new();
    for worker in 0..args.concurrency {
        let client = client.clone();
        let (url, token, bodies, headers) = (args.url.clone(), args.token.clone(), bodies.clone(), headers.clone());
        workers.push(tokio::spawn(async move {
            let mut tally = Tally::default();
            // Workers start spread over the bodies, so they do not ask for the same thing at once.
            let mut next = worker * bodies.len() / args.concurrency;
            for _ in 0..per_worker {
                let now = Instant::now();
                if now >= stop_at {
                    break;
                }
                let (mut request, own_token) = if bodies.is_empty() {
                    (client.get(&url), None)
                } else {
                    next = (next + 1) % bodies.len();
                    let Request { token, body } = &bodies[next];
                    (client.post(&url).header("content-type", "application/json").body(body.clone()), token.as_ref())
                };
                if let Some(token) = own_token.or(token.as_ref()) {
                    request = request.bearer_auth(token);
                }
                request = request.headers(headers.clone());
                let began = Instant::now();
                let mut server_error = false;
                let mut refusal = None;
                let failure = match request.send().await {
                    Ok(response) => {
                        let status = response.status();
                        server_error = status.is_server_error();
                        match response.bytes().await {
                            Ok(body) if status.is_success() && !failed_rpc(&body) => None,
                            Ok(body) => {
                                if args.refusals_ok && !server_error {
                                    refusal = Some(error_code(&body).unwrap_or_else(|| status.as_u16().to_string()));
                                }
                                Some(format!("{status}: {}", String::from_utf8_lossy(&body[..body.len().min(400)])))
                            }
                            Err(e) => Some(format!("{status}: reading the body: {e}")),
                        }
                    }
                    Err(e) => Some(format!("request: {e}")),
                };
                let ok = failure.is_none();
                if tally.first_failure.is_none() && refusal.is_none() {
                    tally.first_failure = failure;
                }
                let took = began.elapsed();
                if began >= measure_from {
                    if ok {
                        tally.latencies_us.push(took.as_micros() as u64);
                    } else if let Some(code) = refusal {
                        *tally.refused.entry(code).or_default() += 1;
                    } else {
                        tally.errors += 1;
                        tally.server_errors += u64::from(server_error);
                    }
                }
            }
            tally
        }));
    }
    let mut all = Tally::default();
    for worker in workers {
        let tally = worker.await?;
        all.latencies_us.extend(tally.latencies_us);
        all.errors += tally.errors;
        all.server_errors += tally.server_errors;
        for (code, n) in tally.refused {
            *all.refused.entry(code).or_default() += n;
        }
        if all.first_failure.is_none() {
            all.first_failure = tally.first_failure;
        }
    }
    let measured = Instant::now().min(stop_at).saturating_duration_since(measure_from).as_secs_f64();
    all.latencies_us.sort_unstable();
    let n = all.latencies_us.len();
    println!("target       {}", args.url);
    println!("concurrency  {}", args.concurrency);
    println!("measured     {measured:.1} s (after {} s warm-up)", args.warmup);
    println!("requests     {n} ok, {} failed", all.errors);
    println!("throughput   {:.0} calls/s", n as f64 / measured.max(f64::EPSILON));
    println!(
        "latency ms   p50 {:.3}  p90 {:.3}  p95 {:.3}  p99 {:.3}  max {:.3}",
        percentile(&all.latencies_us, 50.0),
        percentile(&all.latencies_us, 90.0),
        percentile(&all.latencies_us, 95.0),
        percentile(&all.latencies_us, 99.0),
        percentile(&all.latencies_us, 100.0)
    );
    if !all.refused.is_empty() {
        println!("refused      {:?}", all.refused);
    }
    if let Some(first) = &all.first_failure {
        println!("first failure {first}");
    }
    let summary = serde_json::json!({
        "ok": n,
        "failed": all.errors,
        "server_errors": all.server_errors,
        "refused": all.refused,
        "seconds": measured,
        "p50_ms": percentile(&all.latencies_us, 50.0),
        "p99_ms": percentile(&all.latencies_us, 99.0),
        "max_ms": percentile(&all.latencies_us, 100.0),
    });
    println!("summary {summary}");
    if all.errors > 0 {
        bail!("{} requests failed", all.errors);
    }
    Ok(())
}

/// A JSON-RPC answer that is an error, or a tool result flagged isError: counted as a failure
/// (a benchmark of refusals measures nothing). Spaces are not looked for: serde_json writes
/// none.
/// The catalogue code a refusal names (`"code":"throttled"`), if any.
fn error_code(body: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(body);
    let at = text.find("\"code\":\"")? + 8;
    let end = text[at..].find('"')?;
    Some(text[at..at + end].to_string())
}

fn failed_rpc(body: &[u8]) -> bool {
    let has = |needle: &[u8]| body.windows(needle.len()).any(|w| w == needle);
    has(b"\"isError\":true") || body.starts_with(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"error\"")
}
