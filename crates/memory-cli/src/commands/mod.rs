//! Command handlers.

mod backup;
mod bench;
mod bench_consolidation;
mod bench_consolidation_locomo;
mod bench_embedders;
mod bench_profiles;
mod bench_queries;
mod bench_serve;
#[cfg(feature = "sqlite")]
mod bench_vectors;
mod context;
mod demo;
mod eval;
mod message;
mod models;
mod paraphrase_corpus;
pub(crate) mod profile;
mod read;
mod reindex;
mod remote;
mod serve;
mod session;
mod transfer;

use std::io::Read;

use memory_core::MemoryError;

use crate::app::{self, App};
use crate::cli::{Cli, Command};

/// What can go wrong in a command.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// From the memory layer.
    #[error(transparent)]
    Memory(#[from] MemoryError),
    /// Reading or writing a file or stream.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    /// Bad input.
    #[error("{0}")]
    Input(String),
}

impl From<memory_config::ConfigError> for CliError {
    fn from(error: memory_config::ConfigError) -> Self {
        CliError::Input(error.to_string())
    }
}

impl From<serde_json::Error> for CliError {
    fn from(error: serde_json::Error) -> Self {
        CliError::Input(format!("JSON error: {error}"))
    }
}

impl CliError {
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        CliError::Io {
            context: context.into(),
            source,
        }
    }
}

/// Reads an argument, or standard input when it is absent or `-`.
pub fn argument_or_stdin(arg: Option<String>) -> Result<String, CliError> {
    match arg {
        Some(text) if text != "-" => Ok(text),
        _ => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|e| CliError::io("reading standard input", e))?;
            Ok(text)
        }
    }
}

/// `memory models fetch`: a local model's files, fetched now when missing. `auto` fetches
/// what the default embedder uses: the int8 one, else (with one line saying why) the float
/// one, as a deployment does on first use; a catalogue name fetches that model.
fn fetch_models(embedder: &str, reranker: Option<&str>) -> Result<(), CliError> {
    let report = |what: &str, dir: &std::path::Path, fetched: Vec<String>| {
        if fetched.is_empty() {
            println!("{what} already in {}", dir.display());
        } else {
            println!(
                "fetched {} into {} (checksums verified)",
                fetched.join(", "),
                dir.display()
            );
        }
    };
    match embedder {
        "auto" | "local" | "local-int8" => {
            let (dir, fetched, what) = fetch_default_embedder(embedder)?;
            report(what, &dir, fetched);
        }
        name => {
            let (dir, fetched) = memory_compose::fetch_model(name)?;
            report(&format!("{name} is"), &dir, fetched);
        }
    }
    if let Some(name) = reranker {
        let (dir, fetched) = memory_compose::fetch_model(name)?;
        report(&format!("{name} is"), &dir, fetched);
    }
    Ok(())
}

/// The default embedder's files (`auto`, `local` or `local-int8`): where they are, what was
/// fetched, and what they are.
fn fetch_default_embedder(
    embedder: &str,
) -> Result<(std::path::PathBuf, Vec<String>, &'static str), CliError> {
    let int8 = match embedder {
        "local" => None,
        "local-int8" => Some(memory_compose::fetch_int8_model()?),
        _ => match memory_compose::fetch_int8_model() {
            Ok(fetched) => Some(fetched),
            // The hub is out of reach: the float model cannot be fetched either.
            Err(unreachable) if unreachable.hub_unreachable() => return Err(unreachable.into()),
            Err(why) => {
                eprintln!("{why}; fetching the float model (`local`) instead");
                None
            }
        },
    };
    Ok(match int8 {
        Some((dir, fetched)) => (
            dir,
            fetched,
            "the int8 embedding model and ONNX Runtime are",
        ),
        None => {
            let (dir, fetched) = memory_compose::fetch_local_model()?;
            (dir, fetched, "the local embedding model is")
        }
    })
}

impl From<memory_compose::Int8Fetch> for CliError {
    fn from(why: memory_compose::Int8Fetch) -> Self {
        match why {
            memory_compose::Int8Fetch::Failed { error, .. } => error.into(),
            unsupported => CliError::Input(unsupported.to_string()),
        }
    }
}

/// Runs one command.
pub async fn run(cli: Cli) -> Result<(), CliError> {
    if let Command::Demo = cli.command {
        return demo::run(cli.data_dir).await;
    }
    if let Command::Mcp { profile, session } = cli.command {
        return serve::mcp(&app::data_dir(cli.data_dir), &profile, session).await;
    }
    if let Command::Models(crate::cli::ModelsCommand::Fetch { embedder, reranker }) = &cli.command {
        return fetch_models(embedder, reranker.as_deref());
    }
    if let Command::Models(crate::cli::ModelsCommand::List { format }) = &cli.command {
        return models::list(format.json);
    }
    if let Command::Keys(crate::cli::KeysCommand::New { tenant, label }) = &cli.command {
        return serve::new_key(tenant, label.as_deref());
    }
    if let Command::Reindex {
        profile,
        restart,
        format,
    } = cli.command
    {
        return reindex::run(&app::data_dir(cli.data_dir), profile, restart, format.json).await;
    }
    if let Command::Backup(command) = cli.command {
        return backup::run(&app::data_dir(cli.data_dir), command).await;
    }
    if let Command::Worker {
        poll_ms,
        once,
        keys,
    } = cli.command
    {
        return serve::worker(&app::data_dir(cli.data_dir), keys.as_deref(), poll_ms, once).await;
    }
    if let Command::Serve {
        bind,
        max_concurrent_requests,
        request_timeout_secs,
        no_jobs,
        mcp_profile,
        keys,
        rate_per_key,
    } = cli.command
    {
        let limits = memory_server::Limits {
            max_concurrent_requests,
            request_timeout: std::time::Duration::from_secs(request_timeout_secs),
        };
        let per_second = std::num::NonZeroU32::new(rate_per_key)
            .ok_or_else(|| CliError::Input("--rate-per-key must be at least 1".into()))?;
        let options = serve::ServeOptions {
            bind,
            limits,
            run_jobs: !no_jobs,
            mcp_profile: &mcp_profile,
            keys: keys.as_deref(),
            rate: memory_server::RateLimit {
                per_second,
                burst: per_second.saturating_mul(std::num::NonZeroU32::MIN.saturating_add(1)),
            },
        };
        return serve::run(&app::data_dir(cli.data_dir), options).await;
    }
    if let Command::Bench(crate::cli::BenchCommand::LongTerm {
        memories,
        raw,
        queries,
        postgres,
        graph_candidates,
        model_vectors,
        model_vectors_file,
        text,
        embedder,
        no_filtered,
        profile_page_size,
        format,
    }) = cli.command
    {
        return bench::long_term(
            bench::LongTermBench {
                memories,
                raw,
                queries,
                postgres,
                graph_candidates,
                model_vectors,
                model_vectors_file,
                tantivy_text: text == "tantivy",
                model_embedder: match embedder.as_str() {
                    "hashing" => None,
                    name => Some(
                        memory_config::EmbedderChoice::try_from(name.to_owned())
                            .map_err(CliError::Input)?,
                    ),
                },
                filtered: !no_filtered,
                profile_page_size,
            },
            format.json,
        )
        .await;
    }
    if let Command::Bench(crate::cli::BenchCommand::Serve {
        sessions,
        memories,
        seconds,
        clients,
        recall_rates,
        postgres,
        no_group_commit,
        exact_vectors,
        text,
        session_text,
        profile_text,
        tantivy_unshared,
    }) = cli.command
    {
        return bench_serve::run(bench_serve::ServeBench {
            sessions,
            memories,
            seconds,
            clients,
            recall_rates,
            postgres,
            group_commit: !no_group_commit,
            exact_vectors,
            text,
            session_text,
            profile_text,
            tantivy_unshared,
        })
        .await;
    }
    if let Command::Bench(crate::cli::BenchCommand::Profiles {
        profiles,
        memories,
        clients,
        open_profiles,
        postgres,
    }) = cli.command
    {
        return bench_profiles::run(bench_profiles::ProfilesBench {
            profiles,
            memories,
            clients,
            open_profiles,
            postgres,
        })
        .await;
    }
    if let Command::Bench(crate::cli::BenchCommand::Consolidation {
        memories,
        grouped,
        queries,
        seed,
        embedder,
        locomo,
        conversations,
        format,
    }) = cli.command
    {
        let model_embedder = match embedder.as_str() {
            "hashing" => None,
            name => Some(
                memory_config::EmbedderChoice::try_from(name.to_owned())
                    .map_err(CliError::Input)?,
            ),
        };
        if let Some(data) = locomo {
            let (embedder, embedder_name) =
                bench_consolidation::bench_embedder(model_embedder.as_ref())?;
            return bench_consolidation_locomo::run(
                bench_consolidation_locomo::LocomoConsolidationBench {
                    data,
                    conversations,
                    embedder_name,
                    embedder,
                },
                format.json,
            )
            .await;
        }
        return bench_consolidation::run(
            bench_consolidation::ConsolidationBench {
                memories,
                grouped,
                queries,
                seed,
                model_embedder,
            },
            format.json,
        )
        .await;
    }
    if let Command::Bench(crate::cli::BenchCommand::Embedders {
        locomo,
        texts,
        batch,
        format,
    }) = cli.command
    {
        return bench_embedders::run(
            bench_embedders::EmbeddersBench {
                locomo,
                texts,
                batch,
            },
            format.json,
        )
        .await;
    }
    if let Command::Eval(command) = cli.command {
        return eval::run(&app::data_dir(cli.data_dir), command).await;
    }
    if let Command::Profile(command) = cli.command {
        return profile::run(&app::data_dir(cli.data_dir), command).await;
    }
    if let Command::Config(command) = &cli.command {
        return context::check_config(command, &app::data_dir(cli.data_dir.clone()));
    }
    let app = App::open(&app::data_dir(cli.data_dir)).await?;
    let result = match cli.command {
        Command::Session(command) => session::run(&app, command).await,
        Command::Message(command) => message::run(&app, command).await,
        Command::History {
            session,
            leaf,
            raw,
            format,
        } => read::history(&app, &session, leaf, raw, format).await,
        Command::Compact {
            session,
            leaf,
            format,
        } => read::compact(&app, &session, leaf, format).await,
        Command::Compactions { session, format } => read::compactions(&app, &session, format).await,
        Command::Branches {
            session,
            message,
            format,
        } => read::branches(&app, &session, &message, format).await,
        Command::Search {
            query,
            session,
            phrase,
            limit,
            format,
        } => read::search(&app, &query, session, phrase, limit, format).await,
        Command::Import { file, format } => transfer::import(&app, &file, format).await,
        Command::Export { session, output } => transfer::export(&app, &session, output).await,
        Command::Context(command) => context::run(&app, command).await,
        Command::Prompt { session, refresh } => context::prompt(&app, &session, refresh).await,
        Command::Tools {
            call,
            session,
            format,
        } => context::tools(&app, call, session, &format).await,
        Command::Demo
        | Command::Config(_)
        | Command::Profile(_)
        | Command::Eval(_)
        | Command::Serve { .. }
        | Command::Worker { .. }
        | Command::Mcp { .. }
        | Command::Keys(_)
        | Command::Models(_)
        | Command::Backup(_)
        | Command::Reindex { .. }
        | Command::Bench(_) => Ok(()),
    };
    app.close().await;
    result
}
