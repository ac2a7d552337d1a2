use std::collections::BTreeMap;
use std::sync::Mutex;

use async_trait::async_trait;
use memory_core::ports::SessionRegistry;
use memory_core::{
    MemoryError, NewSession, Result, SessionId, SessionInfo, SessionPatch, SessionUsage, Timestamp,
};

use super::lock;

/// Sessions by id, with their creation order.
type Sessions = BTreeMap<SessionId, (i64, SessionInfo)>;

/// A [`SessionRegistry`] in a map.
#[derive(Default)]
pub struct InMemorySessionRegistry {
    inner: Mutex<(i64, Sessions)>,
}

impl InMemorySessionRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }
}

#[async_trait]
impl SessionRegistry for InMemorySessionRegistry {
    async fn create(
        &self,
        id: &SessionId,
        spec: &NewSession,
        now: Timestamp,
    ) -> Result<SessionInfo> {
        let mut guard = lock(&self.inner);
        if guard.1.contains_key(id) {
            return Err(MemoryError::AlreadyExists {
                kind: "session",
                id: id.to_string(),
            });
        }
        guard.0 += 1;
        let info = SessionInfo {
            id: id.clone(),
            name: spec.name.clone(),
            parent_session_id: spec.parent_session_id.clone(),
            model: spec.model.clone(),
            source: spec.source.clone(),
            usage: SessionUsage::default(),
            end_reason: None,
            profile: spec.profile.clone(),
            created_at: now,
            updated_at: now,
        };
        let order = guard.0;
        guard.1.insert(id.clone(), (order, info.clone()));
        Ok(info)
    }

    async fn restore(&self, info: &SessionInfo) -> Result<bool> {
        let mut guard = lock(&self.inner);
        if guard.1.contains_key(&info.id) {
            return Ok(false);
        }
        guard.0 += 1;
        let order = guard.0;
        guard.1.insert(info.id.clone(), (order, info.clone()));
        Ok(true)
    }

    async fn get(&self, id: &SessionId) -> Result<Option<SessionInfo>> {
        Ok(lock(&self.inner).1.get(id).map(|(_, info)| info.clone()))
    }

    async fn list(&self, limit: usize, offset: usize) -> Result<Vec<SessionInfo>> {
        let guard = lock(&self.inner);
        let mut all: Vec<&(i64, SessionInfo)> = guard.1.values().collect();
        all.sort_by(|a, b| b.1.updated_at.cmp(&a.1.updated_at).then(b.0.cmp(&a.0)));
        Ok(all
            .into_iter()
            .skip(offset)
            .take(limit)
            .map(|(_, info)| info.clone())
            .collect())
    }

    async fn update(
        &self,
        id: &SessionId,
        patch: &SessionPatch,
        now: Timestamp,
    ) -> Result<SessionInfo> {
        let mut guard = lock(&self.inner);
        let (_, info) = guard
            .1
            .get_mut(id)
            .ok_or_else(|| MemoryError::not_found("session", id.as_str()))?;
        if let Some(name) = &patch.name {
            info.name = Some(name.clone());
        }
        if let Some(model) = &patch.model {
            info.model = Some(model.clone());
        }
        if let Some(reason) = &patch.end_reason {
            info.end_reason = Some(reason.clone());
        }
        if let Some(profile) = &patch.profile {
            info.profile = profile.clone();
        }
        info.updated_at = now;
        Ok(info.clone())
    }

    async fn add_usage(
        &self,
        id: &SessionId,
        usage: SessionUsage,
        now: Timestamp,
    ) -> Result<SessionInfo> {
        let mut guard = lock(&self.inner);
        let (_, info) = guard
            .1
            .get_mut(id)
            .ok_or_else(|| MemoryError::not_found("session", id.as_str()))?;
        info.usage.input_tokens += usage.input_tokens;
        info.usage.output_tokens += usage.output_tokens;
        info.usage.cost += usage.cost;
        info.updated_at = now;
        Ok(info.clone())
    }

    async fn touch(&self, id: &SessionId, now: Timestamp) -> Result<()> {
        let mut guard = lock(&self.inner);
        let (_, info) = guard
            .1
            .get_mut(id)
            .ok_or_else(|| MemoryError::not_found("session", id.as_str()))?;
        info.updated_at = now;
        Ok(())
    }

    async fn touch_and_name(
        &self,
        id: &SessionId,
        now: Timestamp,
        name: Option<String>,
    ) -> Result<()> {
        let mut guard = lock(&self.inner);
        let (_, info) = guard
            .1
            .get_mut(id)
            .ok_or_else(|| MemoryError::not_found("session", id.as_str()))?;
        info.updated_at = now;
        if info.name.is_none() {
            info.name = name;
        }
        Ok(())
    }

    async fn delete(&self, id: &SessionId) -> Result<bool> {
        Ok(lock(&self.inner).1.remove(id).is_some())
    }
}
