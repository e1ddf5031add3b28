//! The `obsidian-tc` binary; everything lives in the library half.

use std::process::ExitCode;

// Faster than the system allocator under many small, short-lived allocations across threads
// (every request's JSON); measured in loadtests/read-bench.sh. Metered counts each tool call's
// allocations against its memory budget (tools.call_memory_bytes).
#[global_allocator]
static ALLOCATOR: otc_kernel::memory::Metered<mimalloc::MiMalloc> = otc_kernel::memory::Metered(mimalloc::MiMalloc);

use clap::Parser;
use obsidian_tc::{Cli, app::ConfigProblems, chain, run};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("obsidian-tc: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(run(cli));
    match result {
        Ok(code) => code,
        Err(e) => match e.downcast_ref::<ConfigProblems>() {
            Some(problems) => {
                for line in &problems.0 {
                    eprintln!("obsidian-tc: configuration: {line}");
                }
                ExitCode::from(2)
            }
            None => {
                eprintln!("obsidian-tc: {}", chain(&e));
                ExitCode::FAILURE
            }
        },
    }
}
