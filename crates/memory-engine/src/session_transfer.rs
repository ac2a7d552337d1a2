//! A session as JSON lines, one record per line: the export and import the CLI writes to
//! files and the server streams over HTTP.
//!
//! The first line is `{"kind":"session","session":{...}}`; every further line is
//! `{"kind":"message","session_id":...,"parent_id":...|null,"message":{UIMessage}}` in
//! insertion order, so every parent precedes its children.

use std::collections::{HashMap, HashSet};

use memory_core::{
    MemoryError, NewMessage, NewSession, Parent, Result, SessionId, SessionInfo, UiMessage,
};
use serde::{Deserialize, Serialize};

use crate::SessionManager;

/// Messages per append while importing.
const BATCH: usize = 1_000;

/// One line of a session export.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SessionLine {
    /// The session's record (name, source, usage, times), exactly as stored.
    Session {
        /// The record.
        session: SessionInfo,
    },
    /// One message with its parent.
    Message {
        /// The session it belongs to.
        session_id: SessionId,
        /// Its parent (`None` for a root).
        parent_id: Option<String>,
        /// The message.
        message: UiMessage,
    },
}

/// One page of an export: JSON lines, and the cursor of the next page.
#[derive(Debug, Clone)]
pub struct ExportPage {
    /// The lines (without newlines); the first page starts with the session's record.
    pub lines: Vec<String>,
    /// Where the next page starts; `None` after the last.
    pub next: Option<String>,
}

/// What an import did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionImportReport {
    /// Message lines read.
    pub messages: u64,
    /// Messages stored by this import.
    pub inserted: u64,
    /// Messages that were stored already (an import run twice changes nothing).
    pub already_present: u64,
    /// Sessions this import created.
    pub sessions_created: u64,
}

fn parse_line(number: usize, text: &str) -> Result<SessionLine> {
    serde_json::from_str(text)
        .map_err(|e| MemoryError::invalid(format!("line {number}: not an export record: {e}")))
}

impl SessionManager {
    /// One page of `id`'s export: the session record first (when `cursor` is `None`), then
    /// up to `limit` messages in insertion order.
    pub async fn export_page(
        &self,
        id: &SessionId,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<ExportPage> {
        let mut lines = Vec::new();
        if cursor.is_none() {
            self.rehydrate(id).await?;
            let info = self
                .get(id)
                .await?
                .ok_or_else(|| MemoryError::not_found("session", id.as_str()))?;
            lines.push(serde_json::to_string(&SessionLine::Session {
                session: info,
            })?);
        }
        let page = self.store().messages(id, cursor, limit).await?;
        for stored in page.messages {
            lines.push(serde_json::to_string(&SessionLine::Message {
                session_id: id.clone(),
                parent_id: stored.parent_id,
                message: stored.message,
            })?);
        }
        Ok(ExportPage {
            lines,
            next: page.next_cursor,
        })
    }

    /// Checks an export before anything is written: every line parses, every id follows the
    /// id rule, every message fits the store's row limit, every parent is earlier in the
    /// lines or already stored. The first problem is an error naming its (1-based) line.
    /// Returns the number of messages. Keeps the ids of each session's messages (about 100
    /// bytes a message).
    pub async fn validate_import(
        &self,
        lines: impl Iterator<Item = Result<String>>,
    ) -> Result<u64> {
        let limit = self.store().capabilities().max_message_bytes;
        let mut seen: HashMap<SessionId, HashSet<String>> = HashMap::new();
        let mut total = 0u64;
        for (i, line) in lines.enumerate() {
            let (number, text) = (i + 1, line?);
            if text.trim().is_empty() {
                continue;
            }
            let at = |e: String| MemoryError::invalid(format!("line {number}: {e}"));
            let SessionLine::Message {
                session_id,
                parent_id,
                message,
            } = parse_line(number, &text)?
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
                && self.store().get(&session_id, parent).await?.is_none()
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

    /// Imports lines that [`SessionManager::validate_import`] accepted: session records
    /// exactly as exported, messages in batches (insert-if-absent, so a second import, or
    /// two at once, changes nothing). `progress` hears the number of messages of each batch.
    pub async fn import_lines(
        &self,
        lines: impl Iterator<Item = Result<String>>,
        progress: &mut (dyn FnMut(u64) + Send),
    ) -> Result<SessionImportReport> {
        let mut report = SessionImportReport::default();
        let mut known: HashSet<SessionId> = HashSet::new();
        let mut pending: Vec<NewMessage> = Vec::new();
        let mut pending_session: Option<SessionId> = None;
        for (i, line) in lines.enumerate() {
            let text = line?;
            if text.trim().is_empty() {
                continue;
            }
            match parse_line(i + 1, &text)? {
                SessionLine::Session { session } => {
                    if known.insert(session.id.clone()) && self.restore(&session).await? {
                        report.sessions_created += 1;
                    }
                }
                SessionLine::Message {
                    session_id,
                    parent_id,
                    message,
                } => {
                    if pending_session.as_ref() != Some(&session_id) || pending.len() >= BATCH {
                        if let Some(s) = pending_session.take() {
                            self.flush_import(&s, &mut pending, &mut report, progress)
                                .await?;
                        }
                        if self
                            .ensure_imported_session(&mut known, &session_id)
                            .await?
                        {
                            report.sessions_created += 1;
                        }
                        pending_session = Some(session_id);
                    }
                    let parent = parent_id.map(Parent::Message).unwrap_or(Parent::Root);
                    pending.push(NewMessage::with_parent(message, parent));
                }
            }
        }
        if let Some(s) = pending_session.take() {
            self.flush_import(&s, &mut pending, &mut report, progress)
                .await?;
        }
        Ok(report)
    }

    async fn flush_import(
        &self,
        session: &SessionId,
        pending: &mut Vec<NewMessage>,
        report: &mut SessionImportReport,
        progress: &mut (dyn FnMut(u64) + Send),
    ) -> Result<()> {
        let batch = std::mem::take(pending);
        let n = batch.len() as u64;
        let outcomes = self.store().append(session, batch).await?;
        let inserted = outcomes.iter().filter(|o| o.inserted()).count() as u64;
        report.messages += n;
        report.inserted += inserted;
        report.already_present += n - inserted;
        progress(n);
        Ok(())
    }

    /// Registers a session that has no record in the lines, if it is not yet; true when
    /// this import created it (another importer creating it at the same moment is no error).
    async fn ensure_imported_session(
        &self,
        known: &mut HashSet<SessionId>,
        id: &SessionId,
    ) -> Result<bool> {
        if !known.insert(id.clone()) || self.get(id).await?.is_some() {
            return Ok(false);
        }
        let spec = NewSession {
            id: Some(id.clone()),
            source: Some("import".into()),
            ..Default::default()
        };
        match self.create(spec).await {
            Ok(_) => Ok(true),
            Err(MemoryError::AlreadyExists { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }
}
