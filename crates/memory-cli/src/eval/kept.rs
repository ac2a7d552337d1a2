//! Ingested evaluation haystacks kept between runs (`--keep DIR`): the profiles live in
//! `DIR` and a record of each (which message is which turn) beside them, so a second run with
//! other recall settings scores the same profiles without ingesting again.
//!
//! A record is written only after its profile is fully ingested; a run that stopped halfway
//! left no record, and the next run ingests that profile again from scratch.
//!
//! A record is keyed by profile name only: another data file, embedder or ingest setting
//! needs another `DIR`.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::commands::CliError;

fn record_path(keep: &Path, set: &str, profile: &str) -> PathBuf {
    keep.join(set).join(format!("{profile}.json"))
}

/// The record of `profile` in data set `set`, when an earlier run finished ingesting it.
pub fn read<T: DeserializeOwned>(keep: &Path, set: &str, profile: &str) -> Option<T> {
    let text = std::fs::read_to_string(record_path(keep, set, profile)).ok()?;
    serde_json::from_str(&text).ok()
}

/// Records that `profile` is fully ingested.
pub fn write<T: Serialize>(
    keep: &Path,
    set: &str,
    profile: &str,
    record: &T,
) -> Result<(), CliError> {
    let path = record_path(keep, set, profile);
    std::fs::create_dir_all(keep.join(set))
        .and_then(|()| {
            let text = serde_json::to_string(record).map_err(std::io::Error::other)?;
            std::fs::write(&path, text)
        })
        .map_err(|e| CliError::io(format!("writing {}", path.display()), e))
}
