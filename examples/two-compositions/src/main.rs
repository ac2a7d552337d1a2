//! The same agent code over two compositions, side by side.
//!
//! 1. **From configuration**: `memory_compose::Deployment` reads `memory.toml` (none here,
//!    so everything is embedded SQLite) and builds the `SessionManager`. Pointing
//!    `[storage]` at other backends changes this composition, not the agent.
//! 2. **By hand**: the messages in one SQLite file and their full-text index in another. The
//!    index is not written by the store, so the engine keeps it in step through a durable
//!    outbox: the shape of Postgres records beside a Tantivy index.
//!
//! The agent function takes a `SessionManager` and never learns which one it got.
//!
//! Run: `cargo run -p two-compositions -- ./example-data`

use std::path::Path;
use std::sync::Arc;

use memory_core::ports::SystemClock;
use memory_core::{NewSession, Parent, Role, SearchQuery, UiMessage};
use memory_engine::SessionManager;
use memory_sqlite::{
    SqliteConfig, SqliteDatabase, SqliteKeyValueStore, SqliteMessageStore, SqliteSessionRegistry,
    SqliteTextIndex,
};

/// The agent: it remembers a conversation and searches it. Nothing here names a backend.
async fn agent(memory: &SessionManager) -> memory_core::Result<Vec<String>> {
    let info = memory
        .create(NewSession {
            name: Some("support chat".into()),
            ..Default::default()
        })
        .await?;
    for (id, role, text) in [
        ("u1", Role::User, "My invoice from March is missing."),
        (
            "a1",
            Role::Assistant,
            "I found the March invoice and re-sent it.",
        ),
        ("u2", Role::User, "Thanks! Can you also check April?"),
    ] {
        memory
            .append(
                &info.id,
                UiMessage::text_message(id, role, text),
                Parent::LatestLeaf,
            )
            .await?;
    }
    let hits = memory.search(&SearchQuery::new("invoice")).await?;
    Ok(hits.into_iter().map(|h| h.message_id).collect())
}

/// Composition 1: whatever `<dir>/memory.toml` says (the embedded default without one).
async fn from_configuration(dir: &Path) -> Result<SessionManager, Box<dyn std::error::Error>> {
    let deployment = memory_compose::Deployment::open(dir)?;
    Ok(deployment.session_manager().await?)
}

/// Composition 2: records in `records.db`, the text index in `index.db`, kept in step by
/// the engine (its outbox lives beside the records).
async fn by_hand(dir: &Path) -> memory_core::Result<SessionManager> {
    let records = SqliteDatabase::open(SqliteConfig::new(dir.join("records.db"))).await?;
    let index = SqliteDatabase::open(SqliteConfig::new(dir.join("index.db"))).await?;
    Ok(SessionManager::new(
        Arc::new(SqliteMessageStore::new(records.clone())),
        Arc::new(SqliteSessionRegistry::new(records.clone())),
        Arc::new(SystemClock),
    )
    .with_search(
        Arc::new(SqliteTextIndex::new(index)),
        Arc::new(SqliteKeyValueStore::new(records)),
    ))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::path::PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "./example-data".into()),
    );
    let configured = agent(&from_configuration(&dir.join("configured")).await?).await?;
    let wired = agent(&by_hand(&dir.join("wired")).await?).await?;
    println!("from memory.toml: invoice found in {configured:?}");
    println!("wired by hand:    invoice found in {wired:?}");
    if configured.len() != 2 || wired.len() != 2 {
        return Err("both compositions should find the two invoice messages".into());
    }
    Ok(())
}
