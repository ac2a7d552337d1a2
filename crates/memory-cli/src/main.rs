//! The `memory` command-line tool. See `memory --help`.

mod app;
mod cli;
mod commands;
mod eval;
mod output;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::Cli;

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("MEMORY_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
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
