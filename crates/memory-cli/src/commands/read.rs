use memory_core::{MemoryError, SearchMode, SearchQuery};
use serde_json::json;

use super::CliError;
use crate::app::{App, session_id};
use crate::cli::Format;
use crate::output;

pub async fn history(
    app: &App,
    session: &str,
    leaf: Option<String>,
    raw: bool,
    format: Format,
) -> Result<(), CliError> {
    let session = app.manager.session(&session_id(session)?).await?;
    let messages = if raw {
        session.raw_history(leaf.as_deref()).await?
    } else {
        session.history(leaf.as_deref()).await?
    };
    let leaf_id = messages.last().map(|m| m.id.clone());
    if format.json {
        return output::json(
            &json!({ "session_id": session.id(), "leaf_id": leaf_id, "messages": messages }),
        );
    }
    if messages.is_empty() {
        println!("No messages.");
    }
    for m in &messages {
        output::message(m);
    }
    Ok(())
}

pub async fn branches(
    app: &App,
    session: &str,
    message: &str,
    format: Format,
) -> Result<(), CliError> {
    let session = app.manager.session(&session_id(session)?).await?;
    let children = session.branches(message).await?;
    if format.json {
        return output::json(
            &json!({ "session_id": session.id(), "message_id": message, "children": children }),
        );
    }
    println!("{} branch(es) from {message}:", children.len());
    for m in &children {
        output::message(m);
    }
    Ok(())
}

pub async fn search(
    app: &App,
    text: &str,
    session: Option<String>,
    phrase: bool,
    limit: Option<usize>,
    format: Format,
) -> Result<(), CliError> {
    let mut query = SearchQuery::new(text).mode(if phrase {
        SearchMode::Phrase
    } else {
        SearchMode::AllWords
    });
    query.limit = limit;
    if let Some(session) = session {
        let id = session_id(&session)?;
        if app.manager.get(&id).await?.is_none() {
            return Err(MemoryError::not_found("session", id.as_str()).into());
        }
        query = query.in_session(id);
    }
    let hits = app.manager.search(&query).await?;
    if format.json {
        return output::json(&json!({ "query": text, "hits": hits }));
    }
    output::hits(&hits);
    Ok(())
}

pub async fn compact(
    app: &App,
    session: &str,
    leaf: Option<String>,
    format: Format,
) -> Result<(), CliError> {
    if !app.has_llm {
        return Err(CliError::Input(
            "compaction needs an [llm] section in memory.toml (base_url and model of an OpenAI-compatible endpoint)".into(),
        ));
    }
    let session = app.manager.session(&session_id(session)?).await?;
    let result = session.compact(leaf.as_deref()).await?;
    if format.json {
        return output::json(&match &result {
            Some(r) => {
                json!({"compacted": true, "from_message_id": r.from_message_id, "to_message_id": r.to_message_id,
                "summary": r.summary, "usage": {"input_tokens": r.usage.input_tokens, "output_tokens": r.usage.output_tokens}})
            }
            None => json!({"compacted": false}),
        });
    }
    match result {
        Some(r) => println!(
            "compacted {}..{} ({} in / {} out tokens)\n\n{}",
            r.from_message_id,
            r.to_message_id,
            r.usage.input_tokens,
            r.usage.output_tokens,
            r.summary
        ),
        None => println!("nothing to compact"),
    }
    Ok(())
}

pub async fn compactions(app: &App, session: &str, format: Format) -> Result<(), CliError> {
    let session = app.manager.session(&session_id(session)?).await?;
    let records = session.compactions().await?;
    if format.json {
        let list: Vec<_> = records
            .iter()
            .map(|(r, by)| json!({"id": r.id, "from_message_id": r.from_message_id, "to_message_id": r.to_message_id,
                "summary": r.summary, "created_at": r.created_at, "superseded_by": by}))
            .collect();
        return output::json(&json!({"session_id": session.id(), "compactions": list}));
    }
    if records.is_empty() {
        println!("No compactions.");
    }
    for (r, by) in &records {
        let status = by
            .as_ref()
            .map(|b| format!(" (superseded by {b})"))
            .unwrap_or_default();
        println!(
            "{}  {}..{}  {}{status}",
            r.id,
            r.from_message_id,
            r.to_message_id,
            output::time(r.created_at)
        );
    }
    Ok(())
}
