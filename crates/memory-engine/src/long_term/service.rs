use std::sync::Arc;

use memory_core::ports::{
    Clock, ForgetRequest, MemoryFilter, MemoryKind, MemoryPage, MemoryProfiles, MemoryRecord,
    RawMessage,
};
use memory_core::{MemoryError, Result, SessionId, UiMessage};

use super::content_id::content_id;
use super::fusion::{ChannelRank, rrf};

/// What an ingest stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IngestReport {
    /// Messages stored for the first time.
    pub new: u64,
    /// Messages already known (re-ingesting is a no-op).
    pub known: u64,
}

/// A memory to remember.
#[derive(Debug, Clone, PartialEq)]
pub struct RememberRequest {
    /// The memory text.
    pub content: String,
    /// The session it came from.
    pub session_id: Option<String>,
    /// Its type (without an LLM to classify it: a fact unless given).
    pub kind: Option<MemoryKind>,
    /// Topic key (facts and instructions with the same key supersede each other).
    pub key: Option<String>,
}

/// What a recall returns for one item.
#[derive(Debug, Clone, PartialEq)]
pub enum RecallItem {
    /// A typed memory.
    Memory(MemoryRecord),
    /// A raw message (the verbatim safety net).
    Raw {
        /// Content address.
        id: String,
        /// Session.
        session_id: String,
        /// Text.
        content: String,
    },
}

/// One recalled item with its fused score and per-channel ranks.
#[derive(Debug, Clone, PartialEq)]
pub struct RecallHit {
    /// The item.
    pub item: RecallItem,
    /// Fused score.
    pub score: f64,
    /// Ranks per channel (explain).
    pub ranks: Vec<ChannelRank>,
}

/// Channel weights in the order of the design: key highest, raw messages lowest.
const KEY_WEIGHT: f64 = 3.0;
const MEMORY_WEIGHT: f64 = 2.0;
const RAW_WEIGHT: f64 = 1.0;
const RRF_K: f64 = 60.0;

/// Long-term memory over isolated profiles.
#[derive(Clone)]
pub struct MemoryService {
    pub(super) profiles: Arc<dyn MemoryProfiles>,
    clock: Arc<dyn Clock>,
}

/// Normalises a topic key: lowercase words joined by `.` (`"User City"` → `user.city`).
pub fn normalize_key(key: &str) -> String {
    key.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(".")
}

impl MemoryService {
    /// A service over `profiles`.
    pub fn new(profiles: Arc<dyn MemoryProfiles>, clock: Arc<dyn Clock>) -> Self {
        Self { profiles, clock }
    }

    /// Stores a conversation's messages content-addressed (insert-or-ignore) and full-text
    /// indexed. Messages without text are skipped.
    pub async fn ingest(
        &self,
        profile: &str,
        session: &SessionId,
        messages: &[UiMessage],
    ) -> Result<IngestReport> {
        let store = self.profiles.open(profile).await?;
        let now = self.clock.now();
        let raw: Vec<RawMessage> = messages
            .iter()
            .filter_map(|m| {
                let text = m.text();
                (!text.trim().is_empty()).then(|| RawMessage {
                    id: content_id(session.as_str(), m.role.as_str(), &text),
                    session_id: session.to_string(),
                    role: m.role.as_str().to_owned(),
                    content: text,
                    created_at: now,
                })
            })
            .collect();
        let counts = store.insert_raw(raw).await?;
        Ok(IngestReport {
            new: counts.inserted,
            known: counts.existing,
        })
    }

    /// Stores a memory; a fact or instruction with the key of a current one supersedes it.
    pub async fn remember(&self, profile: &str, request: RememberRequest) -> Result<MemoryRecord> {
        if request.content.trim().is_empty() {
            return Err(MemoryError::invalid("a memory needs some content"));
        }
        let store = self.profiles.open(profile).await?;
        let kind = request.kind.unwrap_or(MemoryKind::Fact);
        let key = request
            .key
            .as_deref()
            .map(normalize_key)
            .filter(|k| !k.is_empty());
        let record = MemoryRecord {
            id: uuid::Uuid::now_v7().to_string(),
            kind,
            content: request.content.trim().to_owned(),
            key: key.clone(),
            questions: Vec::new(),
            session_id: request.session_id,
            source_message_ids: Vec::new(),
            recorded_at: self.clock.now(),
            valid_at: None,
            superseded_by: None,
            forgotten: None,
        };
        let previous = match (&key, kind) {
            (Some(key), MemoryKind::Fact | MemoryKind::Instruction) => {
                store.current_by_key(kind, key).await?
            }
            _ => None,
        };
        store.insert_memory(record.clone()).await?;
        if let Some(previous) = previous {
            store.supersede(&previous.id, &record.id).await?;
        }
        Ok(record)
    }

    /// A filtered page of memories.
    pub async fn list(
        &self,
        profile: &str,
        filter: &MemoryFilter,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<MemoryPage> {
        self.profiles
            .open(profile)
            .await?
            .list(filter, cursor, limit)
            .await
    }

    /// Hides a memory from recall and list; it stays for audit.
    pub async fn forget(&self, profile: &str, id: &str, reason: &str) -> Result<()> {
        let request = ForgetRequest {
            reason: reason.to_owned(),
            at: self.clock.now(),
        };
        self.profiles.open(profile).await?.forget(id, request).await
    }

    /// Erases a memory.
    pub async fn purge(&self, profile: &str, id: &str) -> Result<bool> {
        self.profiles.open(profile).await?.purge(id).await
    }

    /// Recall over the LLM-free channels: exact topic key, memory full text, raw-message full
    /// text, fused by weighted reciprocal rank (key highest, raw lowest). Every hit carries
    /// its per-channel ranks.
    pub async fn recall(&self, profile: &str, query: &str, limit: usize) -> Result<Vec<RecallHit>> {
        let store = self.profiles.open(profile).await?;
        let depth = (limit * 3).max(20);
        let key = normalize_key(query);
        let mut key_hits = Vec::new();
        if !key.is_empty() {
            for kind in [MemoryKind::Fact, MemoryKind::Instruction] {
                if let Some(m) = store.current_by_key(kind, &key).await? {
                    key_hits.push((m.id, 1.0));
                }
            }
        }
        let memory_hits = store.search_memories(query, depth).await?;
        let raw = store.search_raw(query, depth).await?;
        let raw_hits: Vec<(String, f64)> = raw
            .iter()
            .map(|h| (format!("raw:{}", h.message_id), h.score))
            .collect();
        let fused = rrf(
            RRF_K,
            &[
                ("key", KEY_WEIGHT, key_hits),
                ("memory_fts", MEMORY_WEIGHT, memory_hits),
                ("raw_fts", RAW_WEIGHT, raw_hits),
            ],
        );
        let mut out = Vec::with_capacity(limit);
        for f in fused.into_iter().take(limit) {
            let item = match f.id.strip_prefix("raw:") {
                Some(id) => match raw.iter().find(|h| h.message_id == id) {
                    Some(h) => RecallItem::Raw {
                        id: id.to_owned(),
                        session_id: h.session_id.to_string(),
                        content: h.content.clone(),
                    },
                    None => continue,
                },
                None => match store.get_memory(&f.id).await? {
                    Some(m) if m.forgotten.is_none() && m.superseded_by.is_none() => {
                        RecallItem::Memory(m)
                    }
                    _ => continue,
                },
            };
            out.push(RecallHit {
                item,
                score: f.score,
                ranks: f.ranks,
            });
        }
        Ok(out)
    }
}
