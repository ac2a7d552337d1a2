use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use memory_core::ports::{
    ForgetRequest, LongTermMemoryStore, MemoryFilter, MemoryKind, MemoryMerge, MemoryPage,
    MemoryProfiles, MemoryRecord, MemoryRecordStore, RawMessage, RawMessageInsert, RawMessageStore,
    TextDocument, TextFields, TextHit, TextIndex, TextIndexCapabilities, TextIndexes, TextQuery,
    VectorIndex, VectorIndexes, namespaces,
};
use memory_core::{MemoryError, Result, Timestamp};

use super::text_index::{IN_MEMORY_CAPABILITIES, rank_documents};
use super::{InMemoryJobQueue, InMemoryVectorIndex, lock};

#[derive(Default)]
struct Inner {
    /// Insertion order; a purged message leaves `None` (its content is gone).
    raw: Vec<Option<RawMessage>>,
    raw_ids: HashMap<String, usize>,
    /// Memories by insertion order (the list cursor is the position).
    memories: BTreeMap<u64, MemoryRecord>,
    positions: HashMap<String, u64>,
    next: u64,
}

/// One profile's records ([`RawMessageStore`] + [`MemoryRecordStore`]) in memory; its text
/// index ([`InMemoryProfileIndex`]) reads the same data, so it is written by the store.
#[derive(Default)]
pub struct InMemoryLongTermMemory {
    inner: Mutex<Inner>,
}

impl InMemoryLongTermMemory {
    /// An empty profile.
    pub fn new() -> Self {
        Self::default()
    }
}

fn parse_cursor(cursor: Option<&str>) -> Result<u64> {
    let position = memory_core::cursor::parse_position(cursor)?.unwrap_or(0);
    u64::try_from(position).map_err(|_| MemoryError::invalid("invalid cursor: negative position"))
}

fn matches(filter: &MemoryFilter, m: &MemoryRecord) -> bool {
    filter.kind.is_none_or(|k| k == m.kind)
        && filter
            .key
            .as_ref()
            .is_none_or(|k| m.key.as_ref() == Some(k))
        && filter
            .session_id
            .as_ref()
            .is_none_or(|s| m.session_id.as_ref() == Some(s))
        && filter.from.is_none_or(|t| m.recorded_at >= t)
        && filter.to.is_none_or(|t| m.recorded_at < t)
        && (filter.include_superseded || m.superseded_by.is_none())
        && (filter.include_forgotten || m.forgotten.is_none())
        && (filter.include_forgotten || filter.current_at.is_none_or(|t| !m.is_expired_at(t)))
        && filter
            .metadata
            .as_ref()
            .is_none_or(|f| f.matches(&m.metadata))
}

#[async_trait]
impl RawMessageStore for InMemoryLongTermMemory {
    async fn insert_raw(&self, messages: Vec<RawMessage>) -> Result<RawMessageInsert> {
        let mut inner = lock(&self.inner);
        let mut counts = RawMessageInsert::default();
        for message in messages {
            if inner.raw_ids.contains_key(&message.id) {
                counts.existing += 1;
            } else {
                let position = inner.raw.len();
                inner.raw_ids.insert(message.id.clone(), position);
                inner.raw.push(Some(message));
                counts.inserted += 1;
            }
        }
        Ok(counts)
    }

    async fn raw_page(
        &self,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<(Vec<RawMessage>, Option<String>)> {
        let start = parse_cursor(cursor.as_deref())? as usize;
        let inner = lock(&self.inner);
        let mut page = Vec::new();
        let mut end = start;
        for slot in inner.raw.iter().skip(start) {
            if page.len() == limit {
                break;
            }
            end += 1;
            if let Some(m) = slot {
                page.push(m.clone());
            }
        }
        let more = inner.raw.iter().skip(end).any(Option::is_some);
        let next = more.then(|| end.to_string());
        Ok((page, next))
    }

    async fn raw_matching(
        &self,
        filter: &memory_core::MetadataFilter,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<(Vec<String>, Option<String>)> {
        let start = parse_cursor(cursor.as_deref())? as usize;
        let inner = lock(&self.inner);
        let mut ids = Vec::new();
        let mut end = start;
        for slot in inner.raw.iter().skip(start) {
            if ids.len() == limit {
                break;
            }
            end += 1;
            if let Some(m) = slot.as_ref().filter(|m| filter.matches(&m.metadata)) {
                ids.push(m.id.clone());
            }
        }
        let more = inner
            .raw
            .iter()
            .skip(end)
            .flatten()
            .any(|m| filter.matches(&m.metadata));
        Ok((ids, more.then(|| end.to_string())))
    }

    async fn raw_by_ids(&self, ids: &[String]) -> Result<Vec<RawMessage>> {
        let inner = lock(&self.inner);
        Ok(ids
            .iter()
            .filter_map(|id| inner.raw_ids.get(id))
            .filter_map(|&i| inner.raw[i].clone())
            .collect())
    }

    async fn raw_neighbors(&self, ids: &[String], radius: usize) -> Result<Vec<RawMessage>> {
        let inner = lock(&self.inner);
        let given: std::collections::HashSet<&String> = ids.iter().collect();
        let mut picked = std::collections::BTreeSet::new();
        for id in ids {
            let Some(&at) = inner.raw_ids.get(id) else {
                continue;
            };
            let Some(session) = inner.raw[at].as_ref().map(|m| m.session_id.clone()) else {
                continue;
            };
            let same = |i: &usize| {
                inner.raw[*i]
                    .as_ref()
                    .is_some_and(|m| m.session_id == session && !given.contains(&m.id))
            };
            let before: Vec<usize> = (0..at).rev().filter(same).take(radius).collect();
            let after: Vec<usize> = (at + 1..inner.raw.len())
                .filter(same)
                .take(radius)
                .collect();
            picked.extend(before);
            picked.extend(after);
        }
        Ok(picked
            .into_iter()
            .filter_map(|i| inner.raw[i].clone())
            .collect())
    }

    async fn purge_raw(&self, ids: &[String]) -> Result<u64> {
        let mut inner = lock(&self.inner);
        let mut removed = 0;
        for id in ids {
            if let Some(i) = inner.raw_ids.remove(id) {
                inner.raw[i] = None;
                removed += 1;
            }
        }
        Ok(removed)
    }
}

#[async_trait]
impl MemoryRecordStore for InMemoryLongTermMemory {
    async fn insert_memory(&self, memory: MemoryRecord) -> Result<()> {
        let mut inner = lock(&self.inner);
        if inner.positions.contains_key(&memory.id) {
            return Err(MemoryError::AlreadyExists {
                kind: "memory",
                id: memory.id,
            });
        }
        inner.next += 1;
        let position = inner.next;
        inner.positions.insert(memory.id.clone(), position);
        inner.memories.insert(position, memory);
        Ok(())
    }

    async fn get_memory(&self, id: &str) -> Result<Option<MemoryRecord>> {
        let inner = lock(&self.inner);
        Ok(inner
            .positions
            .get(id)
            .and_then(|p| inner.memories.get(p))
            .cloned())
    }

    async fn current_by_key(&self, kind: MemoryKind, key: &str) -> Result<Option<MemoryRecord>> {
        let inner = lock(&self.inner);
        Ok(inner
            .memories
            .values()
            .rev()
            .find(|m| {
                m.kind == kind
                    && m.key.as_deref() == Some(key)
                    && m.superseded_by.is_none()
                    && m.forgotten.is_none()
            })
            .cloned())
    }

    async fn supersede(&self, old_id: &str, new_id: &str) -> Result<()> {
        let mut inner = lock(&self.inner);
        if !inner.positions.contains_key(new_id) {
            return Err(MemoryError::not_found("memory", new_id));
        }
        let position = *inner
            .positions
            .get(old_id)
            .ok_or_else(|| MemoryError::not_found("memory", old_id))?;
        if let Some(m) = inner.memories.get_mut(&position) {
            m.superseded_by = Some(new_id.to_owned());
        }
        Ok(())
    }

    async fn versions(&self, kind: MemoryKind, key: &str) -> Result<Vec<MemoryRecord>> {
        let inner = lock(&self.inner);
        Ok(inner
            .memories
            .values()
            .filter(|m| m.kind == kind && m.key.as_deref() == Some(key))
            .cloned()
            .collect())
    }

    async fn list(
        &self,
        filter: &MemoryFilter,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<MemoryPage> {
        let after = parse_cursor(cursor.as_deref())?;
        let inner = lock(&self.inner);
        let mut memories = Vec::new();
        let mut last = None;
        let mut more = false;
        for (position, m) in inner.memories.range(after + 1..) {
            if !matches(filter, m) {
                continue;
            }
            if memories.len() == limit {
                more = true;
                break;
            }
            memories.push(m.clone());
            last = Some(*position);
        }
        Ok(MemoryPage {
            memories,
            next_cursor: if more {
                last.map(|p| p.to_string())
            } else {
                None
            },
        })
    }

    async fn forget(&self, id: &str, request: ForgetRequest) -> Result<()> {
        let mut inner = lock(&self.inner);
        let position = *inner
            .positions
            .get(id)
            .ok_or_else(|| MemoryError::not_found("memory", id))?;
        if let Some(m) = inner.memories.get_mut(&position) {
            m.forgotten = Some(request);
        }
        Ok(())
    }

    async fn purge(&self, id: &str) -> Result<bool> {
        let mut inner = lock(&self.inner);
        let Some(position) = inner.positions.remove(id) else {
            return Ok(false);
        };
        let erased = inner.memories.remove(&position);
        let next = erased.as_ref().and_then(|m| m.superseded_by.clone());
        for memory in inner.memories.values_mut() {
            if memory.superseded_by.as_deref() == Some(id) {
                memory.superseded_by = next.clone();
            }
        }
        Ok(erased.is_some())
    }

    async fn expired(&self, at: Timestamp, limit: usize) -> Result<Vec<String>> {
        let inner = lock(&self.inner);
        let mut due: Vec<(Timestamp, &MemoryRecord)> = inner
            .memories
            .values()
            .filter(|m| m.forgotten.is_none())
            .filter_map(|m| m.expires_at.filter(|&e| e <= at).map(|e| (e, m)))
            .collect();
        // Stable: equal expiries keep insertion order.
        due.sort_by_key(|(e, _)| *e);
        Ok(due
            .into_iter()
            .take(limit)
            .map(|(_, m)| m.id.clone())
            .collect())
    }

    async fn merge(&self, merge: &MemoryMerge) -> Result<()> {
        merge.validate()?;
        let mut inner = lock(&self.inner);
        let found: Vec<MemoryRecord> = std::iter::once(&merge.survivor)
            .chain(&merge.absorbed)
            .filter_map(|id| inner.positions.get(id).and_then(|p| inner.memories.get(p)))
            .cloned()
            .collect();
        let (survivor, absorbed) = merge.check_current(&found)?;
        let absorbed: Vec<MemoryRecord> = absorbed.into_iter().cloned().collect();
        let sources = MemoryMerge::merged_sources(survivor, &absorbed);
        let confirmed = MemoryMerge::merged_confirmation(survivor, &absorbed);
        let position = |id: &str| inner.positions.get(id).copied();
        let updates: Vec<(Option<u64>, bool)> = std::iter::once((position(&merge.survivor), true))
            .chain(merge.absorbed.iter().map(|id| (position(id), false)))
            .collect();
        for (position, is_survivor) in updates {
            let Some(m) = position.and_then(|p| inner.memories.get_mut(&p)) else {
                continue;
            };
            if is_survivor {
                m.source_message_ids.clone_from(&sources);
                m.confirmed_at = confirmed;
            } else {
                m.superseded_by = Some(merge.survivor.clone());
                m.merged = Some(merge.note.clone());
            }
        }
        Ok(())
    }

    async fn merged_into(&self, id: &str) -> Result<Vec<MemoryRecord>> {
        let inner = lock(&self.inner);
        Ok(inner
            .memories
            .values()
            .filter(|m| m.merged.is_some() && m.superseded_by.as_deref() == Some(id))
            .cloned()
            .collect())
    }

    async fn mark_recalled(&self, ids: &[String], at: Timestamp) -> Result<()> {
        let mut inner = lock(&self.inner);
        for id in ids {
            if let Some(p) = inner.positions.get(id).copied()
                && let Some(m) = inner.memories.get_mut(&p)
                && m.recalled_at.is_none_or(|before| before < at)
            {
                m.recalled_at = Some(at);
            }
        }
        Ok(())
    }
}

/// The `raw` and `memories` namespaces of one in-memory profile, read from its store (so it
/// is written by the store: writes through this port are `NotSupported`).
pub struct InMemoryProfileIndex {
    store: Arc<InMemoryLongTermMemory>,
}

impl InMemoryProfileIndex {
    /// The index over a profile's store.
    pub fn new(store: Arc<InMemoryLongTermMemory>) -> Self {
        Self { store }
    }

    fn documents(&self, namespace: &str) -> Result<Vec<TextDocument>> {
        let inner = lock(&self.store.inner);
        match namespace {
            namespaces::RAW => Ok(inner
                .raw
                .iter()
                .flatten()
                .map(|m| {
                    TextDocument::new(&m.id, &m.content).with_fields(TextFields {
                        session: Some(m.session_id.clone()),
                        role: Some(m.role.clone()),
                        time: Some(m.created_at),
                        ..TextFields::default()
                    })
                })
                .collect()),
            namespaces::MEMORIES => Ok(inner
                .memories
                .values()
                .filter(|m| m.is_searchable())
                .map(|m| {
                    TextDocument::new(&m.id, format!("{}\n{}", m.content, m.questions.join("\n")))
                        .with_fields(TextFields {
                            session: m.session_id.clone(),
                            kind: Some(m.kind.as_str().to_owned()),
                            key: m.key.clone(),
                            time: Some(m.recorded_at),
                            ..TextFields::default()
                        })
                })
                .collect()),
            other => Err(MemoryError::invalid(format!(
                "an in-memory profile index serves \"raw\" and \"memories\", not {other:?}"
            ))),
        }
    }
}

fn written_by_store(operation: &'static str) -> MemoryError {
    MemoryError::NotSupported {
        operation,
        backend: "in-memory",
    }
}

#[async_trait]
impl TextIndex for InMemoryProfileIndex {
    fn backend_name(&self) -> &'static str {
        "in-memory"
    }

    fn capabilities(&self) -> TextIndexCapabilities {
        TextIndexCapabilities {
            written_by_store: true,
            language: memory_core::TextLanguage::English,
            ..IN_MEMORY_CAPABILITIES
        }
    }

    async fn upsert(&self, _namespace: &str, _documents: Vec<TextDocument>) -> Result<()> {
        Err(written_by_store(
            "upsert into a profile index (the profile store writes it)",
        ))
    }

    async fn delete(&self, _namespace: &str, _ids: &[String]) -> Result<u64> {
        Err(written_by_store(
            "delete from a profile index (the profile store writes it)",
        ))
    }

    async fn search(&self, namespace: &str, query: &TextQuery) -> Result<Vec<TextHit>> {
        let docs = self.documents(namespace)?;
        Ok(rank_documents(
            docs.iter()
                .map(|d| (d.id.as_str(), d.text.as_str(), &d.fields)),
            query,
        ))
    }

    async fn count(&self, namespace: &str) -> Result<u64> {
        Ok(self.documents(namespace)?.len() as u64)
    }

    async fn clear(&self, _namespace: &str) -> Result<()> {
        Err(written_by_store(
            "clear a profile index (the profile store writes it)",
        ))
    }
}

/// In-memory profiles: records ([`MemoryProfiles`]), their text indexes ([`TextIndexes`],
/// read from the records) and their vectors ([`VectorIndexes`]).
#[derive(Default)]
pub struct InMemoryProfiles {
    profiles: Mutex<BTreeMap<String, Arc<InMemoryLongTermMemory>>>,
    vectors: Mutex<BTreeMap<String, Arc<InMemoryVectorIndex>>>,
    jobs: Arc<InMemoryJobQueue>,
}

impl InMemoryProfiles {
    /// No profiles yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// A job queue that lives as long as these profiles: services built over the same
    /// profiles (a "restart") see the same jobs.
    pub fn jobs(&self) -> Arc<InMemoryJobQueue> {
        Arc::clone(&self.jobs)
    }

    fn store(&self, name: &str) -> Result<Arc<InMemoryLongTermMemory>> {
        memory_core::validate_profile_name(name)?;
        Ok(lock(&self.profiles)
            .entry(name.to_owned())
            .or_default()
            .clone())
    }
}

#[async_trait]
impl MemoryProfiles for InMemoryProfiles {
    async fn open(&self, name: &str) -> Result<Arc<dyn LongTermMemoryStore>> {
        Ok(self.store(name)?)
    }

    async fn list(&self) -> Result<Vec<String>> {
        Ok(lock(&self.profiles).keys().cloned().collect())
    }

    async fn delete(&self, name: &str) -> Result<bool> {
        Ok(lock(&self.profiles).remove(name).is_some())
    }
}

#[async_trait]
impl TextIndexes for InMemoryProfiles {
    async fn text_index(&self, profile: &str) -> Result<Arc<dyn TextIndex>> {
        Ok(Arc::new(InMemoryProfileIndex::new(self.store(profile)?)))
    }

    /// The index is read from the records: deleting the profile removes it.
    async fn delete_text_index(&self, profile: &str) -> Result<()> {
        memory_core::validate_profile_name(profile)
    }
}

#[async_trait]
impl VectorIndexes for InMemoryProfiles {
    async fn vector_index(&self, profile: &str) -> Result<Arc<dyn VectorIndex>> {
        memory_core::validate_profile_name(profile)?;
        Ok(lock(&self.vectors)
            .entry(profile.to_owned())
            .or_default()
            .clone())
    }

    async fn delete_vector_index(&self, profile: &str) -> Result<()> {
        lock(&self.vectors).remove(profile);
        Ok(())
    }
}
