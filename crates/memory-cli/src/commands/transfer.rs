//! `import` and `export`: a session as JSONL, one record per line.
//!
//! The first line is `{"kind":"session","session":{...}}`; every further line is
//! `{"kind":"message","session_id":...,"parent_id":...|null,"message":{UIMessage}}` in insertion
//! order, so every parent precedes its children.

use std::collections::HashSet;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use indicatif::{ProgressBar, ProgressStyle};
use memory_core::{
    MemoryError, NewMessage, NewSession, Parent, SessionId, SessionInfo, SessionUsage, UiMessage,
};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::CliError;
use crate::app::{App, session_id};
use crate::cli::Format;
use crate::output;

const BATCH: usize = 1_000;
const PAGE: usize = 1_000;

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Line {
    Session {
        session: SessionInfo,
    },
    Message {
        session_id: SessionId,
        parent_id: Option<String>,
        message: UiMessage,
    },
}

pub async fn export(app: &App, session: &str, output: Option<PathBuf>) -> Result<(), CliError> {
    let id = session_id(session)?;
    let info = app
        .manager
        .get(&id)
        .await?
        .ok_or_else(|| MemoryError::not_found("session", id.as_str()))?;
    let sink: Box<dyn Write> = match &output {
        Some(path) => Box::new(
            File::create(path)
                .map_err(|e| CliError::io(format!("creating {}", path.display()), e))?,
        ),
        None => Box::new(std::io::stdout().lock()),
    };
    let mut out = BufWriter::new(sink);
    let write_err = |e| CliError::io("writing the export", e);
    serde_json::to_writer(&mut out, &Line::Session { session: info })?;
    out.write_all(b"\n").map_err(write_err)?;
    let mut cursor = None;
    let mut count = 0usize;
    loop {
        let page = app.store.messages(&id, cursor, PAGE).await?;
        for stored in page.messages {
            let line = Line::Message {
                session_id: id.clone(),
                parent_id: stored.parent_id,
                message: stored.message,
            };
            serde_json::to_writer(&mut out, &line)?;
            out.write_all(b"\n").map_err(write_err)?;
            count += 1;
        }
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    out.flush().map_err(write_err)?;
    if let Some(path) = output {
        eprintln!("exported {count} message(s) to {}", path.display());
    }
    Ok(())
}

fn open_lines(
    path: &Path,
) -> Result<impl Iterator<Item = (usize, std::io::Result<String>)>, CliError> {
    let file =
        File::open(path).map_err(|e| CliError::io(format!("opening {}", path.display()), e))?;
    Ok(BufReader::new(file)
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l)))
}

fn parse_line(path: &Path, number: usize, text: &str) -> Result<Line, CliError> {
    serde_json::from_str(text).map_err(|e| {
        CliError::Input(format!(
            "{}:{number}: not an export record: {e}",
            path.display()
        ))
    })
}

/// Validates the whole file first (nothing is written if any line is bad), then imports.
pub async fn import(app: &App, path: &Path, format: Format) -> Result<(), CliError> {
    let mut total = 0u64;
    for (number, line) in open_lines(path)? {
        let text = line.map_err(|e| CliError::io(format!("reading {}", path.display()), e))?;
        if text.trim().is_empty() {
            continue;
        }
        if let Line::Message { message, .. } = parse_line(path, number, &text)? {
            memory_core::validate_message_id(&message.id)
                .map_err(|e| CliError::Input(format!("{}:{number}: {e}", path.display())))?;
            total += 1;
        }
    }
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} messages ({per_sec}, eta {eta})")
            .map_err(|e| CliError::Input(e.to_string()))?,
    );
    let mut known: HashSet<SessionId> = HashSet::new();
    let mut pending: Vec<NewMessage> = Vec::new();
    let mut pending_session: Option<SessionId> = None;
    let (mut inserted, mut existing, mut sessions_created) = (0u64, 0u64, 0u64);
    for (number, line) in open_lines(path)? {
        let text = line.map_err(|e| CliError::io(format!("reading {}", path.display()), e))?;
        if text.trim().is_empty() {
            continue;
        }
        match parse_line(path, number, &text)? {
            Line::Session { session } => {
                if ensure_session(app, &mut known, &session.id, Some(&session)).await? {
                    sessions_created += 1;
                }
            }
            Line::Message {
                session_id,
                parent_id,
                message,
            } => {
                if pending_session.as_ref() != Some(&session_id) || pending.len() >= BATCH {
                    if let Some(s) = pending_session.take() {
                        let (i, e) = flush(app, &s, &mut pending, &bar).await?;
                        inserted += i;
                        existing += e;
                    }
                    if ensure_session(app, &mut known, &session_id, None).await? {
                        sessions_created += 1;
                    }
                    pending_session = Some(session_id);
                }
                let parent = parent_id.map(Parent::Message).unwrap_or(Parent::Root);
                pending.push(NewMessage::with_parent(message, parent));
            }
        }
    }
    if let Some(s) = pending_session.take() {
        let (i, e) = flush(app, &s, &mut pending, &bar).await?;
        inserted += i;
        existing += e;
    }
    bar.finish_and_clear();
    if format.json {
        return output::json(&json!({
            "messages": total, "inserted": inserted, "already_present": existing, "sessions_created": sessions_created,
        }));
    }
    println!(
        "imported {total} message(s): {inserted} new, {existing} already present; {sessions_created} session(s) created"
    );
    Ok(())
}

async fn flush(
    app: &App,
    session: &SessionId,
    pending: &mut Vec<NewMessage>,
    bar: &ProgressBar,
) -> Result<(u64, u64), CliError> {
    let batch = std::mem::take(pending);
    let n = batch.len() as u64;
    let outcomes = app.store.append(session, batch).await?;
    let inserted = outcomes.iter().filter(|o| o.inserted()).count() as u64;
    bar.inc(n);
    Ok((inserted, n - inserted))
}

/// Registers the session if it is not yet; true when it was created.
async fn ensure_session(
    app: &App,
    known: &mut HashSet<SessionId>,
    id: &SessionId,
    record: Option<&SessionInfo>,
) -> Result<bool, CliError> {
    if known.contains(id) {
        return Ok(false);
    }
    known.insert(id.clone());
    if app.manager.get(id).await?.is_some() {
        return Ok(false);
    }
    let mut spec = NewSession {
        id: Some(id.clone()),
        source: Some("import".into()),
        ..Default::default()
    };
    if let Some(info) = record {
        spec.name = info.name.clone();
        spec.model = info.model.clone();
        spec.source = info.source.clone().or(spec.source);
        if let Some(parent) = &info.parent_session_id
            && app.manager.get(parent).await?.is_some()
        {
            spec.parent_session_id = Some(parent.clone());
        }
    }
    app.manager.create(spec).await?;
    if let Some(info) = record
        && info.usage != SessionUsage::default()
    {
        app.manager.add_usage(id, info.usage).await?;
    }
    Ok(true)
}
