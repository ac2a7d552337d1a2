//! The `memory` command-line tool. See `memory --help`.

mod app;
mod cli;
mod commands;
mod eval;
mod output;

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Parser;

use crate::cli::Cli;

/// mimalloc, not the system allocator: a recall allocates and frees many small buffers
/// across threads (query codes, candidate lists, rows), which glibc's allocator served at
/// about a tenth of a recall's CPU (`docs/benchmarks.md`, the twentieth step).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The default log filter (`MEMORY_LOG` overrides it): warnings, except sqlx's statement
/// logs (a slow statement is a benchmark's business, not a warning to every user).
const DEFAULT_LOG: &str = "warn,sqlx=error";

/// Threads the runtime may start for blocking work (index searches, file I/O, embedding)
/// unless `MEMORY_BLOCKING_THREADS` says otherwise. Tokio's own default is 512: a server under
/// load would start that many, and thread creation failing is what brought processes down.
/// Past the bound, blocking work waits for a thread instead.
const DEFAULT_BLOCKING_THREADS: usize = 32;

fn main() -> ExitCode {
    // A reader that closes the pipe (`memory history s | head -2`) ends the command quietly,
    // as it ends every Unix tool, instead of a panic in the middle of printing.
    sigpipe::reset();
    let cli = Cli::parse();
    let blocking = std::env::var("MEMORY_BLOCKING_THREADS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|n| *n > 0)
        .unwrap_or(DEFAULT_BLOCKING_THREADS);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(blocking)
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: starting the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(run(cli))
}

async fn run(cli: Cli) -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        // Colour codes only on a terminal, never in a log file or a pipe.
        .with_ansi(std::io::stderr().is_terminal())
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("MEMORY_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(DEFAULT_LOG)),
        )
        .init();
    match commands::run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            let line = error.to_string().replace('\n', " ");
            eprintln!("error: {line}");
            ExitCode::FAILURE
        }
    }
}
