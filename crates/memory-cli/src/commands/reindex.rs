//! `memory reindex`: rebuilds the deployment's text indexes from the records (the sessions'
//! message index, then every profile's raw messages and memories), or one profile's. A run
//! that stops part-way leaves a progress file in the data dir; the next run resumes after
//! the last profile it finished (`--restart` starts over).

use std::path::Path;

use memory_compose::Deployment;
use memory_core::MemoryError;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::CliError;
use crate::output;

/// Where an unfinished run records what it has rebuilt.
const PROGRESS_FILE: &str = "reindex-progress.json";

/// What an unfinished run had rebuilt.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Progress {
    /// The sessions' message index is done.
    sessions: bool,
    /// Profiles done, in the order they were rebuilt.
    profiles: Vec<String>,
}

impl Progress {
    fn load(path: &Path) -> Result<Option<Self>, CliError> {
        match std::fs::read_to_string(path) {
            Ok(text) => serde_json::from_str(&text).map(Some).map_err(|e| {
                CliError::Input(format!(
                    "{} is not a reindex progress file ({e}); run with --restart",
                    path.display()
                ))
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(CliError::io(format!("reading {}", path.display()), e)),
        }
    }

    fn save(&self, path: &Path) -> Result<(), CliError> {
        let text = serde_json::to_string(self).map_err(|e| CliError::Input(e.to_string()))?;
        std::fs::write(path, text)
            .map_err(|e| CliError::io(format!("writing {}", path.display()), e))
    }
}

/// Rebuilds every text index of the deployment in `data_dir`, or only `profile`'s.
pub async fn run(
    data_dir: &Path,
    profile: Option<String>,
    restart: bool,
    json: bool,
) -> Result<(), CliError> {
    let deployment = Deployment::open(data_dir)?;
    let result = rebuild(&deployment, data_dir, profile, restart, json).await;
    deployment.close().await;
    result
}

async fn rebuild(
    deployment: &Deployment,
    data_dir: &Path,
    profile: Option<String>,
    restart: bool,
    json: bool,
) -> Result<(), CliError> {
    let (memory, _) = deployment.memory_service().await?;
    if let Some(profile) = profile {
        memory_core::validate_profile_name(&profile)?;
        if !memory.list_profiles().await?.contains(&profile) {
            return Err(MemoryError::not_found("profile", profile).into());
        }
        let report = memory.reindex_text(&profile).await?;
        if json {
            return output::json(&json!({"profile": profile, "report": report}));
        }
        println!(
            "{}",
            profile_line(&profile, report.documents, report.rebuilt)
        );
        return Ok(());
    }
    let path = data_dir.join(PROGRESS_FILE);
    let mut progress = match (restart, Progress::load(&path)?) {
        (false, Some(progress)) => {
            eprintln!(
                "resuming an unfinished reindex: {} profile(s) already rebuilt (--restart starts over)",
                progress.profiles.len()
            );
            progress
        }
        _ => Progress::default(),
    };
    let mut sessions = None;
    if !progress.sessions {
        let manager = deployment.session_manager().await?;
        sessions = match manager.reindex().await {
            Ok(report) => Some(report),
            // No message index to rebuild.
            Err(MemoryError::NotSupported { .. }) => None,
            Err(e) => return Err(e.into()),
        };
        progress.sessions = true;
        progress.save(&path)?;
        if !json {
            match &sessions {
                Some(r) if r.rebuilt => {
                    eprintln!("sessions: {} message(s) reindexed", r.documents);
                }
                Some(_) => {
                    eprintln!("sessions: the store writes its index itself: nothing to rebuild")
                }
                None => eprintln!("sessions: no message index"),
            }
        }
    }
    let mut profiles = memory.list_profiles().await?;
    profiles.sort();
    let bar = output::progress_bar(json, "profiles");
    bar.set_length(profiles.len() as u64);
    let mut documents = 0;
    let mut rebuilt = 0;
    for name in &profiles {
        if progress.profiles.contains(name) {
            bar.inc(1);
            continue;
        }
        let report = memory.reindex_text(name).await?;
        documents += report.documents;
        rebuilt += usize::from(report.rebuilt);
        progress.profiles.push(name.clone());
        progress.save(&path)?;
        bar.inc(1);
        if !json {
            bar.suspend(|| eprintln!("{}", profile_line(name, report.documents, report.rebuilt)));
        }
    }
    bar.finish_and_clear();
    std::fs::remove_file(&path)
        .map_err(|e| CliError::io(format!("removing {}", path.display()), e))?;
    if json {
        return output::json(&json!({
            "sessions": sessions,
            "profiles": profiles.len(),
            "profiles_rebuilt": rebuilt,
            "profile_documents": documents,
        }));
    }
    println!(
        "reindexed: {} profile(s) ({rebuilt} rebuilt, {documents} document(s))",
        profiles.len()
    );
    Ok(())
}

fn profile_line(profile: &str, documents: u64, rebuilt: bool) -> String {
    if rebuilt {
        format!("profile {profile}: {documents} document(s) reindexed")
    } else {
        format!("profile {profile}: the store writes its index itself: nothing to rebuild")
    }
}
