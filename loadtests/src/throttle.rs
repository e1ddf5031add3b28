//! `otc-throttle`: how many rate-limit decisions one process gets from Redis a second, with
//! their latency: `--concurrency` tasks each spending from the budget of `--principals`
//! principals in turn (the limiter's real script and key shape) for `--duration` seconds.
//!
//!   eval "$(scripts/services env)"
//!   otc-throttle --concurrency 16 --duration 10 --principals 1000 --per-minute 600 --burst 100

use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use otc_kv::Kv;

#[derive(Parser)]
struct Args {
    /// Redis URL (default: OTC__REDIS__URL, as `scripts/services env` sets it).
    #[arg(long, env = "OTC__REDIS__URL")]
    redis: String,
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    #[arg(long, default_value_t = 10)]
    duration: u64,
    /// How many distinct budgets (principals) the decisions spread over.
    #[arg(long, default_value_t = 1000)]
    principals: usize,
    #[arg(long, default_value_t = 600)]
    per_minute: u32,
    #[arg(long, default_value_t = 100)]
    burst: u32,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let prefix = format!("throttle-bench:{}:", std::process::id());
    let kv = Arc::new(Kv::new(&args.redis, &prefix, Duration::from_secs(5))?);
    kv.ping().await?;
    let until = Instant::now() + Duration::from_secs(args.duration);
    let mut tasks = Vec::new();
    for task in 0..args.concurrency {
        let kv = kv.clone();
        let (principals, per_minute, burst) = (args.principals, args.per_minute, args.burst);
        tasks.push(tokio::spawn(async move {
            let (mut latencies, mut allowed, mut refused) = (Vec::new(), 0u64, 0u64);
            let mut i = task;
            while Instant::now() < until {
                let key = format!("rl:bench:{}:read", i % principals);
                let started = Instant::now();
                let decision = kv.rate_check(&key, per_minute, burst).await?;
                latencies.push(started.elapsed().as_micros() as u64);
                if decision.allowed {
                    allowed += 1
                } else {
                    refused += 1
                }
                i += args_stride(task);
            }
            anyhow::Ok((latencies, allowed, refused))
        }));
    }
    let (mut latencies, mut allowed, mut refused) = (Vec::new(), 0, 0);
    for task in tasks {
        let (l, a, r) = task.await??;
        latencies.extend(l);
        allowed += a;
        refused += r;
    }
    latencies.sort_unstable();
    let at = |p: f64| latencies[((latencies.len() - 1) as f64 * p / 100.0).round() as usize] as f64 / 1000.0;
    println!(
        "decisions: {} in {} s = {:.0}/s ({allowed} allowed, {refused} refused); latency ms p50 {:.3} p90 {:.3} p99 {:.3} max {:.3}",
        latencies.len(),
        args.duration,
        latencies.len() as f64 / args.duration as f64,
        at(50.0),
        at(90.0),
        at(99.0),
        at(100.0)
    );
    Ok(())
}

/// Each task walks the principals with its own stride, so tasks rarely share a key at once.
fn args_stride(task: usize) -> usize {
    2 * task + 1
}
