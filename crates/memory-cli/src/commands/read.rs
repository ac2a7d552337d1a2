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
    format: Format,
) -> Result<(), CliError> {
    let session = app.manager.session(&session_id(session)?).await?;
    let messages = session.history(leaf.as_deref()).await?;
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
