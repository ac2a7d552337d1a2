//! `import` and `export`: a session as JSONL, one record per line.
//!
//! The first line is `{"kind":"session","session":{...}}`; every further line is
//! `{"kind":"message","session_id":...,"parent_id":...|null,"message":{UIMessage}}` in insertion
//! order, so every parent precedes its children.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use indicatif::{ProgressBar, ProgressStyle};
use memory_core::{MemoryError, NewMessage, NewSession, Parent, SessionId, SessionInfo, UiMessage};
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

/// Validates the whole file first (every line parses, every id follows the id rule, every
/// message fits the store's row limit, every parent is earlier in the file or already
/// stored), naming the line of the first problem; nothing is written when one is found. Then
/// imports: session records exactly as exported, messages in batches (insert-if-absent, so a
/// second import, or two at once, changes nothing).
pub async fn import(app: &App, path: &Path, format: Format) -> Result<(), CliError> {
    let total = validate(app, path).await?;
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
                if known.insert(session.id.clone()) && app.manager.restore(&session).await? {
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
                    if ensure_session(app, &mut known, &session_id).await? {
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

/// Reads the whole file once and checks what a write would refuse; returns the number of
/// messages. The ids of a session's messages are kept to check parents (about 100 bytes a
/// message).
async fn validate(app: &App, path: &Path) -> Result<u64, CliError> {
    let limit = app.store.capabilities().max_message_bytes;
    let mut seen: HashMap<SessionId, HashSet<String>> = HashMap::new();
    let mut total = 0u64;
    for (number, line) in open_lines(path)? {
        let text = line.map_err(|e| CliError::io(format!("reading {}", path.display()), e))?;
        if text.trim().is_empty() {
            continue;
        }
        let at = |e: String| CliError::Input(format!("{}:{number}: {e}", path.display()));
        let Line::Message {
            session_id,
            parent_id,
            message,
        } = parse_line(path, number, &text)?
        else {
            continue;
        };
        memory_core::validate_message_id(&message.id).map_err(|e| at(e.to_string()))?;
        if let Some(limit) = limit {
            let bytes = serde_json::to_vec(&message)?.len() as u64;
            if bytes > limit {
                return Err(at(format!(
                    "message {:?} is {bytes} bytes; the store takes at most {limit}",
                    message.id
                )));
            }
        }
        let ids = seen.entry(session_id.clone()).or_default();
        if let Some(parent) = &parent_id
            && !ids.contains(parent)
            && app.store.get(&session_id, parent).await?.is_none()
        {
            return Err(at(format!(
                "the parent {parent:?} of message {:?} is neither earlier in the file nor stored in session {session_id}",
                message.id
            )));
        }
        ids.insert(message.id);
        total += 1;
    }
    Ok(total)
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

/// Registers a session that has no record in the file, if it is not yet; true when this
/// import created it (another importer creating it at the same moment is no error).
async fn ensure_session(
    app: &App,
    known: &mut HashSet<SessionId>,
    id: &SessionId,
) -> Result<bool, CliError> {
    if !known.insert(id.clone()) || app.manager.get(id).await?.is_some() {
        return Ok(false);
    }
    let spec = NewSession {
        id: Some(id.clone()),
        source: Some("import".into()),
        ..Default::default()
    };
    match app.manager.create(spec).await {
        Ok(_) => Ok(true),
        Err(MemoryError::AlreadyExists { .. }) => Ok(false),
        Err(e) => Err(e.into()),
    }
}
