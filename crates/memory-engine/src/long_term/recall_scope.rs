//! A filtered recall's scope: the memories a metadata filter admits, and every channel
//! ranked inside it. Nothing is filtered after fusion, so a filtered recall still fills its
//! limit when enough memories match.
//!
//! The profile's record store evaluates the filter (in SQL on SQLite and PostgreSQL, the
//! reference evaluation in memory) and names the current memories that match. Then:
//! - the key channel keeps the keyed memories in scope;
//! - the vector channels score the vectors of the memories in scope exactly, when there are
//!   at most [`EXACT_VECTORS`] of them; with more, they search the index deeper and deeper
//!   until `depth` of their hits are in scope or the index has nothing more;
//! - the full-text channels search deeper the same way, the first search already as deep as
//!   the share of memories in scope suggests;
//! - with more than [`MAX_LISTED`] memories in scope, the ids are not listed: each candidate
//!   is loaded and checked with [`MetadataFilter::matches`].
//!
//! Raw messages carry no metadata: a filter admits them only when it admits an empty object
//! (`{"$not": …}`, `{"k": {"$exists": false}}`), and otherwise the raw channels do not run.

use std::collections::HashSet;
use std::future::Future;

use memory_core::ports::{
    LongTermMemoryStore, MemoryFilter, VectorFilter, VectorIndex, VectorRecord,
};
use memory_core::{Metadata, MetadataFilter, Result};

use super::vectorize::MEMORY_NAMESPACE;

/// With at most this many memories in scope, their vectors are scored exactly.
pub(super) const EXACT_VECTORS: usize = 4_096;
/// With more memories in scope than this, candidates are checked one by one instead of
/// against a listed set.
pub(super) const MAX_LISTED: usize = 50_000;
/// The deepest a channel searches for hits in scope.
pub(super) const MAX_SEARCH_DEPTH: usize = 100_000;
/// The prefix of raw-message ids among a recall's candidates.
pub(super) const RAW_PREFIX: &str = "raw:";

/// What a metadata filter admits, resolved once per recall.
pub(super) struct Scope {
    filter: MetadataFilter,
    /// The current memories that match, when at most [`MAX_LISTED`] do.
    listed: Option<HashSet<String>>,
    /// The filter admits raw messages (their metadata is empty).
    raw: bool,
    /// The estimated share of the profile's memories in scope, in (0, 1].
    share: f64,
}

impl Scope {
    /// Lists the current memories `filter` admits (`memories` is how many the profile
    /// holds, for the share).
    pub(super) async fn resolve(
        store: &dyn LongTermMemoryStore,
        filter: MetadataFilter,
        memories: u64,
    ) -> Result<Self> {
        Self::resolve_listing(store, filter, memories, MAX_LISTED).await
    }

    /// [`Scope::resolve`], listing at most `max_listed` ids.
    async fn resolve_listing(
        store: &dyn LongTermMemoryStore,
        filter: MetadataFilter,
        memories: u64,
        max_listed: usize,
    ) -> Result<Self> {
        let raw = filter.matches(&Metadata::default());
        let wanted = MemoryFilter {
            metadata: Some(filter.clone()),
            ..MemoryFilter::default()
        };
        let mut listed = HashSet::new();
        let mut cursor = None;
        let complete = loop {
            let page = store
                .list(&wanted, cursor, max_listed.clamp(1, 1_000))
                .await?;
            listed.extend(page.memories.into_iter().map(|m| m.id));
            match page.next_cursor {
                Some(next) if listed.len() <= max_listed => cursor = Some(next),
                Some(_) => break false,
                None => break true,
            }
        };
        let found = listed.len().max(1) as f64;
        let share = (found / memories.max(1) as f64).clamp(1e-6, 1.0);
        Ok(Self {
            filter,
            listed: complete.then_some(listed),
            raw,
            share,
        })
    }

    /// True when raw messages are in scope.
    pub(super) fn admits_raw(&self) -> bool {
        self.raw
    }

    /// True when a loaded memory is in scope (its metadata matches).
    pub(super) fn admits_metadata(&self, metadata: &Metadata) -> bool {
        self.filter.matches(metadata)
    }

    /// The hits in scope, in their order (memory ids plain, raw ids with [`RAW_PREFIX`]).
    async fn admit(
        &self,
        store: &dyn LongTermMemoryStore,
        hits: Vec<(String, f64)>,
    ) -> Result<Vec<(String, f64)>> {
        if let Some(listed) = &self.listed {
            return Ok(hits
                .into_iter()
                .filter(|(id, _)| match id.strip_prefix(RAW_PREFIX) {
                    Some(_) => self.raw,
                    None => listed.contains(id),
                })
                .collect());
        }
        let ids: Vec<String> = hits
            .iter()
            .filter(|(id, _)| !id.starts_with(RAW_PREFIX))
            .map(|(id, _)| id.clone())
            .collect();
        let admitted: HashSet<String> = store
            .get_memories(&ids)
            .await?
            .into_iter()
            .filter(|m| {
                m.superseded_by.is_none()
                    && m.forgotten.is_none()
                    && self.filter.matches(&m.metadata)
            })
            .map(|m| m.id)
            .collect();
        Ok(hits
            .into_iter()
            .filter(|(id, _)| match id.strip_prefix(RAW_PREFIX) {
                Some(_) => self.raw,
                None => admitted.contains(id),
            })
            .collect())
    }

    /// A channel's best `depth` hits in scope: `search(k)` returns the channel's best `k`,
    /// asked deeper (the first time as deep as the share in scope suggests, then four times
    /// deeper) until `depth` are in scope, the channel has no more, or
    /// [`MAX_SEARCH_DEPTH`] is reached.
    pub(super) async fn within<F, Fut>(
        &self,
        store: &dyn LongTermMemoryStore,
        depth: usize,
        search: F,
    ) -> Result<Vec<(String, f64)>>
    where
        F: Fn(usize) -> Fut,
        Fut: Future<Output = Result<Vec<(String, f64)>>>,
    {
        let first = (depth as f64 * 1.5 / self.share).ceil() as usize;
        let mut k = first.clamp(depth, MAX_SEARCH_DEPTH);
        loop {
            let hits = search(k).await?;
            let exhausted = hits.len() < k;
            let mut admitted = self.admit(store, hits).await?;
            if admitted.len() >= depth || exhausted || k >= MAX_SEARCH_DEPTH {
                admitted.truncate(depth);
                return Ok(admitted);
            }
            k = k.saturating_mul(4).min(MAX_SEARCH_DEPTH);
        }
    }

    /// The vectors of the memories in scope, when they are listed and at most
    /// [`EXACT_VECTORS`]; `None` when the index must be searched instead.
    pub(super) async fn exact_vectors(
        &self,
        index: &dyn VectorIndex,
    ) -> Result<Option<Vec<VectorRecord>>> {
        let Some(listed) = self.listed.as_ref().filter(|l| l.len() <= EXACT_VECTORS) else {
            return Ok(None);
        };
        let ids: Vec<String> = listed.iter().cloned().collect();
        let mut records = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(1_000) {
            records.extend(index.get(MEMORY_NAMESPACE, chunk).await?);
        }
        Ok(Some(records))
    }
}

/// The `depth` records nearest `query` by cosine among those `filter` passes, best first
/// (ties by id, as the indexes order them).
pub(super) fn nearest(
    records: &[VectorRecord],
    query: &[f32],
    filter: &VectorFilter,
    depth: usize,
) -> Vec<(String, f64)> {
    let query_norm = norm(query);
    let mut scored: Vec<(String, f64)> = records
        .iter()
        .filter(|r| r.vector.len() == query.len() && filter.matches(&r.fields))
        .map(|r| {
            let dot: f32 = r.vector.iter().zip(query).map(|(a, b)| a * b).sum();
            let denominator = norm(&r.vector) * query_norm;
            let cosine = if denominator > 0.0 {
                dot / denominator
            } else {
                0.0
            };
            (r.id.clone(), f64::from(cosine))
        })
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    scored.truncate(depth);
    scored
}

fn norm(vector: &[f32]) -> f32 {
    vector.iter().map(|x| x * x).sum::<f32>().sqrt()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::{Arc, Mutex};

    use memory_core::Timestamp;
    use memory_core::ports::{MemoryKind, MemoryProfiles, MemoryRecord, VectorFields};
    use memory_testkit::in_memory::InMemoryProfiles;

    use super::*;

    fn record(id: &str, vector: Vec<f32>, time: i64) -> VectorRecord {
        VectorRecord::new(id, vector, "m").with_fields(VectorFields {
            time: Some(Timestamp(time)),
            ..VectorFields::default()
        })
    }

    async fn store_of(teams: &[&str]) -> Arc<dyn LongTermMemoryStore> {
        let profiles = InMemoryProfiles::new();
        let store = profiles.open("p").await.unwrap();
        for (i, team) in teams.iter().enumerate() {
            let memory = MemoryRecord {
                id: format!("m{i:03}"),
                kind: MemoryKind::Fact,
                content: "text".into(),
                key: None,
                questions: Vec::new(),
                session_id: None,
                source_message_ids: Vec::new(),
                source_lines: None,
                recorded_at: Timestamp(i as i64),
                valid_at: None,
                superseded_by: None,
                forgotten: None,
                metadata: serde_json::from_value(serde_json::json!({ "team": team })).unwrap(),
            };
            store.insert_memory(memory).await.unwrap();
        }
        store
    }

    /// Searches of a channel whose ranking is m000, m001, …, each call logged with its `k`.
    fn channel(
        size: usize,
        calls: &Mutex<Vec<usize>>,
    ) -> impl Fn(usize) -> std::future::Ready<Result<Vec<(String, f64)>>> + '_ {
        move |k| {
            calls.lock().unwrap().push(k);
            std::future::ready(Ok((0..size.min(k))
                .map(|i| (format!("m{i:03}"), 1.0 - i as f64 / 1_000.0))
                .collect()))
        }
    }

    #[tokio::test]
    async fn a_channel_is_searched_deeper_until_its_depth_is_in_scope() {
        // Every tenth memory is team "a": 10 of 100.
        let teams: Vec<&str> = (0..100)
            .map(|i| if i % 10 == 3 { "a" } else { "b" })
            .collect();
        let store = store_of(&teams).await;
        let filter = MetadataFilter::parse(r#"{"team": "a"}"#).unwrap();
        for max_listed in [MAX_LISTED, 4] {
            let scope = Scope::resolve_listing(store.as_ref(), filter.clone(), 100, max_listed)
                .await
                .unwrap();
            assert_eq!(scope.listed.is_some(), max_listed == MAX_LISTED);
            assert!(!scope.admits_raw());
            let calls = Mutex::new(Vec::new());
            let hits = scope
                .within(store.as_ref(), 4, channel(100, &calls))
                .await
                .unwrap();
            let ids: Vec<&str> = hits.iter().map(|(id, _)| id.as_str()).collect();
            assert_eq!(
                ids,
                ["m003", "m013", "m023", "m033"],
                "listed: {max_listed}"
            );
            // The share in scope sets the first depth: deep enough at once.
            assert_eq!(calls.lock().unwrap().len(), 1, "listed: {max_listed}");
            // Asked for more than there are: every one in scope, then the channel ran out.
            let hits = scope
                .within(store.as_ref(), 50, channel(100, &Mutex::new(Vec::new())))
                .await
                .unwrap();
            assert_eq!(hits.len(), 10, "listed: {max_listed}");
        }
    }

    #[tokio::test]
    async fn a_scope_ranked_last_by_a_channel_is_found_by_searching_deeper() {
        let teams: Vec<&str> = (0..100).map(|i| if i >= 90 { "a" } else { "b" }).collect();
        let store = store_of(&teams).await;
        let filter = MetadataFilter::parse(r#"{"team": "a"}"#).unwrap();
        let scope = Scope::resolve(store.as_ref(), filter, 100).await.unwrap();
        let calls = Mutex::new(Vec::new());
        let hits = scope
            .within(store.as_ref(), 4, channel(100, &calls))
            .await
            .unwrap();
        let ids: Vec<&str> = hits.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(ids, ["m090", "m091", "m092", "m093"]);
        // 4 × 1.5 / 10 % = 60 deep found none; four times deeper ran past the channel's end.
        assert_eq!(*calls.lock().unwrap(), [60, 240]);
    }

    #[tokio::test]
    async fn raw_messages_are_in_scope_only_when_empty_metadata_matches() {
        let store = store_of(&["a"]).await;
        let not_a = MetadataFilter::parse(r#"{"$not": {"team": "a"}}"#).unwrap();
        let scope = Scope::resolve(store.as_ref(), not_a, 1).await.unwrap();
        assert!(scope.admits_raw());
        let calls = Mutex::new(Vec::new());
        let raw = |_k: usize| {
            calls.lock().unwrap().push(0);
            std::future::ready(Ok(vec![
                ("raw:x".to_owned(), 1.0),
                ("m000".to_owned(), 0.5),
            ]))
        };
        let hits = scope.within(store.as_ref(), 5, raw).await.unwrap();
        assert_eq!(hits, [("raw:x".to_owned(), 1.0)]);
    }

    #[test]
    fn nearest_ranks_by_cosine_within_the_filter() {
        let records = vec![
            record("a", vec![1.0, 0.0], 1),
            record("b", vec![0.6, 0.8], 2),
            record("c", vec![2.0, 0.1], 3),
            record("d", vec![0.0, 1.0], 4),
        ];
        let all = nearest(&records, &[1.0, 0.0], &VectorFilter::default(), 3);
        let ids: Vec<&str> = all.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(ids, ["a", "c", "b"]);
        assert!((all[0].1 - 1.0).abs() < 1e-6);
        let late = VectorFilter {
            from: Some(Timestamp(2)),
            ..VectorFilter::default()
        };
        let ids: Vec<String> = nearest(&records, &[1.0, 0.0], &late, 10)
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        assert_eq!(ids, ["c", "b", "d"]);
    }
}
