//! Whether a profile database keeps its own FTS5 indexes (`raw_fts`, `memories_fts`).
//!
//! Migration 0003 writes them by triggers in the same transaction as each record. When the
//! profiles' text is indexed elsewhere (a search engine the engine keeps in step), those
//! triggers would index every text a second time for nobody: [`set`] drops them and empties
//! both tables (so no copy of a later-forgotten text stays in an index nobody cleans), and
//! turning them back on recreates the triggers and rebuilds both tables from the records,
//! so a database written with them off is searchable again from its first open. Every
//! process on a data directory must agree (the composition derives it from `profile_text`,
//! which they must share anyway): one that turns them off empties the index another one
//! with them on is searching.

use sqlx::Row;

use crate::database::SqliteDatabase;
use crate::error::db;
use memory_core::Result;

/// The triggers of migration 0003, by name, with the statement that creates each.
const TRIGGERS: [(&str, &str); 4] = [
    (
        "raw_fts_insert",
        "CREATE TRIGGER raw_fts_insert AFTER INSERT ON raw_messages BEGIN \
         INSERT INTO raw_fts(rowid, content) VALUES (new.doc, new.content); END",
    ),
    (
        "raw_fts_delete",
        "CREATE TRIGGER raw_fts_delete AFTER DELETE ON raw_messages BEGIN \
         INSERT INTO raw_fts(raw_fts, rowid, content) VALUES ('delete', old.doc, old.content); END",
    ),
    (
        "memories_fts_insert",
        "CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN \
         INSERT INTO memories_fts(rowid, search_text) VALUES (new.pos, new.search_text); END",
    ),
    (
        "memories_fts_delete",
        "CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN \
         INSERT INTO memories_fts(memories_fts, rowid, search_text) \
         VALUES ('delete', old.pos, old.search_text); END",
    ),
];

/// The FTS5 tables the triggers write.
const TABLES: [&str; 2] = ["raw_fts", "memories_fts"];

/// Whether the triggers are already as `keep` asks (all there, or none).
async fn settled(conn: impl sqlx::SqliteExecutor<'_>, keep: bool) -> Result<bool> {
    let names: Vec<&str> = TRIGGERS.iter().map(|(name, _)| *name).collect();
    let present: i64 = sqlx::query(
        "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' \
         AND name IN (SELECT value FROM json_each(?))",
    )
    .bind(serde_json::to_string(&names)?)
    .fetch_one(conn)
    .await
    .map_err(db)?
    .get(0);
    let all = i64::try_from(TRIGGERS.len()).unwrap_or(i64::MAX);
    Ok(if keep { present == all } else { present == 0 })
}

/// Whether the profile's own FTS5 indexes are kept (every trigger present).
pub(crate) async fn is_on(database: &SqliteDatabase) -> Result<bool> {
    settled(&database.writer, true).await
}

/// Turns the profile's own FTS5 indexes on (`keep`) or off, in one transaction; does
/// nothing when they already are. Off: triggers dropped, tables emptied. On after off:
/// triggers recreated, tables rebuilt from `raw_messages` and `memories`.
pub(crate) async fn set(database: &SqliteDatabase, keep: bool) -> Result<()> {
    if settled(&database.writer, keep).await? {
        return Ok(());
    }
    let mut tx = database.write().await?;
    // Again under the write lock: a process opening the profile at the same time may have
    // done it already (then this one does not rebuild a second time).
    if settled(&mut *tx, keep).await? {
        return Ok(());
    }
    for (name, _) in TRIGGERS {
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "DROP TRIGGER IF EXISTS {name}"
        )))
        .execute(&mut *tx)
        .await
        .map_err(db)?;
    }
    let command = if keep { "rebuild" } else { "delete-all" };
    for table in TABLES {
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "INSERT INTO {table}({table}) VALUES ('{command}')"
        )))
        .execute(&mut *tx)
        .await
        .map_err(db)?;
    }
    if keep {
        for (_, create) in TRIGGERS {
            sqlx::query(create).execute(&mut *tx).await.map_err(db)?;
        }
    }
    tx.commit().await.map_err(db)?;
    tracing::info!(
        path = %database.path.display(),
        keep,
        "{} the profile's FTS5 indexes",
        if keep { "rebuilt" } else { "emptied and stopped" }
    );
    Ok(())
}
