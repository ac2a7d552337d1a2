//! `memory backup create | list | restore`: the embedded databases to and from the
//! deployment's blob store (see `memory_compose::backup`).

use std::path::Path;

use memory_compose::Deployment;
use memory_compose::backup::BackupManifest;

use super::CliError;
use crate::cli::BackupCommand;
use crate::output;

fn describe(backup: &BackupManifest) -> String {
    let bytes: u64 = backup.files.iter().map(|f| f.size).sum();
    format!(
        "{}  {} file(s), {} bytes",
        backup.id,
        backup.files.len(),
        bytes
    )
}

pub async fn run(data_dir: &Path, command: BackupCommand) -> Result<(), CliError> {
    let deployment = Deployment::open(data_dir)?;
    let result = match command {
        BackupCommand::Create { keep, format } => {
            let backup = deployment.backup(keep).await?;
            if format.json {
                output::json(&backup)
            } else {
                println!("backed up {}", describe(&backup));
                Ok(())
            }
        }
        BackupCommand::List { format } => {
            let backups = deployment.backups().await?;
            if format.json {
                output::json(&backups)
            } else {
                for backup in &backups {
                    println!("{}", describe(backup));
                }
                Ok(())
            }
        }
        BackupCommand::Restore { id, into, format } => {
            let backup = deployment.restore(id.as_deref(), &into).await?;
            if format.json {
                output::json(&backup)
            } else {
                println!("restored {} into {}", describe(&backup), into.display());
                Ok(())
            }
        }
    };
    deployment.close().await;
    result
}
