//! Ingest and remember: raw messages content-addressed and stored (full-text indexed and
//! embedded), memories stored with supersession by key and vectorized.

use std::collections::HashSet;

use memory_core::ports::{
    LongTermMemoryStore, MemoryKind, MemoryRecord, RawMessage, RawMessageInsert,
};
use memory_core::{MemoryError, Result, SessionId, Timestamp, UiMessage};
use serde::Serialize;

use super::accounting::{Meter, UsageReport};
use super::content_id::occurrence_id;
use super::core::Core;
use super::degradation::Degradation;
use super::keys::normalize_key;
use super::vectorize::{MEMORY_NAMESPACE, RAW_NAMESPACE, Vectorizer, is_vectorized};

/// Repairs supersession from the stored chains: of each key's live versions (not superseded,
/// not forgotten) the newest stays current and the others point at it. Returns the ids it
/// retired. Live writes and imports share it, so both follow one rule.
pub(super) async fn settle_keys(
    store: &dyn LongTermMemoryStore,
    keys: &[(MemoryKind, String)],
) -> Result<Vec<String>> {
    let mut retired = Vec::new();
    for (kind, key) in keys {
        let live: Vec<MemoryRecord> = store
            .versions(*kind, key)
            .await?
            .into_iter()
            .filter(|m| m.superseded_by.is_none() && m.forgotten.is_none())
            .collect();
        if let Some((newest, older)) = live.split_last() {
            for old in older {
                store.supersede(&old.id, &newest.id).await?;
                retired.push(old.id.clone());
            }
        }
    }
    Ok(retired)
}

/// One message to ingest.
#[derive(Debug, Clone, PartialEq)]
pub struct IngestMessage {
    /// `user`, `assistant` or `system` (anything else is refused; put a speaker's name in
    /// the content).
    pub role: String,
    /// Text.
    pub content: String,
    /// When it was said; `None` means now.
    pub created_at: Option<Timestamp>,
    /// The builder's metadata, stored with the raw message; a memory extracted from
    /// messages carries the metadata they share (each key whose value is the same in all).
    pub metadata: memory_core::Metadata,
}

impl IngestMessage {
    /// A message said now.
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            role: role.into(),
            content: content.into(),
            created_at: None,
            metadata: memory_core::Metadata::default(),
        }
    }

    /// Sets when it was said.
    pub fn at(mut self, at: Timestamp) -> Self {
        self.created_at = Some(at);
        self
    }

    /// Sets the builder's metadata.
    pub fn with_metadata(mut self, metadata: memory_core::Metadata) -> Self {
        self.metadata = metadata;
        self
    }

    /// A UIMessage as it was said: its role, its text, and its own time (`createdAt`, else
    /// `metadata.createdAt`; RFC 3339 or epoch milliseconds). A conversation backfilled from
    /// history keeps its dates, so relative dates resolve against the right day. A time that
    /// is there but unreadable is an error, never "now".
    ///
    /// ```
    /// use memory_core::UiMessage;
    /// use memory_engine::long_term::IngestMessage;
    /// let m: UiMessage = serde_json::from_value(serde_json::json!({
    ///     "id": "m1", "role": "user", "createdAt": "2024-03-10T09:30:00Z",
    ///     "parts": [{"type": "text", "text": "I moved to Lisbon yesterday."}]
    /// })).unwrap();
    /// let ingest = IngestMessage::from_ui_message(&m).unwrap();
    /// assert_eq!(ingest.created_at.unwrap().millis(), 1_710_063_000_000);
    /// ```
    pub fn from_ui_message(message: &UiMessage) -> Result<Self> {
        let time = message
            .created_at
            .as_ref()
            .or_else(|| message.metadata.as_ref().and_then(|m| m.get("createdAt")));
        let created_at = match time {
            None | Some(serde_json::Value::Null) => None,
            Some(value) => Some(parse_message_time(value).ok_or_else(|| {
                MemoryError::invalid(format!(
                    "message {:?}: createdAt {value} is neither an RFC 3339 time nor epoch milliseconds",
                    message.id
                ))
            })?),
        };
        Ok(Self {
            role: message.role.as_str().to_owned(),
            content: message.text(),
            created_at,
            metadata: memory_core::Metadata::default(),
        })
    }
}

/// An RFC 3339 string or a number of epoch milliseconds, as the REST and MCP interfaces take
/// times (`createdAt`, `expires_at`); `None` for anything else.
///
/// ```
/// use memory_engine::long_term::parse_message_time;
/// let at = parse_message_time(&serde_json::json!("2027-01-31T00:00:00Z")).unwrap();
/// assert_eq!(parse_message_time(&serde_json::json!(at.millis())), Some(at));
/// assert_eq!(parse_message_time(&serde_json::json!("next week")), None);
/// ```
pub fn parse_message_time(value: &serde_json::Value) -> Option<Timestamp> {
    match value {
        serde_json::Value::String(s) => chrono::DateTime::parse_from_rfc3339(s)
            .ok()
            .map(|t| Timestamp(t.timestamp_millis())),
        serde_json::Value::Number(n) => n.as_i64().map(Timestamp),
        _ => None,
    }
}

/// What an ingest stored.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct IngestReport {
    /// Messages stored for the first time.
    pub new: u64,
    /// Messages already known (re-ingesting is a no-op).
    pub known: u64,
    /// Content addresses of the messages, in input order.
    pub message_ids: Vec<String>,
    /// Vectors written (raw messages and memories).
    pub vectorized: u64,
    /// LLM and embedder usage.
    pub usage: UsageReport,
    /// What did not run, and why.
    pub degraded: Vec<Degradation>,
}

/// A memory to remember.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RememberRequest {
    /// The memory text.
    pub content: String,
    /// The session it came from.
    pub session_id: Option<String>,
    /// Its type (without an LLM to classify it: a fact unless given).
    pub kind: Option<MemoryKind>,
    /// Topic key (facts and instructions with the same key supersede each other).
    pub key: Option<String>,
    /// The builder's own metadata, stored with the memory.
    pub metadata: memory_core::Metadata,
    /// When it stops being current (after now); `None`: its kind's default lifetime
    /// ([`super::KindLifetimes`]), if any.
    pub expires_at: Option<memory_core::Timestamp>,
}

/// What `remember` stored, with usage and what was degraded.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Remembered {
    /// The stored memory.
    pub memory: MemoryRecord,
    /// LLM and embedder usage.
    pub usage: UsageReport,
    /// What did not run, and why.
    pub degraded: Vec<Degradation>,
}

impl Core {
    /// Content-addresses messages (the session is part of the address). Messages without
    /// text are skipped; an unknown role is an error and nothing is stored.
    pub(super) fn raw_messages(
        &self,
        session: &str,
        messages: Vec<IngestMessage>,
    ) -> Result<Vec<RawMessage>> {
        Ok(self
            .addressed(session, messages)?
            .into_iter()
            .map(|(m, _)| m)
            .collect())
    }

    /// The raw messages of a batch, addressed by occurrence: the n-th identical utterance
    /// (same role and text) of the batch gets the n-th address. Each comes with its
    /// occurrence number and whether its time was given (not "now").
    fn addressed(
        &self,
        session: &str,
        messages: Vec<IngestMessage>,
    ) -> Result<Vec<(RawMessage, (u64, bool))>> {
        let now = self.clock.now();
        let mut seen: std::collections::HashMap<(String, String), u64> =
            std::collections::HashMap::new();
        messages
            .into_iter()
            .filter(|m| !m.content.trim().is_empty())
            .map(|m| {
                memory_core::Role::parse(&m.role)?;
                memory_core::size::check_item_size("an ingested message", m.content.len())?;
                let count = seen.entry((m.role.clone(), m.content.clone())).or_default();
                let occurrence = *count;
                *count += 1;
                Ok((
                    RawMessage {
                        id: occurrence_id(session, &m.role, &m.content, occurrence),
                        session_id: session.to_owned(),
                        role: m.role,
                        content: m.content,
                        created_at: m.created_at.unwrap_or(now),
                        metadata: m.metadata,
                    },
                    (occurrence, m.created_at.is_some()),
                ))
            })
            .collect()
    }

    /// Content-addresses and stores messages (insert-or-ignore); returns them, the ids that
    /// were already known, and the counts.
    pub(super) async fn store_raw(
        &self,
        store: &dyn LongTermMemoryStore,
        session: &str,
        messages: Vec<IngestMessage>,
    ) -> Result<(Vec<RawMessage>, HashSet<String>, RawMessageInsert)> {
        SessionId::new(session)?;
        let addressed = self.addressed(session, messages)?;
        // One read for the first-choice addresses serves both the clash check and the
        // "already known" set; a clash (rare) reads the next address alone.
        let first_ids: Vec<String> = addressed.iter().map(|(m, _)| m.id.clone()).collect();
        let mut stored_at: std::collections::HashMap<String, memory_core::Timestamp> = store
            .raw_by_ids(&first_ids)
            .await?
            .into_iter()
            .map(|m| (m.id, m.created_at))
            .collect();
        let mut raw = Vec::new();
        let mut taken: HashSet<String> = HashSet::new();
        for (mut m, (mut occurrence, dated)) in addressed {
            // A dated utterance whose address holds the same words said at another time (an
            // earlier batch of the conversation) is a later occurrence: take the next
            // address. Re-ingesting it finds its own time there, so nothing is duplicated.
            loop {
                let clash = taken.contains(&m.id)
                    || (dated && stored_at.get(&m.id).is_some_and(|at| *at != m.created_at));
                if !clash {
                    break;
                }
                occurrence += 1;
                m.id = occurrence_id(session, &m.role, &m.content, occurrence);
                if !stored_at.contains_key(&m.id) {
                    for existing in store.raw_by_ids(std::slice::from_ref(&m.id)).await? {
                        stored_at.insert(existing.id, existing.created_at);
                    }
                }
            }
            taken.insert(m.id.clone());
            raw.push(m);
        }
        let known: HashSet<String> = raw
            .iter()
            .filter(|m| stored_at.contains_key(&m.id))
            .map(|m| m.id.clone())
            .collect();
        let counts = store.insert_raw(raw.clone()).await?;
        Ok((raw, known, counts))
    }

    /// Stores a conversation's messages, LLM-free: content-addressed (insert-or-ignore), full-text
    /// indexed, and embedded when an embedder is configured. Extraction of typed memories is
    /// [`MemoryService::ingest_and_extract`]; background jobs run it in stages.
    pub(super) async fn ingest(
        &self,
        profile: &str,
        session: &SessionId,
        messages: &[UiMessage],
    ) -> Result<IngestReport> {
        // Each message keeps its own time (`createdAt`), as every ingest path does.
        let messages = messages
            .iter()
            .map(IngestMessage::from_ui_message)
            .collect::<Result<Vec<_>>>()?;
        self.ingest_messages(profile, session.as_str(), messages)
            .await
    }

    /// [`MemoryService::ingest`] for plain messages with their own timestamps.
    pub(super) async fn ingest_messages(
        &self,
        profile: &str,
        session: &str,
        messages: Vec<IngestMessage>,
    ) -> Result<IngestReport> {
        let store = self.backends.store(profile).await?;
        let (raw, known, counts) = self.store_raw(store.as_ref(), session, messages).await?;
        let message_ids: Vec<String> = raw.iter().map(|m| m.id.clone()).collect();
        let meter = self.meter(profile);
        let mut report = IngestReport {
            new: counts.inserted,
            known: counts.existing,
            message_ids,
            ..IngestReport::default()
        };
        match self
            .vectorize_raw(profile, store.as_ref(), &meter, raw, &known, false)
            .await
        {
            Ok(n) => report.vectorized = n,
            Err(e) => report.degraded.push(Degradation {
                feature: "vectors".into(),
                reason: e.to_string(),
            }),
        }
        if self.embedder.is_none() {
            report.degraded.push(Degradation {
                feature: "vectors".into(),
                reason: "no embedder configured: messages are searchable by full text only".into(),
            });
        }
        report.usage = meter.report();
        Ok(report)
    }

    /// Embeds raw messages (each with its predecessor in the conversation as context).
    pub(super) async fn vectorize_raw(
        &self,
        profile: &str,
        store: &dyn LongTermMemoryStore,
        meter: &Meter,
        raw: Vec<RawMessage>,
        known: &HashSet<String>,
        resumable: bool,
    ) -> Result<u64> {
        let Some((embedder, index)) = self.vectorizer_parts(profile).await? else {
            return Ok(0);
        };
        if raw.is_empty() {
            return Ok(0);
        }
        // The predecessor of the batch's first message, if it was stored earlier.
        let first_previous = store
            .raw_neighbors(std::slice::from_ref(&raw[0].id), 1)
            .await?
            .into_iter()
            .find(|n| !raw.iter().any(|m| m.id == n.id) && n.created_at <= raw[0].created_at);
        // Embed whatever has no vector yet (not only what was new): a crash or a failed
        // embedding call earlier leaves no message unembedded for good. A job's run may be
        // the resume of one killed halfway (`resumable`): the vectors already written are
        // the checkpoint, and only the rest is embedded.
        let ids: Vec<String> = raw.iter().map(|m| m.id.clone()).collect();
        let embedded: HashSet<String> = if known.is_empty() && !resumable {
            HashSet::new()
        } else {
            index
                .get(RAW_NAMESPACE, &ids)
                .await?
                .into_iter()
                .filter(|v| v.model == embedder.model_id())
                .map(|v| v.id)
                .collect()
        };
        let mut pairs = Vec::with_capacity(raw.len());
        let mut previous = first_previous;
        for m in raw {
            let before = previous.replace(m.clone());
            if !embedded.contains(&m.id) {
                pairs.push((before, m));
            }
        }
        let vectorizer = Vectorizer {
            embedder: embedder.as_ref(),
            index: index.as_ref(),
            meter,
            batch: self.config.embed_batch,
        };
        Ok(vectorizer.raw(&pairs).await? as u64)
    }

    /// Embeds memories that get vectors and removes the vectors of those that no longer do.
    pub(super) async fn vectorize_memories(
        &self,
        profile: &str,
        meter: &Meter,
        memories: &[MemoryRecord],
        retired: &[String],
    ) -> Result<u64> {
        let Some((embedder, index)) = self.vectorizer_parts(profile).await? else {
            return Ok(0);
        };
        if !retired.is_empty() {
            index.delete(MEMORY_NAMESPACE, retired).await?;
        }
        let vectorizer = Vectorizer {
            embedder: embedder.as_ref(),
            index: index.as_ref(),
            meter,
            batch: self.config.embed_batch,
        };
        Ok(vectorizer.memories(memories).await? as u64)
    }

    /// Stores a memory; a fact or instruction with the key of a current one supersedes it (the
    /// old version keeps a forward pointer and loses its vector).
    pub(super) async fn remember(
        &self,
        profile: &str,
        request: RememberRequest,
    ) -> Result<MemoryRecord> {
        Ok(self.remember_with_report(profile, request).await?.memory)
    }

    /// [`MemoryService::remember`], classified like an extracted memory when a classification
    /// model is configured (an explicit kind or key wins), with usage and what was degraded.
    pub(super) async fn remember_with_report(
        &self,
        profile: &str,
        request: RememberRequest,
    ) -> Result<Remembered> {
        if request.content.trim().is_empty() {
            return Err(MemoryError::invalid("a memory needs some content"));
        }
        memory_core::size::check_item_size("the memory", request.content.len())?;
        if let Some(at) = request.expires_at
            && at <= self.clock.now()
        {
            return Err(MemoryError::invalid(format!(
                "expires_at {} is not in the future (now is {})",
                at.millis(),
                self.clock.now().millis()
            )));
        }
        let meter = self.meter(profile);
        let content = request.content.trim().to_owned();
        let mut degraded = Vec::new();
        let mut classified = None;
        match self.models.classification.as_deref() {
            Some(model) => {
                let candidate = super::extraction::Candidate {
                    content: content.clone(),
                    lines: Vec::new(),
                    date: None,
                    pass: super::extraction::Pass::Full,
                };
                let mut report = super::extraction::ExtractionReport::default();
                let settings = self.effective_settings(profile).await?;
                let drafts = super::extraction::classify(
                    &meter,
                    Some(model),
                    &settings,
                    vec![candidate],
                    1,
                    &mut report,
                )
                .await;
                if report.classified == 1 {
                    classified = drafts.into_iter().next();
                } else {
                    degraded.push(Degradation {
                        feature: "classification".into(),
                        reason: format!(
                            "failed: {}; typed defaults used",
                            report.problems.join("; ")
                        ),
                    });
                }
            }
            None => degraded.push(Degradation {
                feature: "classification".into(),
                reason: "no classification model configured: typed defaults used".into(),
            }),
        }
        let kind = request
            .kind
            .or(classified.as_ref().map(|d| d.kind))
            .unwrap_or(MemoryKind::Fact);
        let key = request
            .key
            .as_deref()
            .map(normalize_key)
            .or_else(|| classified.as_ref().and_then(|d| d.key.clone()))
            .filter(|k| !k.is_empty())
            .filter(|_| {
                matches!(kind, MemoryKind::Fact | MemoryKind::Instruction) || request.key.is_some()
            });
        let now = self.clock.now();
        let categories = classified
            .as_ref()
            .map(|d| d.categories.clone())
            .unwrap_or_default();
        let record = MemoryRecord {
            id: uuid::Uuid::now_v7().to_string(),
            kind,
            content,
            key,
            questions: classified.map(|d| d.questions).unwrap_or_default(),
            session_id: request.session_id,
            source_message_ids: Vec::new(),
            source_lines: None,
            recorded_at: now,
            valid_at: None,
            superseded_by: None,
            forgotten: None,
            metadata: super::jobs::with_categories(request.metadata, &categories),
            expires_at: request
                .expires_at
                .or_else(|| self.config.lifetimes.expiry(kind, now)),
            merged: None,
            confirmed_at: None,
            recalled_at: None,
        };
        self.store_memories(profile, &meter, vec![record.clone()])
            .await?;
        Ok(Remembered {
            memory: record,
            usage: meter.report(),
            degraded,
        })
    }

    /// Inserts memories (skipping ids already stored, so a resumed job is idempotent), applies
    /// supersession by key, and vectorizes. Returns `(stored, superseded, vectorized)`.
    pub(super) async fn store_memories(
        &self,
        profile: &str,
        meter: &Meter,
        memories: Vec<MemoryRecord>,
    ) -> Result<(u64, u64, u64)> {
        let store = self.backends.store(profile).await?;
        let mut stored = 0;
        let mut fresh = Vec::new();
        let mut keys: Vec<(MemoryKind, String)> = Vec::new();
        for record in memories {
            if let (Some(key), MemoryKind::Fact | MemoryKind::Instruction) =
                (&record.key, record.kind)
                && !keys.contains(&(record.kind, key.clone()))
            {
                keys.push((record.kind, key.clone()));
            }
            if store.get_memory(&record.id).await?.is_some() {
                continue;
            }
            match store.insert_memory(record.clone()).await {
                Ok(()) => stored += 1,
                // Another worker stored it first: same id, same content.
                Err(MemoryError::AlreadyExists { .. }) => continue,
                Err(e) => return Err(e),
            }
            fresh.push(record);
        }
        // Supersession is repaired from the stored chain rather than applied once per insert,
        // so a crash between an insert and its supersede, a resumed job, or two concurrent
        // writers of one key all end with exactly one current version: the newest.
        let retired = settle_keys(store.as_ref(), &keys).await?;
        fresh.retain(|m| !retired.contains(&m.id));
        let superseded = retired.len() as u64;
        let vectorized = self
            .vectorize_memories(profile, meter, &fresh, &retired)
            .await?;
        // Another writer of the same key may have superseded a fresh memory (and deleted its
        // vector) before this writer's vector write landed. Read each one again after the
        // write: whichever of the two writers acts last removes the vector, so no superseded
        // memory keeps one.
        let mut stale = Vec::new();
        for m in &fresh {
            if let Some(now) = store.get_memory(&m.id).await?
                && !is_vectorized(&now)
            {
                stale.push(now.id);
            }
        }
        if !stale.is_empty()
            && let Some((_, index)) = self.vectorizer_parts(profile).await?
        {
            index.delete(MEMORY_NAMESPACE, &stale).await?;
        }
        Ok((stored, superseded, vectorized))
    }
}
