//! A profile's memories after they are stored: list, forget, purge, re-embed, and the
//! profile as a whole (list, reindex, delete).

use memory_core::ports::{ForgetRequest, MemoryFilter, MemoryPage, MemoryRecord, RawMessage};
use memory_core::{MemoryError, Result};
use serde::Serialize;

use super::accounting::UsageReport;
use super::core::Core;
use super::keys::normalize_key;
use super::vectorize::{MEMORY_NAMESPACE, RAW_NAMESPACE, Vectorizer, is_vectorized};

/// The most memories one [`MemoryService::list`] page holds.
pub const MAX_LIST_PAGE: usize = 1_000;

/// What a purge erased.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct PurgeReport {
    /// The memory existed and is gone.
    pub memory: bool,
    /// Vectors removed.
    pub vectors: u64,
    /// Source raw messages erased (only when asked).
    pub raw_messages: u64,
    /// Memories consolidation had merged into it, erased with it.
    pub absorbed: u64,
}

/// What a re-embed rebuilt.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct ReembedReport {
    /// The model the vectors now come from.
    pub model: String,
    /// Raw-message vectors.
    pub raw: u64,
    /// Memory vectors.
    pub memories: u64,
    /// Embedder usage.
    pub usage: UsageReport,
}

impl Core {
    /// Profile names, sorted.
    pub(super) async fn list_profiles(&self) -> Result<Vec<String>> {
        self.profiles.list().await
    }

    pub(super) async fn list_profiles_page(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<(Vec<String>, Option<String>)> {
        let limit = limit.max(1);
        let mut names = self
            .profiles
            .list_page(after, limit.saturating_add(1))
            .await?;
        let next = match names.len() > limit {
            true => {
                names.truncate(limit);
                names.last().cloned()
            }
            false => None,
        };
        Ok((names, next))
    }

    /// Rebuilds the profile's text index from its records (when the engine writes it; an
    /// index its store writes has nothing to rebuild, and the report says so).
    pub(super) async fn reindex_text(&self, profile: &str) -> Result<crate::ReindexReport> {
        self.backends.reindex(profile).await
    }

    /// Deletes every trace of a profile (jobs, vectors, text index, records); true if it
    /// existed.
    pub(super) async fn delete_profile(&self, profile: &str) -> Result<bool> {
        self.backends.delete_profile(profile).await
    }

    /// A filtered page of memories: at most `limit`, and never more than [`MAX_LIST_PAGE`]
    /// (follow the cursor for more).
    pub(super) async fn list(
        &self,
        profile: &str,
        filter: &MemoryFilter,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<MemoryPage> {
        // Keys are stored normalised (`remember` normalises them): so is the filter's. Expiry
        // is judged now unless the caller chose the instant (the sweep may not have run yet).
        let filter = &MemoryFilter {
            key: filter.key.as_deref().map(normalize_key),
            current_at: filter.current_at.or(Some(self.clock.now())),
            ..filter.clone()
        };
        self.backends
            .existing_store(profile)
            .await?
            .list(filter, cursor, limit.min(MAX_LIST_PAGE))
            .await
    }

    /// Hides a memory, and what consolidation merged into it, from recall and list (and
    /// removes their vectors); they stay for audit.
    pub(super) async fn forget(&self, profile: &str, id: &str, reason: &str) -> Result<()> {
        let request = ForgetRequest {
            reason: reason.to_owned(),
            at: self.clock.now(),
        };
        let store = self.backends.existing_store(profile).await?;
        store.forget(id, request.clone()).await?;
        let absorbed = absorbed_by(store.as_ref(), id).await?;
        for memory in &absorbed {
            if memory.forgotten.is_none() {
                store.forget(&memory.id, request.clone()).await?;
            }
        }
        let ids: Vec<String> = std::iter::once(id.to_owned())
            .chain(absorbed.into_iter().map(|m| m.id))
            .collect();
        self.backends
            .vector_index(profile)
            .await?
            .delete(MEMORY_NAMESPACE, &ids)
            .await?;
        self.drop_contradictions_citing(profile, &ids).await?;
        self.drop_digest_citing(profile, &ids).await
    }

    /// Erases a memory and its vector and, when `with_sources`, the raw messages it was
    /// extracted from (and their vectors): the right to erasure.
    pub(super) async fn purge(
        &self,
        profile: &str,
        id: &str,
        with_sources: bool,
    ) -> Result<PurgeReport> {
        let store = self.backends.existing_store(profile).await?;
        let vectors = self.backends.vector_index(profile).await?;
        let memory = store.get_memory(id).await?;
        // What was merged into it goes first, the most deeply merged first: each is
        // superseded, so erasing it relinks nothing that stays.
        let absorbed = absorbed_by(store.as_ref(), id).await?;
        let mut absorbed_vectors = 0;
        for merged in absorbed.iter().rev() {
            self.scrub_jobs(profile, &[], merged).await?;
            absorbed_vectors += vectors
                .delete(MEMORY_NAMESPACE, std::slice::from_ref(&merged.id))
                .await?;
            store.purge(&merged.id).await?;
        }
        if let Some(m) = &memory {
            let sources: &[String] = if with_sources {
                &m.source_message_ids
            } else {
                &[]
            };
            self.scrub_jobs(profile, sources, m).await?;
        }
        // Vectors first: the store's erasure is the last write (adapters may compact after it).
        let mut report = PurgeReport {
            vectors: absorbed_vectors + vectors.delete(MEMORY_NAMESPACE, &[id.to_owned()]).await?,
            absorbed: absorbed.len() as u64,
            ..PurgeReport::default()
        };
        if with_sources && let Some(m) = &memory {
            report.vectors += vectors.delete(RAW_NAMESPACE, &m.source_message_ids).await?;
            report.raw_messages = store.purge_raw(&m.source_message_ids).await?;
        }
        let erased: Vec<String> = std::iter::once(id.to_owned())
            .chain(absorbed.iter().map(|m| m.id.clone()))
            .collect();
        self.drop_digest_citing(profile, &erased).await?;
        self.drop_contradictions_citing(profile, &erased).await?;
        report.memory = store.purge(id).await?;
        // Erasing the current version made its predecessor current again (the store relinks
        // the chain): it gets its vector back, as a current memory has one.
        if let Some(m) = &memory
            && m.superseded_by.is_none()
            && let Some(key) = &m.key
            && let Some(restored) = store.current_by_key(m.kind, key).await?
        {
            self.vectorize_memories(profile, &self.meter(profile), &[restored], &[])
                .await?;
        }
        Ok(report)
    }

    /// Rebuilds every vector of the profile with the current embedder (after a model change).
    pub(super) async fn reembed(&self, profile: &str) -> Result<ReembedReport> {
        let Some((embedder, index)) = self.vectorizer_parts(profile).await? else {
            return Err(MemoryError::invalid(
                "reembed needs an embedder; none is configured",
            ));
        };
        let store = self.backends.existing_store(profile).await?;
        let meter = self.meter(profile);
        index.clear(RAW_NAMESPACE).await?;
        index.clear(MEMORY_NAMESPACE).await?;
        let vectorizer = Vectorizer {
            embedder: embedder.as_ref(),
            index: index.as_ref(),
            meter: &meter,
            batch: self.config.embed_batch,
        };
        let mut report = ReembedReport {
            model: embedder.model_id().to_owned(),
            ..ReembedReport::default()
        };
        let mut last_in_session: std::collections::HashMap<String, RawMessage> =
            std::collections::HashMap::new();
        let mut cursor = None;
        loop {
            let (page, next) = store.raw_page(cursor, 512).await?;
            let pairs: Vec<(Option<RawMessage>, RawMessage)> = page
                .into_iter()
                .map(|m| {
                    let previous = last_in_session.insert(m.session_id.clone(), m.clone());
                    (previous, m)
                })
                .collect();
            report.raw += vectorizer.raw(&pairs).await? as u64;
            match next {
                Some(n) => cursor = Some(n),
                None => break,
            }
        }
        let mut cursor = None;
        loop {
            // Superseded ones too: a memory merged into another keeps its vector.
            let filter = MemoryFilter {
                include_superseded: true,
                ..MemoryFilter::default()
            };
            let page = store.list(&filter, cursor, 512).await?;
            let memories: Vec<MemoryRecord> =
                page.memories.into_iter().filter(is_vectorized).collect();
            report.memories += vectorizer.memories(&memories).await? as u64;
            match page.next_cursor {
                Some(n) => cursor = Some(n),
                None => break,
            }
        }
        report.usage = meter.report();
        Ok(report)
    }
}

/// Every memory consolidation merged into `id`, and into those, breadth first (what was
/// merged into `id` first). A memory is listed once however the merges link.
async fn absorbed_by(
    store: &dyn memory_core::ports::LongTermMemoryStore,
    id: &str,
) -> Result<Vec<MemoryRecord>> {
    let mut seen = std::collections::HashSet::from([id.to_owned()]);
    let mut out: Vec<MemoryRecord> = Vec::new();
    let mut next = 0;
    let mut current = id.to_owned();
    loop {
        for memory in store.merged_into(&current).await? {
            if seen.insert(memory.id.clone()) {
                out.push(memory);
            }
        }
        match out.get(next) {
            Some(memory) => {
                current = memory.id.clone();
                next += 1;
            }
            None => return Ok(out),
        }
    }
}
