//! The same agent code on the embedded default and on PostgreSQL.
//!
//! Two data directories differ only in their `memory.toml`: the first has none (every role
//! on embedded SQLite), the second puts every role on the PostgreSQL server that
//! `MEMORY_POSTGRES_URL` names (`scripts/setup-postgres.sh` starts one on loopback and
//! prints its URL), in a schema of this run's own that is dropped at the end. The agent
//! function receives a `Deployment` and never learns which backend it got.
//!
//! Run: `MEMORY_POSTGRES_URL=$(./scripts/setup-postgres.sh) cargo run -p sqlite-and-postgres -- ./example-data`

use std::path::{Path, PathBuf};

use memory_compose::Deployment;
use memory_core::{NewSession, Parent, Role, SearchQuery, UiMessage};
use memory_engine::long_term::{RecallItem, RecallRequest, RememberRequest};

/// The agent: a conversation with a branch, a search, and two versions of one fact.
/// Nothing here names a backend. Returns what it saw, one line per observation.
async fn agent(deployment: &Deployment) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    let sessions = deployment.session_manager().await?;
    let info = sessions
        .create(NewSession {
            name: Some("support chat".into()),
            ..Default::default()
        })
        .await?;
    for (id, role, text, parent) in [
        (
            "u1",
            Role::User,
            "My invoice from March is missing.",
            Parent::LatestLeaf,
        ),
        (
            "a1",
            Role::Assistant,
            "I re-sent the March invoice.",
            Parent::LatestLeaf,
        ),
        (
            "a1b",
            Role::Assistant,
            "Which email should I use?",
            Parent::message("u1"),
        ),
        (
            "u2",
            Role::User,
            "The work one, please.",
            Parent::LatestLeaf,
        ),
    ] {
        sessions
            .append(&info.id, UiMessage::text_message(id, role, text), parent)
            .await?;
    }
    let history = sessions.store().history(&info.id, None).await?;
    let hits = sessions.search(&SearchQuery::new("invoice")).await?;
    let mut seen = vec![
        format!(
            "history: {:?}",
            history.iter().map(|m| m.id.as_str()).collect::<Vec<_>>()
        ),
        format!("search invoice: {:?}", {
            let mut ids: Vec<String> = hits.into_iter().map(|h| h.message_id).collect();
            ids.sort();
            ids
        }),
    ];

    let (memory, _note) = deployment.memory_service().await?;
    for content in [
        "Invoices go to billing@old.example",
        "Invoices go to billing@new.example",
    ] {
        memory
            .remember(
                "acme",
                RememberRequest {
                    content: content.into(),
                    session_id: None,
                    kind: None,
                    key: Some("invoice.email".into()),
                    ..RememberRequest::default()
                },
            )
            .await?;
    }
    let recalled = memory
        .recall("acme", RecallRequest::new("where do invoices go?", 5))
        .await?;
    let current: Vec<String> = recalled
        .hits
        .iter()
        .filter_map(|hit| match &hit.item {
            RecallItem::Memory(m) => Some(m.content.clone()),
            _ => None,
        })
        .collect();
    seen.push(format!("recall: {current:?}"));
    deployment.close().await;
    Ok(seen)
}

/// A data directory whose `memory.toml` puts every role in `schema` on PostgreSQL.
fn postgres_data_dir(dir: &Path, schema: &str) -> std::io::Result<PathBuf> {
    let dir = dir.join("postgres");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(
        dir.join("memory.toml"),
        format!(
            "[memory]\nembedder = \"none\"\n\n{}",
            memory_config::all_on_postgres(schema)
        ),
    )?;
    Ok(dir)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "./example-data".into()),
    );
    let Ok(url) = std::env::var("MEMORY_POSTGRES_URL") else {
        return Err(
            "set MEMORY_POSTGRES_URL (./scripts/setup-postgres.sh starts a server and prints it)"
                .into(),
        );
    };

    let embedded = dir.join("sqlite");
    std::fs::create_dir_all(&embedded)?;
    std::fs::write(
        embedded.join("memory.toml"),
        "[memory]\nembedder = \"none\"\n",
    )?;
    let on_sqlite = agent(&Deployment::open(&embedded)?).await?;

    let schema = format!(
        "example_{}",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    );
    let on_postgres = agent(&Deployment::open(&postgres_data_dir(&dir, &schema)?)?).await;
    let db = memory_postgres::PostgresDatabase::connect(
        memory_postgres::PostgresConfig::new(url).schema(&schema),
    )
    .await?;
    db.drop_schema().await?;
    db.close().await;
    let on_postgres = on_postgres?;

    for (backend, lines) in [("sqlite", &on_sqlite), ("postgres", &on_postgres)] {
        for line in lines {
            println!("{backend:>8}  {line}");
        }
    }
    if on_sqlite != on_postgres {
        return Err("the two backends answered the agent differently".into());
    }
    println!("same answers on both backends");
    Ok(())
}
