//! Archiving cold sessions to object storage, and bringing them back.
//!
//! An archived session keeps its record in the registry (name, times, usage: the stub that
//! lists and counts it) and a marker in the key-value store naming its archive; its
//! messages, overlay records and per-session key-value entries (blocks, frozen prompt,
//! loaded skills) move to one JSONL object in the blob store and leave the hot stores. The
//! next handle on the session ([`SessionManager::session`], so every read and append through
//! the manager, and exports) brings it back first, transparently.
//!
//! Search: an archived session's messages leave the text index with the store (search does
//! not find them until the session comes back). Entries of session-scoped searchable blocks
//! stay in their index.
//!
//! Crash safety: the archive is uploaded and the marker written before anything is removed,
//! and a restore is insert-if-absent, so an interruption at any point loses nothing (a
//! half-done archive is finished or undone by the next access).

use std::sync::Arc;

use memory_core::ports::{BlobStore, KeyValueStore, PutMode};
use memory_core::{CompactionRecord, MemoryError, NewCompaction, Result, SessionId};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::SessionManager;

/// Messages read per export page while archiving.
const PAGE: usize = 1_000;

/// Where the archive lives: blobs for the archives, key-value for the markers.
#[derive(Clone)]
pub(crate) struct Archive {
    pub(crate) blobs: Arc<dyn BlobStore>,
    pub(crate) kv: Arc<dyn KeyValueStore>,
}

/// One line of an archive object.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum ArchiveLine {
    /// The first line.
    Header { format: u32, session: String },
    /// A line of the session's export (record or message), as `session_transfer` writes it.
    Export(Value),
    /// A per-session key-value entry.
    Entry { key: String, value: String },
    /// An overlay record.
    Compaction(CompactionRecord),
}

/// What an archive moved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArchiveReport {
    /// The session.
    pub session: String,
    /// The blob holding it.
    pub key: String,
    /// Messages moved.
    pub messages: u64,
    /// Bytes written.
    pub bytes: u64,
}

fn marker(session: &SessionId) -> String {
    format!("archive:session:{session}")
}

fn blob_key(session: &SessionId) -> String {
    // Session ids may hold characters a blob key may not: hex keeps every id a valid name.
    let hex: String = session
        .as_str()
        .bytes()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("archive/sessions/{hex}.jsonl")
}

impl SessionManager {
    /// Archives `id` to object storage (see the module docs). [`MemoryError::NotSupported`]
    /// without an archive wired; not-found for an unknown session.
    pub async fn archive(&self, id: &SessionId) -> Result<ArchiveReport> {
        let archive = self.archive_settings()?;
        self.session(id).await?; // registered, and back from any earlier archive
        let key = blob_key(id);
        let (lines, messages) = self.snapshot_lines(id).await?;
        let owned = self.context_wiring().session_keys(id);
        let mut body = lines.join("\n");
        body.push('\n');
        let bytes = body.len() as u64;
        archive
            .blobs
            .put(&key, body.into_bytes(), PutMode::Overwrite)
            .await?;
        // The marker before any removal: from here on a reader brings the archive back.
        archive.kv.set(&marker(id), &key).await?;
        self.forget_handle(id);
        self.store().clear(id).await?;
        for entry in &owned {
            archive.kv.delete(entry).await?;
        }
        tracing::info!(session = %id, %key, messages, bytes, "session archived");
        Ok(ArchiveReport {
            session: id.as_str().to_owned(),
            key,
            messages,
            bytes,
        })
    }

    /// The archive lines of a session in the hot stores, and how many messages they hold.
    async fn snapshot_lines(&self, id: &SessionId) -> Result<(Vec<String>, u64)> {
        let mut lines = vec![serde_json::to_string(&ArchiveLine::Header {
            format: 1,
            session: id.as_str().to_owned(),
        })?];
        let mut messages = 0u64;
        let mut cursor = None;
        loop {
            let page = self.export_page(id, cursor, PAGE).await?;
            for line in &page.lines {
                lines.push(serde_json::to_string(&ArchiveLine::Export(
                    serde_json::from_str(line)?,
                ))?);
            }
            messages += page.lines.len() as u64;
            match page.next {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        if let Some(kv) = &self.context_wiring().kv {
            for entry in self.context_wiring().session_keys(id) {
                if let Some(value) = kv.get(&entry).await? {
                    lines.push(serde_json::to_string(&ArchiveLine::Entry {
                        key: entry,
                        value,
                    })?);
                }
            }
        }
        for record in self.store().compactions(id).await? {
            lines.push(serde_json::to_string(&ArchiveLine::Compaction(record))?);
        }
        Ok((lines, messages.saturating_sub(1)))
    }

    /// Everything of one session as archive lines (record, messages, overlays, per-session
    /// blocks), for a logical backup; an archived session is read from its archive, not
    /// brought back. Feed the text to [`restore_snapshot`](Self::restore_snapshot).
    pub async fn session_snapshot(&self, id: &SessionId) -> Result<String> {
        if let Some(archive) = &self.archive
            && let Some(key) = archive.kv.get(&marker(id)).await?
            && let Some(body) = archive.blobs.get(&key).await?
        {
            return String::from_utf8(body)
                .map_err(|e| MemoryError::serialization(format!("archive {key}: {e}")));
        }
        let (lines, _) = self.snapshot_lines(id).await?;
        let mut text = lines.join("\n");
        text.push('\n');
        Ok(text)
    }

    /// Writes a session's archive lines into the hot stores, insert-if-absent (a second
    /// restore changes nothing). `source` names the lines in errors.
    pub async fn restore_snapshot(&self, id: &SessionId, text: &str, source: &str) -> Result<()> {
        let mut exports = Vec::new();
        let mut entries = Vec::new();
        let mut compactions = Vec::new();
        for (number, line) in text.lines().enumerate() {
            let parsed: ArchiveLine = serde_json::from_str(line)
                .map_err(|e| MemoryError::serialization(format!("{source}:{}: {e}", number + 1)))?;
            match parsed {
                ArchiveLine::Header { session, .. } if session != id.as_str() => {
                    return Err(MemoryError::invalid(format!(
                        "{source} holds session {session}, not {id}"
                    )));
                }
                ArchiveLine::Header { .. } => {}
                ArchiveLine::Export(value) => exports.push(Ok(value.to_string())),
                ArchiveLine::Entry { key, value } => entries.push((key, value)),
                ArchiveLine::Compaction(record) => compactions.push(record),
            }
        }
        self.import_lines(exports.into_iter(), &mut |_| {}).await?;
        if let Some(kv) = &self.context_wiring().kv {
            for (entry, value) in entries {
                if kv.get(&entry).await?.is_none() {
                    kv.set(&entry, &value).await?;
                }
            }
        }
        let present = self.store().compactions(id).await?;
        for record in compactions {
            let known = present.iter().any(|p| {
                p.summary == record.summary
                    && p.from_message_id == record.from_message_id
                    && p.to_message_id == record.to_message_id
            });
            if !known {
                let overlay = NewCompaction {
                    summary: record.summary,
                    from_message_id: record.from_message_id,
                    to_message_id: record.to_message_id,
                };
                self.store().add_compaction(id, overlay).await?;
            }
        }
        Ok(())
    }

    /// Archives every session not updated for `idle_millis`; returns what moved.
    pub async fn archive_idle(&self, idle_millis: i64) -> Result<Vec<ArchiveReport>> {
        let archive = self.archive_settings()?;
        let cutoff = self.now().millis().saturating_sub(idle_millis);
        let mut cold = Vec::new();
        let mut offset = 0;
        loop {
            let page = self.list(1_000, offset).await?;
            if page.is_empty() {
                break;
            }
            offset += page.len();
            for info in page {
                if info.updated_at.millis() < cutoff
                    && archive.kv.get(&marker(&info.id)).await?.is_none()
                {
                    cold.push(info.id);
                }
            }
        }
        let mut reports = Vec::with_capacity(cold.len());
        for id in cold {
            reports.push(self.archive(&id).await?);
        }
        Ok(reports)
    }

    /// True when `id` is archived (its messages are in object storage).
    pub async fn is_archived(&self, id: &SessionId) -> Result<bool> {
        match &self.archive {
            Some(archive) => Ok(archive.kv.get(&marker(id)).await?.is_some()),
            None => Ok(false),
        }
    }

    /// Brings `id` back from its archive if it is archived; true when it was.
    pub(crate) async fn rehydrate(&self, id: &SessionId) -> Result<bool> {
        let Some(archive) = &self.archive else {
            return Ok(false);
        };
        let Some(key) = archive.kv.get(&marker(id)).await? else {
            return Ok(false);
        };
        let body = archive.blobs.get(&key).await?.ok_or_else(|| {
            MemoryError::backend(
                "archive",
                format!("session {id} is archived at {key}, but that object is missing"),
            )
        })?;
        let text = String::from_utf8(body)
            .map_err(|e| MemoryError::serialization(format!("archive {key}: {e}")))?;
        // Insert-if-absent throughout: a second rehydration (two servers at once, or after
        // an interruption) changes nothing.
        self.restore_snapshot(id, &text, &key).await?;
        archive.kv.delete(&marker(id)).await?;
        archive.blobs.delete(&key).await?;
        tracing::info!(session = %id, %key, "session brought back from its archive");
        Ok(true)
    }

    fn archive_settings(&self) -> Result<&Archive> {
        self.archive.as_ref().ok_or(MemoryError::NotSupported {
            operation: "archiving sessions (no blob store wired: SessionManager::with_archive)",
            backend: "session manager",
        })
    }
}
