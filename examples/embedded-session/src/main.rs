//! Compose through `memory-compose` in two lines and keep a branching conversation: the
//! pattern an agent uses. With no `memory.toml`, everything lives in one embedded SQLite file;
//! `[storage]` moves it elsewhere without touching this code.
//!
//! Run: `cargo run -p embedded-session -- ./example-data`

use std::path::Path;

use memory_core::{NewSession, Parent, Role, SearchQuery, UiMessage};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "./example-data".into());
    // `<dir>/memory.toml` picks the backends; without one, everything is embedded SQLite in
    // `<dir>` (the message search runs on the FTS5 index the store writes).
    let deployment = memory_compose::Deployment::open(Path::new(&dir))?;
    let manager = deployment.session_manager().await?;
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
    deployment.close().await;
    Ok(())
}
