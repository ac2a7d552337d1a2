use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;
use memory_core::ports::{Clock, MessageStore, StoreCapabilities, SystemClock};
use memory_core::{
    AppendOutcome, CompactionRecord, MemoryError, MessagePage, NewCompaction, NewMessage, Parent,
    PathEntry, PathTail, Result, SessionId, StoredMessage, UiMessage, validate_message_id,
};

use super::lock;

/// A [`MessageStore`] in a `HashMap`, for tests and single-process prototypes.
#[derive(Default)]
pub struct InMemoryMessageStore {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    next_seq: i64,
    sessions: HashMap<SessionId, SessionData>,
}

#[derive(Default)]
struct SessionData {
    nodes: HashMap<String, Node>,
    /// The last inserted id: usually still the latest leaf, which makes linear appends O(1).
    last_leaf_hint: Option<String>,
    compactions: Vec<CompactionRecord>,
}

struct Node {
    message: UiMessage,
    json_len: u64,
    parent: Option<String>,
    seq: i64,
    /// Child ids in insertion order.
    children: Vec<String>,
}

impl InMemoryMessageStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Maps every node of the root-to-leaf path (latest leaf by default).
    fn read_path<T>(
        &self,
        session: &SessionId,
        leaf: Option<String>,
        map: impl Fn(&str, &Node) -> T,
    ) -> Result<Vec<T>> {
        let guard = lock(&self.inner);
        let Some(data) = guard.sessions.get(session) else {
            return match leaf {
                Some(id) => Err(MemoryError::not_found("message", id)),
                None => Ok(Vec::new()),
            };
        };
        let Some(leaf) = data.resolve_leaf(leaf)? else {
            return Ok(Vec::new());
        };
        Ok(data
            .path_ids(&leaf)
            .iter()
            .filter_map(|id| data.nodes.get(id).map(|n| map(id, n)))
            .collect())
    }
}

impl SessionData {
    fn latest_leaf(&self) -> Option<String> {
        if let Some(hint) = &self.last_leaf_hint
            && self.nodes.get(hint).is_some_and(|n| n.children.is_empty())
        {
            return Some(hint.clone());
        }
        self.nodes
            .iter()
            .filter(|(_, n)| n.children.is_empty())
            .max_by_key(|(_, n)| n.seq)
            .map(|(id, _)| id.clone())
    }

    fn resolve_leaf(&self, leaf: Option<String>) -> Result<Option<String>> {
        match leaf {
            Some(id) if self.nodes.contains_key(&id) => Ok(Some(id)),
            Some(id) => Err(MemoryError::not_found("message", id)),
            None => Ok(self.latest_leaf()),
        }
    }

    /// Ids from root to `leaf`, walked iteratively.
    fn path_ids(&self, leaf: &str) -> Vec<String> {
        let mut ids = Vec::new();
        let mut cursor = Some(leaf.to_owned());
        while let Some(id) = cursor {
            cursor = self.nodes.get(&id).and_then(|n| n.parent.clone());
            ids.push(id);
        }
        ids.reverse();
        ids
    }

    fn sort_children(&mut self, id: &str) {
        let seqs: HashMap<String, i64> = match self.nodes.get(id) {
            Some(node) => node
                .children
                .iter()
                .filter_map(|c| self.nodes.get(c).map(|n| (c.clone(), n.seq)))
                .collect(),
            None => return,
        };
        if let Some(node) = self.nodes.get_mut(id) {
            node.children
                .sort_by_key(|c| seqs.get(c).copied().unwrap_or(i64::MAX));
        }
    }
}

fn encoded_len(message: &UiMessage) -> Result<u64> {
    Ok(serde_json::to_vec(message)?.len() as u64)
}

#[async_trait]
impl MessageStore for InMemoryMessageStore {
    fn backend_name(&self) -> &'static str {
        "in-memory"
    }

    fn capabilities(&self) -> StoreCapabilities {
        StoreCapabilities {
            max_message_bytes: None,
        }
    }

    async fn append(
        &self,
        session: &SessionId,
        messages: Vec<NewMessage>,
    ) -> Result<Vec<AppendOutcome>> {
        for item in &messages {
            validate_message_id(&item.message.id)?;
        }
        let mut guard = lock(&self.inner);
        // Validate the whole batch before changing anything, so a failing item stores nothing.
        let mut lengths = Vec::with_capacity(messages.len());
        {
            let existing = guard.sessions.get(session);
            let mut batch_ids = std::collections::HashSet::new();
            for item in &messages {
                lengths.push(encoded_len(&item.message)?);
                let exists = existing.is_some_and(|d| d.nodes.contains_key(&item.message.id))
                    || batch_ids.contains(item.message.id.as_str());
                if exists {
                    continue;
                }
                if let Parent::Message(parent) = &item.parent {
                    let known = existing.is_some_and(|d| d.nodes.contains_key(parent));
                    if !known && !batch_ids.contains(parent.as_str()) {
                        return Err(MemoryError::not_found("parent message", parent.as_str()));
                    }
                }
                batch_ids.insert(item.message.id.as_str());
            }
        }
        let inner = &mut *guard;
        let data = inner.sessions.entry(session.clone()).or_default();
        let mut outcomes = Vec::with_capacity(messages.len());
        for (NewMessage { message, parent }, json_len) in messages.into_iter().zip(lengths) {
            if data.nodes.contains_key(&message.id) {
                outcomes.push(AppendOutcome::AlreadyExists);
                continue;
            }
            let parent_id = match parent {
                Parent::LatestLeaf => data.latest_leaf(),
                Parent::Root => None,
                Parent::Message(id) => Some(id),
            };
            inner.next_seq += 1;
            let id = message.id.clone();
            let node = Node {
                json_len,
                message,
                parent: parent_id.clone(),
                seq: inner.next_seq,
                children: Vec::new(),
            };
            if let Some(parent) = parent_id.as_ref().and_then(|p| data.nodes.get_mut(p)) {
                parent.children.push(id.clone());
            }
            data.nodes.insert(id.clone(), node);
            data.last_leaf_hint = Some(id);
            outcomes.push(AppendOutcome::Inserted { parent_id });
        }
        Ok(outcomes)
    }

    async fn update(&self, session: &SessionId, message: UiMessage) -> Result<()> {
        validate_message_id(&message.id)?;
        let json_len = encoded_len(&message)?;
        let mut guard = lock(&self.inner);
        let node = guard
            .sessions
            .get_mut(session)
            .and_then(|d| d.nodes.get_mut(&message.id))
            .ok_or_else(|| MemoryError::not_found("message", &message.id))?;
        let role = node.message.role;
        node.message = message;
        node.message.role = role;
        node.json_len = json_len;
        Ok(())
    }

    async fn delete(&self, session: &SessionId, ids: &[String]) -> Result<u64> {
        let mut guard = lock(&self.inner);
        let Some(data) = guard.sessions.get_mut(session) else {
            return Ok(0);
        };
        let mut deleted = 0;
        for id in ids {
            let Some(node) = data.nodes.remove(id) else {
                continue;
            };
            deleted += 1;
            for child in &node.children {
                if let Some(c) = data.nodes.get_mut(child) {
                    c.parent = node.parent.clone();
                }
            }
            if let Some(parent_id) = &node.parent {
                if let Some(parent) = data.nodes.get_mut(parent_id) {
                    parent.children.retain(|c| c != id);
                    parent.children.extend(node.children.iter().cloned());
                }
                data.sort_children(parent_id);
            }
        }
        Ok(deleted)
    }

    async fn clear(&self, session: &SessionId) -> Result<()> {
        lock(&self.inner).sessions.remove(session);
        Ok(())
    }

    async fn get(&self, session: &SessionId, id: &str) -> Result<Option<UiMessage>> {
        let guard = lock(&self.inner);
        Ok(guard
            .sessions
            .get(session)
            .and_then(|d| d.nodes.get(id))
            .map(|n| n.message.clone()))
    }

    async fn get_many(&self, session: &SessionId, ids: &[String]) -> Result<Vec<UiMessage>> {
        let guard = lock(&self.inner);
        let Some(data) = guard.sessions.get(session) else {
            return Ok(Vec::new());
        };
        Ok(ids
            .iter()
            .filter_map(|id| data.nodes.get(id).map(|n| n.message.clone()))
            .collect())
    }

    async fn latest_leaf(&self, session: &SessionId) -> Result<Option<String>> {
        let guard = lock(&self.inner);
        Ok(guard
            .sessions
            .get(session)
            .and_then(SessionData::latest_leaf))
    }

    async fn children(&self, session: &SessionId, id: &str) -> Result<Vec<UiMessage>> {
        let guard = lock(&self.inner);
        let data = guard.sessions.get(session);
        let node = data
            .and_then(|d| d.nodes.get(id))
            .ok_or_else(|| MemoryError::not_found("message", id))?;
        Ok(node
            .children
            .iter()
            .filter_map(|c| data.and_then(|d| d.nodes.get(c)).map(|n| n.message.clone()))
            .collect())
    }

    async fn path(&self, session: &SessionId, leaf: Option<String>) -> Result<Vec<PathEntry>> {
        self.read_path(session, leaf, |id, n| PathEntry {
            id: id.to_owned(),
            role: n.message.role,
            bytes: n.json_len,
        })
    }

    async fn latest_leaf_under(&self, session: &SessionId, id: &str) -> Result<String> {
        let guard = lock(&self.inner);
        let data = guard
            .sessions
            .get(session)
            .filter(|d| d.nodes.contains_key(id))
            .ok_or_else(|| MemoryError::not_found("message", id))?;
        // Children are always newer than their parent, so the newest message of the subtree
        // has no children.
        let mut newest = id.to_owned();
        let mut stack = vec![id.to_owned()];
        while let Some(current) = stack.pop() {
            let Some(node) = data.nodes.get(&current) else {
                continue;
            };
            if data.nodes.get(&newest).is_none_or(|n| node.seq > n.seq) {
                newest = current.clone();
            }
            stack.extend(node.children.iter().cloned());
        }
        Ok(newest)
    }

    async fn path_tail(
        &self,
        session: &SessionId,
        leaf: Option<String>,
        limit: usize,
    ) -> Result<PathTail> {
        let mut entries = self.path(session, leaf).await?;
        let total = entries.len();
        entries.drain(..total.saturating_sub(limit));
        Ok(PathTail { entries, total })
    }

    async fn forks(
        &self,
        session: &SessionId,
        ids: &[String],
    ) -> Result<std::collections::BTreeMap<String, Vec<String>>> {
        let guard = lock(&self.inner);
        let Some(data) = guard.sessions.get(session) else {
            return Ok(Default::default());
        };
        Ok(ids
            .iter()
            .filter_map(|id| {
                let node = data.nodes.get(id)?;
                (node.children.len() > 1).then(|| (id.clone(), node.children.clone()))
            })
            .collect())
    }

    async fn history(&self, session: &SessionId, leaf: Option<String>) -> Result<Vec<UiMessage>> {
        self.read_path(session, leaf, |_, n| n.message.clone())
    }

    async fn messages(
        &self,
        session: &SessionId,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<MessagePage> {
        let after = memory_core::cursor::parse_position(cursor.as_deref())?.unwrap_or(i64::MIN);
        let guard = lock(&self.inner);
        let Some(data) = guard.sessions.get(session) else {
            return Ok(MessagePage {
                messages: Vec::new(),
                next_cursor: None,
            });
        };
        let mut nodes: Vec<&Node> = data.nodes.values().filter(|n| n.seq > after).collect();
        nodes.sort_by_key(|n| n.seq);
        let more = nodes.len() > limit;
        nodes.truncate(limit);
        let next_cursor = if more {
            nodes.last().map(|n| n.seq.to_string())
        } else {
            None
        };
        Ok(MessagePage {
            messages: nodes
                .into_iter()
                .map(|n| StoredMessage {
                    message: n.message.clone(),
                    parent_id: n.parent.clone(),
                })
                .collect(),
            next_cursor,
        })
    }

    async fn add_compaction(
        &self,
        session: &SessionId,
        compaction: NewCompaction,
    ) -> Result<CompactionRecord> {
        let mut guard = lock(&self.inner);
        guard.next_seq += 1;
        let seq = guard.next_seq;
        let data = guard.sessions.entry(session.clone()).or_default();
        for id in [&compaction.from_message_id, &compaction.to_message_id] {
            if !data.nodes.contains_key(id) {
                return Err(MemoryError::not_found("message", id.as_str()));
            }
        }
        let record = CompactionRecord {
            id: format!("{seq}"),
            summary: compaction.summary,
            from_message_id: compaction.from_message_id,
            to_message_id: compaction.to_message_id,
            created_at: SystemClock.now(),
            seq,
        };
        data.compactions.push(record.clone());
        Ok(record)
    }

    async fn compactions(&self, session: &SessionId) -> Result<Vec<CompactionRecord>> {
        let guard = lock(&self.inner);
        Ok(guard
            .sessions
            .get(session)
            .map(|d| d.compactions.clone())
            .unwrap_or_default())
    }
}
