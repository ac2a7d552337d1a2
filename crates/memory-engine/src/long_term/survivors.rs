//! Hits on merged memories stand for their survivors.
//!
//! A memory consolidation merged into another keeps its text document and its vector
//! ([`MemoryRecord::is_searchable`]), so the wording it brought still finds what it said.
//! Recall returns the survivor in its place, once, at the best rank either of them reached:
//! a profile searches as well after consolidation as before it, and its top 10 holds more
//! distinct memories.

use std::collections::{BTreeSet, HashMap};

use memory_core::Result;
use memory_core::ports::{LongTermMemoryStore, MemoryRecord};

/// The most merges followed from one hit (a survivor may be merged by a later run in turn).
const MOST_HOPS: usize = 8;

/// What each of `loaded` that was merged into another ([`MemoryRecord::survivor_id`])
/// stands for, by its id: its survivor, followed through later merges. One that leads to a
/// memory that is gone, or through more than [`MOST_HOPS`] merges, is left out: it stands
/// for nothing. The survivors are returned as stored (current or not: the caller judges).
pub(super) async fn survivors<'a>(
    store: &dyn LongTermMemoryStore,
    loaded: impl IntoIterator<Item = &'a MemoryRecord>,
) -> Result<HashMap<String, MemoryRecord>> {
    let mut pointing: Vec<(String, String)> = loaded
        .into_iter()
        .filter_map(|m| Some((m.id.clone(), m.survivor_id()?.to_owned())))
        .collect();
    let mut found = HashMap::new();
    for _ in 0..MOST_HOPS {
        if pointing.is_empty() {
            break;
        }
        let ids: Vec<String> = pointing
            .iter()
            .map(|(_, to)| to.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let read: HashMap<String, MemoryRecord> = store
            .get_memories(&ids)
            .await?
            .into_iter()
            .map(|m| (m.id.clone(), m))
            .collect();
        let mut further = Vec::new();
        for (from, to) in pointing {
            let Some(memory) = read.get(&to) else {
                continue;
            };
            match memory.survivor_id() {
                Some(next) => further.push((from, next.to_owned())),
                None => {
                    found.insert(from, memory.clone());
                }
            }
        }
        pointing = further;
    }
    Ok(found)
}

/// The memory a loaded hit stands for: itself, or when it was merged into another, its
/// survivor from [`survivors`] (`None` when it stands for nothing).
pub(super) fn stands_for(
    memory: MemoryRecord,
    survivors: &HashMap<String, MemoryRecord>,
) -> Option<MemoryRecord> {
    match memory.survivor_id() {
        Some(_) => survivors.get(&memory.id).cloned(),
        None => Some(memory),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memory_core::Timestamp;
    use memory_core::ports::{MemoryKind, MemoryMerge, MemoryRecordStore, MergeNote};
    use memory_testkit::in_memory::InMemoryLongTermMemory;

    fn fact(id: &str) -> MemoryRecord {
        MemoryRecord::new(
            id,
            MemoryKind::Fact,
            format!("likes tea ({id})"),
            Timestamp(1),
        )
    }

    async fn merge(store: &InMemoryLongTermMemory, survivor: &str, absorbed: &[&str]) {
        store
            .merge(&MemoryMerge {
                survivor: survivor.into(),
                absorbed: absorbed.iter().map(|s| (*s).to_owned()).collect(),
                note: MergeNote {
                    reason: "the same words".into(),
                    at: Timestamp(2),
                },
            })
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn a_merged_hit_leads_through_later_merges_to_the_last_survivor() {
        let store = InMemoryLongTermMemory::default();
        for id in ["a", "b", "c", "key-old", "key-new"] {
            store.insert_memory(fact(id)).await.unwrap();
        }
        merge(&store, "b", &["a"]).await;
        merge(&store, "c", &["b"]).await;
        store.supersede("key-old", "key-new").await.unwrap();
        let loaded = store
            .get_memories(&["a".into(), "b".into(), "c".into(), "key-old".into()])
            .await
            .unwrap();
        let found = survivors(&store, &loaded).await.unwrap();
        let ids: BTreeSet<(&str, &str)> = found
            .iter()
            .map(|(from, m)| (from.as_str(), m.id.as_str()))
            .collect();
        assert_eq!(
            ids,
            BTreeSet::from([("a", "c"), ("b", "c")]),
            "an older version of a key stands for nothing but itself"
        );
        let kept: Vec<Option<String>> = loaded
            .into_iter()
            .map(|m| stands_for(m, &found).map(|m| m.id))
            .collect();
        assert_eq!(
            kept,
            [
                Some("c".into()),
                Some("c".into()),
                Some("c".into()),
                Some("key-old".into())
            ]
        );
    }

    #[tokio::test]
    async fn a_forgotten_or_missing_survivor_is_not_followed_past() {
        let store = InMemoryLongTermMemory::default();
        for id in ["a", "b"] {
            store.insert_memory(fact(id)).await.unwrap();
        }
        merge(&store, "b", &["a"]).await;
        let forget = memory_core::ports::ForgetRequest {
            reason: "asked".into(),
            at: Timestamp(3),
        };
        store.forget("b", forget).await.unwrap();
        // Restored without its survivor.
        let orphan = MemoryRecord {
            superseded_by: Some("gone".into()),
            merged: Some(MergeNote {
                reason: "the same words".into(),
                at: Timestamp(2),
            }),
            ..fact("x")
        };
        store.insert_memory(orphan).await.unwrap();
        let loaded = store.get_memories(&["a".into(), "x".into()]).await.unwrap();
        let found = survivors(&store, &loaded).await.unwrap();
        assert_eq!(
            found.get("a").map(|m| m.forgotten.is_some()),
            Some(true),
            "the forgotten survivor is returned as stored, for the caller to skip"
        );
        assert!(
            !found.contains_key("x"),
            "a missing survivor stands for nothing"
        );
        let x = loaded.into_iter().find(|m| m.id == "x").unwrap();
        assert_eq!(stands_for(x, &found), None);
    }
}
