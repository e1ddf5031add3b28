//! `otc-proxy`: the round-robin HTTP proxy of [`otc_loadtests::proxy`] as a program, for load
//! tests over several gateways.
//!
//!   otc-proxy --listen 127.0.0.1:8090 --upstream 127.0.0.1:8091 --upstream 127.0.0.1:8092

use clap::Parser;

#[derive(Parser, Debug)]
struct Args {
    #[arg(long, default_value = "127.0.0.1:8090")]
    listen: std::net::SocketAddr,
    /// A gateway (repeat for each).
    #[arg(long, required = true)]
    upstream: Vec<std::net::SocketAddr>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let proxy = otc_loadtests::proxy::Proxy::start(args.listen, args.upstream).await?;
    eprintln!("otc-proxy: listening on http://{}", proxy.addr);
    tokio::signal::ctrl_c().await?;
    eprintln!("otc-proxy: answered {:?}, failed {}", proxy.answered(), proxy.failed());
    Ok(())
}
