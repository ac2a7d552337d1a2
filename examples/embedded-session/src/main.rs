//! Compose the engine with the SQLite adapter in a few lines: the pattern an agent uses to
//! keep a branching conversation in one embedded file.
//!
//! Run: `cargo run -p embedded-session -- ./example-data`

use std::sync::Arc;

use memory_core::ports::SystemClock;
use memory_core::{NewSession, Parent, Role, SearchQuery, UiMessage};
use memory_engine::SessionManager;
use memory_sqlite::{
    SqliteConfig, SqliteDatabase, SqliteKeyValueStore, SqliteMessageIndex, SqliteMessageStore,
    SqliteSessionRegistry,
};

#[tokio::main]
async fn main() -> memory_core::Result<()> {
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "./example-data".into());
    let db = SqliteDatabase::open(SqliteConfig::new(format!("{dir}/memory.db"))).await?;
    let manager = SessionManager::new(
        Arc::new(SqliteMessageStore::new(db.clone())),
        Arc::new(SqliteSessionRegistry::new(db.clone())),
        Arc::new(SystemClock),
    )
    // Search through the FTS5 index the SQLite store writes in the same transaction.
    .with_search(
        Arc::new(SqliteMessageIndex::new(db.clone())),
        Arc::new(SqliteKeyValueStore::new(db.clone())),
    );
    let info = manager
        .create(NewSession {
            name: Some("support chat".into()),
            ..Default::default()
        })
        .await?;
    let session = manager.session(&info.id).await?;
    session
        .append(UiMessage::text_message(
            "u1",
            Role::User,
            "My invoice total looks wrong",
        ))
        .await?;
    session
        .append(UiMessage::text_message(
            "a1",
            Role::Assistant,
            "Let me check the invoice lines.",
        ))
        .await?;
    // Regenerate the answer: a second branch under the same user message.
    session
        .append_to(
            UiMessage::text_message("a1b", Role::Assistant, "Which invoice number is it?"),
            Parent::message("u1"),
        )
        .await?;
    for leaf in ["a1", "a1b"] {
        let path: Vec<String> = session
            .history(Some(leaf))
            .await?
            .into_iter()
            .map(|m| format!("{}: {}", m.role, m.text()))
            .collect();
        println!("branch {leaf}: {}", path.join(" | "));
    }
    let hits = manager.search(&SearchQuery::new("invoice")).await?;
    println!(
        "{} hit(s) for \"invoice\" in session {}",
        hits.len(),
        info.id
    );
    db.close().await;
    Ok(())
}
