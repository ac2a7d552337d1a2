use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::{Metadata, MetadataFilter, Result, Timestamp};

/// The type of a long-term memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemoryKind {
    /// Something true about the world or the user; keyed, superseded by newer facts.
    Fact,
    /// Something that happened at a time.
    Event,
    /// How the agent should behave; keyed, superseded.
    Instruction,
    /// Something to do.
    Task,
}

impl MemoryKind {
    /// The stored and serialised name (`fact`, `event`, `instruction`, `task`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Fact => "fact",
            Self::Event => "event",
            Self::Instruction => "instruction",
            Self::Task => "task",
        }
    }

    /// The kind named by its stored name ([`MemoryKind::as_str`]); `None` for any other text.
    pub fn parse(name: &str) -> Option<Self> {
        [Self::Fact, Self::Event, Self::Instruction, Self::Task]
            .into_iter()
            .find(|kind| kind.as_str() == name)
    }
}

/// A typed memory with provenance, two clocks and a supersession pointer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryRecord {
    /// Identifier.
    pub id: String,
    /// Type.
    pub kind: MemoryKind,
    /// The memory itself.
    pub content: String,
    /// Normalised topic key (facts and instructions).
    pub key: Option<String>,
    /// Questions this memory answers (used for retrieval).
    pub questions: Vec<String>,
    /// Source session.
    pub session_id: Option<String>,
    /// Source raw message ids.
    pub source_message_ids: Vec<String>,
    /// First and last transcript line (0-based) of the ingest it was extracted from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_lines: Option<[u32; 2]>,
    /// When it was recorded.
    pub recorded_at: Timestamp,
    /// When it was true, if known.
    pub valid_at: Option<Timestamp>,
    /// The memory that replaced this one.
    pub superseded_by: Option<String>,
    /// Why and when it was forgotten.
    pub forgotten: Option<ForgetRequest>,
    /// The builder's own metadata (flat, bounded: [`crate::Metadata`]).
    #[serde(default, skip_serializing_if = "Metadata::is_empty")]
    pub metadata: Metadata,
    /// When it stops being current: from then on it is hidden from recall and from lists
    /// like a forgotten memory (kept for audit until purged). `None`: never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Timestamp>,
    /// Set when consolidation merged this memory into the one [`Self::superseded_by`] names
    /// (why and when); `None` for an older version of a key, or a memory never merged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged: Option<MergeNote>,
    /// The latest time the same thing was said again: the newest recording among the
    /// memories merged into this one. `None`: never confirmed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmed_at: Option<Timestamp>,
    /// The latest time recall returned it, as the engine last wrote it (it writes at most
    /// once an hour per memory). `None`: never recalled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recalled_at: Option<Timestamp>,
}

impl MemoryRecord {
    /// True when it has expired at `now` (`expires_at <= now`).
    ///
    /// ```
    /// # use memory_core::{Timestamp, ports::{MemoryKind, MemoryRecord}};
    /// let mut m = MemoryRecord::new("m1", MemoryKind::Task, "renew the passport", Timestamp(0));
    /// assert!(!m.is_expired_at(Timestamp(10)));
    /// m.expires_at = Some(Timestamp(10));
    /// assert!(m.is_expired_at(Timestamp(10)) && !m.is_expired_at(Timestamp(9)));
    /// ```
    pub fn is_expired_at(&self, now: Timestamp) -> bool {
        self.expires_at.is_some_and(|at| at <= now)
    }

    /// A memory with nothing but its id, kind, content and recording time set.
    pub fn new(
        id: impl Into<String>,
        kind: MemoryKind,
        content: impl Into<String>,
        recorded_at: Timestamp,
    ) -> Self {
        Self {
            id: id.into(),
            kind,
            content: content.into(),
            key: None,
            questions: Vec::new(),
            session_id: None,
            source_message_ids: Vec::new(),
            source_lines: None,
            recorded_at,
            valid_at: None,
            superseded_by: None,
            forgotten: None,
            metadata: Metadata::default(),
            expires_at: None,
            merged: None,
            confirmed_at: None,
            recalled_at: None,
        }
    }

    /// The latest time it was recorded or said again: `confirmed_at` when later than
    /// `recorded_at`.
    pub fn last_confirmed(&self) -> Timestamp {
        self.confirmed_at
            .map_or(self.recorded_at, |at| at.max(self.recorded_at))
    }

    /// The memory consolidation merged this one into, while this one is not forgotten:
    /// a search that finds this memory's wording stands for that one.
    ///
    /// ```
    /// # use memory_core::{Timestamp, ports::{MemoryKind, MemoryRecord, MergeNote}};
    /// let mut m = MemoryRecord::new("m1", MemoryKind::Fact, "enjoys green tea", Timestamp(0));
    /// m.superseded_by = Some("m2".into());
    /// assert_eq!(m.survivor_id(), None, "an older version of a key stands for nothing");
    /// m.merged = Some(MergeNote { reason: "the same words".into(), at: Timestamp(1) });
    /// assert_eq!(m.survivor_id(), Some("m2"));
    /// ```
    pub fn survivor_id(&self) -> Option<&str> {
        match (&self.merged, &self.forgotten) {
            (Some(_), None) => self.superseded_by.as_deref(),
            _ => None,
        }
    }

    /// Whether its wording is searched (its text document and vector are kept): when it is
    /// current, or merged into a survivor it leads recall to; never once forgotten.
    pub fn is_searchable(&self) -> bool {
        self.forgotten.is_none() && (self.superseded_by.is_none() || self.survivor_id().is_some())
    }
}

/// Why a memory was merged into another by consolidation, and when.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MergeNote {
    /// The evidence that both say the same thing, in words.
    pub reason: String,
    /// When the merge was written.
    pub at: Timestamp,
}

/// One consolidation merge: `absorbed` memories say what `survivor` says.
///
/// [`MemoryRecordStore::merge`] writes it in one write: the survivor takes the union of
/// their source messages (its own first) and, as `confirmed_at`, the latest of their
/// recording and confirmation times when later than its own; each absorbed memory is
/// superseded by the survivor with `note`. Nothing is deleted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryMerge {
    /// The memory that stays current.
    pub survivor: String,
    /// The memories merged into it (distinct, none the survivor).
    pub absorbed: Vec<String>,
    /// Why, and when.
    pub note: MergeNote,
}

impl MemoryMerge {
    /// Refuses a merge that names no absorbed memory, names one twice or names the survivor
    /// among them ([`crate::MemoryError::InvalidInput`]).
    pub fn validate(&self) -> Result<()> {
        let mut seen = std::collections::HashSet::new();
        if self.absorbed.is_empty() {
            return Err(crate::MemoryError::invalid(
                "a merge needs at least one absorbed memory",
            ));
        }
        for id in &self.absorbed {
            if id == &self.survivor || !seen.insert(id.as_str()) {
                return Err(crate::MemoryError::invalid(format!(
                    "a merge names memory {id} twice"
                )));
            }
        }
        Ok(())
    }

    /// The survivor's sources after the merge: its own, then each absorbed memory's in the
    /// order given, each id once. `survivor` and `absorbed` are the records before it.
    pub fn merged_sources(survivor: &MemoryRecord, absorbed: &[MemoryRecord]) -> Vec<String> {
        let mut seen = std::collections::HashSet::new();
        survivor
            .source_message_ids
            .iter()
            .chain(absorbed.iter().flat_map(|m| m.source_message_ids.iter()))
            .filter(|id| seen.insert(id.as_str()))
            .cloned()
            .collect()
    }

    /// The survivor's `confirmed_at` after the merge: the latest
    /// [`MemoryRecord::last_confirmed`] of the absorbed memories when later than the
    /// survivor's own, else its own `confirmed_at`.
    pub fn merged_confirmation(
        survivor: &MemoryRecord,
        absorbed: &[MemoryRecord],
    ) -> Option<Timestamp> {
        match absorbed.iter().map(MemoryRecord::last_confirmed).max() {
            Some(at) if at > survivor.last_confirmed() => Some(at),
            _ => survivor.confirmed_at,
        }
    }

    /// Checks the records a merge reads before it writes: every id found (else `NotFound`),
    /// and every one current (not superseded, not forgotten; else `Conflict`: the plan is
    /// stale). `found` holds the records of the survivor and the absorbed memories that
    /// exist, in any order.
    pub fn check_current<'a>(
        &self,
        found: &'a [MemoryRecord],
    ) -> Result<(&'a MemoryRecord, Vec<&'a MemoryRecord>)> {
        let by_id = |id: &str| {
            found
                .iter()
                .find(|m| m.id == id)
                .ok_or_else(|| crate::MemoryError::not_found("memory", id))
        };
        let current = |m: &'a MemoryRecord| {
            if m.superseded_by.is_some() || m.forgotten.is_some() {
                Err(crate::MemoryError::Conflict {
                    message: format!(
                        "memory {} is no longer current (superseded or forgotten); plan the merge again",
                        m.id
                    ),
                })
            } else {
                Ok(m)
            }
        };
        let survivor = current(by_id(&self.survivor)?)?;
        let absorbed = self
            .absorbed
            .iter()
            .map(|id| by_id(id).and_then(current))
            .collect::<Result<Vec<_>>>()?;
        Ok((survivor, absorbed))
    }
}

/// A forget marker: the memory leaves recall but is kept for audit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ForgetRequest {
    /// Why.
    pub reason: String,
    /// When.
    pub at: Timestamp,
}

/// Filters for listing memories.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct MemoryFilter {
    /// Only this type.
    pub kind: Option<MemoryKind>,
    /// Only this key.
    pub key: Option<String>,
    /// Only this session.
    pub session_id: Option<String>,
    /// Recorded at or after.
    pub from: Option<Timestamp>,
    /// Recorded before.
    pub to: Option<Timestamp>,
    /// Include superseded versions.
    pub include_superseded: bool,
    /// Include forgotten memories (and expired ones).
    pub include_forgotten: bool,
    /// The instant expiry is judged at: a memory whose `expires_at` is at or before it is
    /// left out like a forgotten one (unless `include_forgotten`). `None` judges no expiry
    /// (a memory counts as expired only once the sweep has forgotten it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_at: Option<Timestamp>,
    /// Only memories whose metadata satisfies this ([`crate::metadata_filter`]'s grammar).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<MetadataFilter>,
}

/// A page of memories with the cursor of the next page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryPage {
    /// The memories.
    pub memories: Vec<MemoryRecord>,
    /// Pass to the next `list` call; `None` at the end.
    pub next_cursor: Option<String>,
}

/// A profile's typed memories with their supersession chains.
///
/// # Contract
/// (asserted by `memory_testkit::contract::long_term_memory`)
/// - `insert_memory` refuses an existing id ([`crate::MemoryError::AlreadyExists`]).
/// - `supersede(old, new)` sets the forward pointer; nothing is deleted; `versions(key)`
///   returns the chain oldest first.
/// - `forget` hides from `list` (unless asked) and from `current_by_key`; `purge` erases.
/// - `purge` keeps the chain whole, in the same write: a memory the erased one superseded
///   now points where the erased one pointed, so erasing the current version makes its
///   predecessor current again (no pointer to an erased id remains).
/// - List cursors are opaque strings a caller passes back unchanged.
/// - `get_memories` returns what `get_memory` would for each id, in the order asked.
/// - `expires_at` is kept as given; `list` with `current_at` leaves out what expired by then
///   (unless `include_forgotten`); `expired(at)` names the memories expired by `at` and not
///   yet forgotten, earliest expiry first.
/// - `merge` writes a [`MemoryMerge`] in one write, or nothing: a missing id is `NotFound`,
///   a survivor or absorbed memory that is not current is `Conflict`. `merged_into(id)`
///   lists what was merged into `id`, oldest first.
/// - `mark_recalled` sets `recalled_at` of the stored ids it names to `at` where that is
///   later, and ignores ids that are not stored.
/// - `merged`, `confirmed_at` and `recalled_at` are kept as inserted.
#[async_trait]
pub trait MemoryRecordStore: Send + Sync {
    /// Stores a memory.
    async fn insert_memory(&self, memory: MemoryRecord) -> Result<()>;
    /// One memory.
    async fn get_memory(&self, id: &str) -> Result<Option<MemoryRecord>>;
    /// Several memories in the order of `ids`, skipping ids that are not stored; one round
    /// trip where the backend allows (this default asks one id at a time).
    async fn get_memories(&self, ids: &[String]) -> Result<Vec<MemoryRecord>> {
        let mut found = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(memory) = self.get_memory(id).await? {
                found.push(memory);
            }
        }
        Ok(found)
    }
    /// The current (not superseded, not forgotten) memory with this kind and key.
    async fn current_by_key(&self, kind: MemoryKind, key: &str) -> Result<Option<MemoryRecord>>;
    /// The current memory of each of `kinds` (distinct) with this key, in the order of
    /// `kinds` (a kind with none is left out). One read where the backend can; by default
    /// [`Self::current_by_key`] for each kind.
    async fn current_by_keys(&self, kinds: &[MemoryKind], key: &str) -> Result<Vec<MemoryRecord>> {
        let mut found = Vec::with_capacity(kinds.len());
        for kind in kinds {
            if let Some(memory) = self.current_by_key(*kind, key).await? {
                found.push(memory);
            }
        }
        Ok(found)
    }
    /// Points `old_id` at `new_id`.
    async fn supersede(&self, old_id: &str, new_id: &str) -> Result<()>;
    /// Every version of a key, oldest first.
    async fn versions(&self, kind: MemoryKind, key: &str) -> Result<Vec<MemoryRecord>>;
    /// A filtered page.
    async fn list(
        &self,
        filter: &MemoryFilter,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<MemoryPage>;
    /// Marks a memory forgotten.
    async fn forget(&self, id: &str, request: ForgetRequest) -> Result<()>;
    /// Erases a memory, relinking its chain (see the contract).
    async fn purge(&self, id: &str) -> Result<bool>;
    /// Up to `limit` ids of memories whose `expires_at` is at or before `at` and that are not
    /// forgotten, earliest expiry first: the expiry sweep's work list.
    async fn expired(&self, at: Timestamp, limit: usize) -> Result<Vec<String>>;
    /// Writes a consolidation merge in one write (see [`MemoryMerge`] and the contract).
    async fn merge(&self, merge: &MemoryMerge) -> Result<()>;
    /// The memories merged into `id` (their `merged` is set and they point at it), oldest
    /// first.
    async fn merged_into(&self, id: &str) -> Result<Vec<MemoryRecord>>;
    /// Records that recall returned these memories at `at` (see the contract).
    async fn mark_recalled(&self, ids: &[String], at: Timestamp) -> Result<()>;
}
