//! Consistent copies of live databases, for backups.

use std::path::Path;
use std::str::FromStr;

use memory_core::{MemoryError, Result};
use sqlx::ConnectOptions;
use sqlx::sqlite::SqliteConnectOptions;

use crate::error::db;

/// Writes a consistent copy of the SQLite database at `source` into the new file `target`
/// with `VACUUM INTO`: one read transaction, so writers in this or any other process go on,
/// and the copy is never a torn mix of two states (as copying a live file with its WAL
/// could be). The copy is compacted and has no WAL of its own. `target` must not exist.
pub async fn snapshot(source: &Path, target: &Path) -> Result<()> {
    if !source.is_file() {
        return Err(MemoryError::not_found(
            "database file",
            source.display().to_string(),
        ));
    }
    if target.exists() {
        return Err(MemoryError::AlreadyExists {
            kind: "snapshot target",
            id: target.display().to_string(),
        });
    }
    let target_text = target
        .to_str()
        .ok_or_else(|| MemoryError::invalid(format!("{} is not UTF-8", target.display())))?;
    let mut connection = SqliteConnectOptions::from_str("sqlite:")
        .map_err(db)?
        .filename(source)
        .read_only(true)
        .busy_timeout(std::time::Duration::from_secs(30))
        .connect()
        .await
        .map_err(db)?;
    sqlx::query("VACUUM INTO ?")
        .bind(target_text)
        .execute(&mut connection)
        .await
        .map_err(db)?;
    Ok(())
}
