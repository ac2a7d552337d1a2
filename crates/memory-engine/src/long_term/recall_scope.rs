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
//! Raw messages are scoped the same way by the metadata they were ingested with (the store's
//! `raw_matching` names them); with none in scope, the raw channels do not run.

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

/// One side of a scope (memories or raw messages): the ids in it, when at most
/// [`MAX_LISTED`], and the estimated share of that side in it.
struct Side {
    listed: Option<HashSet<String>>,
    share: f64,
}

impl Side {
    /// Lists a side page by page (`page(cursor, limit)` gives ids and the next cursor), up
    /// to `max_listed` ids; `total` is the side's size, for the share.
    async fn list<F, Fut>(max_listed: usize, total: u64, page: F) -> Result<Self>
    where
        F: Fn(Option<String>, usize) -> Fut,
        Fut: Future<Output = Result<(Vec<String>, Option<String>)>>,
    {
        let mut listed = HashSet::new();
        let mut cursor = None;
        let complete = loop {
            let (ids, next) = page(cursor, max_listed.clamp(1, 1_000)).await?;
            listed.extend(ids);
            match next {
                Some(next) if listed.len() <= max_listed => cursor = Some(next),
                Some(_) => break false,
                None => break true,
            }
        };
        let found = listed.len().max(1) as f64;
        Ok(Self {
            share: (found / total.max(1) as f64).clamp(1e-6, 1.0),
            listed: complete.then_some(listed),
        })
    }

    /// False only when the side is listed and nothing is in it.
    fn any(&self) -> bool {
        self.listed.as_ref().is_none_or(|l| !l.is_empty())
    }
}

/// What a metadata filter admits, resolved once per recall.
pub(super) struct Scope {
    filter: MetadataFilter,
    /// The current memories that match.
    memories: Side,
    /// The raw messages that match.
    raw: Side,
}

impl Scope {
    /// Lists the current memories and the raw messages `filter` admits (`memories` and
    /// `raw` are how many the profile holds, for the shares).
    pub(super) async fn resolve(
        store: &dyn LongTermMemoryStore,
        filter: MetadataFilter,
        memories: u64,
        raw: u64,
    ) -> Result<Self> {
        Self::resolve_listing(store, filter, (memories, raw), MAX_LISTED).await
    }

    /// [`Scope::resolve`], listing at most `max_listed` ids of each side.
    async fn resolve_listing(
        store: &dyn LongTermMemoryStore,
        filter: MetadataFilter,
        (memories, raw): (u64, u64),
        max_listed: usize,
    ) -> Result<Self> {
        let wanted = MemoryFilter {
            metadata: Some(filter.clone()),
            ..MemoryFilter::default()
        };
        let memory_side = Side::list(max_listed, memories, |cursor, limit| {
            let wanted = &wanted;
            async move {
                let page = store.list(wanted, cursor, limit).await?;
                Ok((
                    page.memories.into_iter().map(|m| m.id).collect(),
                    page.next_cursor,
                ))
            }
        })
        .await?;
        let raw_side = Side::list(max_listed, raw, |cursor, limit| {
            store.raw_matching(&filter, cursor, limit)
        })
        .await?;
        Ok(Self {
            filter,
            memories: memory_side,
            raw: raw_side,
        })
    }

    /// False when no raw message is in scope (the raw channels need not run).
    pub(super) fn admits_raw(&self) -> bool {
        self.raw.any()
    }

    /// True when a loaded memory or raw message is in scope (its metadata matches).
    pub(super) fn admits_metadata(&self, metadata: &Metadata) -> bool {
        self.filter.matches(metadata)
    }

    /// The hits in scope, in their order (memory ids plain, raw ids with [`RAW_PREFIX`]).
    async fn admit(
        &self,
        store: &dyn LongTermMemoryStore,
        hits: Vec<(String, f64)>,
    ) -> Result<Vec<(String, f64)>> {
        // The candidates of a side that is not listed are loaded and checked.
        let unlisted = |side: &Side, raw: bool| -> Vec<String> {
            if side.listed.is_some() {
                return Vec::new();
            }
            hits.iter()
                .filter_map(|(id, _)| match (id.strip_prefix(RAW_PREFIX), raw) {
                    (Some(id), true) => Some(id.to_owned()),
                    (None, false) => Some(id.clone()),
                    _ => None,
                })
                .collect()
        };
        let (memory_ids, raw_ids) = (unlisted(&self.memories, false), unlisted(&self.raw, true));
        let (memories, raw) =
            futures::future::try_join(store.get_memories(&memory_ids), store.raw_by_ids(&raw_ids))
                .await?;
        let loaded_memories: HashSet<String> = memories
            .into_iter()
            .filter(|m| {
                m.superseded_by.is_none()
                    && m.forgotten.is_none()
                    && self.filter.matches(&m.metadata)
            })
            .map(|m| m.id)
            .collect();
        let loaded_raw: HashSet<String> = raw
            .into_iter()
            .filter(|m| self.filter.matches(&m.metadata))
            .map(|m| m.id)
            .collect();
        Ok(hits
            .into_iter()
            .filter(|(id, _)| match id.strip_prefix(RAW_PREFIX) {
                Some(raw_id) => match &self.raw.listed {
                    Some(listed) => listed.contains(raw_id),
                    None => loaded_raw.contains(raw_id),
                },
                None => match &self.memories.listed {
                    Some(listed) => listed.contains(id),
                    None => loaded_memories.contains(id),
                },
            })
            .collect())
    }

    /// A channel's best `depth` hits in scope: `search(k)` returns the channel's best `k`
    /// (raw messages when `raw`), asked deeper (the first time as deep as the share in scope
    /// suggests, then four times deeper) until `depth` are in scope, the channel has no
    /// more, or [`MAX_SEARCH_DEPTH`] is reached.
    pub(super) async fn within<F, Fut>(
        &self,
        store: &dyn LongTermMemoryStore,
        depth: usize,
        raw: bool,
        search: F,
    ) -> Result<Vec<(String, f64)>>
    where
        F: Fn(usize) -> Fut,
        Fut: Future<Output = Result<Vec<(String, f64)>>>,
    {
        let share = if raw {
            self.raw.share
        } else {
            self.memories.share
        };
        let first = (depth as f64 * 1.5 / share).ceil() as usize;
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
        let Some(listed) = self
            .memories
            .listed
            .as_ref()
            .filter(|l| l.len() <= EXACT_VECTORS)
        else {
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
    use memory_core::ports::{MemoryKind, MemoryProfiles, MemoryRecord, RawMessage, VectorFields};
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
                expires_at: None,
                merged: None,
                confirmed_at: None,
                recalled_at: None,
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
            let scope =
                Scope::resolve_listing(store.as_ref(), filter.clone(), (100, 0), max_listed)
                    .await
                    .unwrap();
            assert_eq!(scope.memories.listed.is_some(), max_listed == MAX_LISTED);
            assert!(!scope.admits_raw());
            let calls = Mutex::new(Vec::new());
            let hits = scope
                .within(store.as_ref(), 4, false, channel(100, &calls))
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
                .within(
                    store.as_ref(),
                    50,
                    false,
                    channel(100, &Mutex::new(Vec::new())),
                )
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
        let scope = Scope::resolve(store.as_ref(), filter, 100, 0)
            .await
            .unwrap();
        let calls = Mutex::new(Vec::new());
        let hits = scope
            .within(store.as_ref(), 4, false, channel(100, &calls))
            .await
            .unwrap();
        let ids: Vec<&str> = hits.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(ids, ["m090", "m091", "m092", "m093"]);
        // 4 × 1.5 / 10 % = 60 deep found none; four times deeper ran past the channel's end.
        assert_eq!(*calls.lock().unwrap(), [60, 240]);
    }

    #[tokio::test]
    async fn raw_messages_are_in_scope_by_the_metadata_they_were_ingested_with() {
        let store = store_of(&["a"]).await;
        let raw = |id: &str, metadata: serde_json::Value| RawMessage {
            id: id.into(),
            session_id: "s".into(),
            role: "user".into(),
            content: "text".into(),
            created_at: Timestamp(1),
            metadata: serde_json::from_value(metadata).unwrap(),
        };
        store
            .insert_raw(vec![
                raw("r1", serde_json::json!({"team": "a"})),
                raw("r2", serde_json::json!({})),
            ])
            .await
            .unwrap();
        let channel = |_k: usize| {
            std::future::ready(Ok(vec![
                ("raw:r2".to_owned(), 1.0),
                ("raw:r1".to_owned(), 0.9),
                ("m000".to_owned(), 0.5),
            ]))
        };
        for (filter, expected) in [
            (r#"{"team": "a"}"#, vec!["raw:r1", "m000"]),
            (r#"{"$not": {"team": "a"}}"#, vec!["raw:r2"]),
        ] {
            let filter = MetadataFilter::parse(filter).unwrap();
            for max_listed in [MAX_LISTED, 0] {
                let scope =
                    Scope::resolve_listing(store.as_ref(), filter.clone(), (1, 2), max_listed)
                        .await
                        .unwrap();
                assert!(scope.admits_raw());
                let hits = scope
                    .within(store.as_ref(), 5, true, channel)
                    .await
                    .unwrap();
                let ids: Vec<&str> = hits.iter().map(|(id, _)| id.as_str()).collect();
                assert_eq!(ids, expected, "{filter:?}, listing {max_listed}");
            }
        }
        let nobody = MetadataFilter::parse(r#"{"team": "z"}"#).unwrap();
        let scope = Scope::resolve(store.as_ref(), nobody, 1, 2).await.unwrap();
        assert!(
            !scope.admits_raw(),
            "nothing in scope: the raw channels need not run"
        );
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
