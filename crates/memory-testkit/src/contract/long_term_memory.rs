//! Contract of [`LongTermMemoryStore`] ([`RawMessageStore`](memory_core::ports::RawMessageStore)
//! + [`MemoryRecordStore`](memory_core::ports::MemoryRecordStore)) and [`MemoryProfiles`].
//!
//! A backend whose profile text index is written by the store (the index's capabilities say
//! `written_by_store`) passes its [`TextIndexes`]: the checks then also assert that the index
//! follows every write. Other indexes are kept in step by the engine and tested there.

use memory_core::ports::{
    ForgetRequest, LongTermMemoryStore, MemoryFilter, MemoryKind, MemoryMerge, MemoryProfiles,
    MemoryRecord, MergeNote, RawMessage, TextIndex, TextIndexes, TextQuery, namespaces,
};
use memory_core::{MemoryError, SearchMode, Timestamp};

use super::unique;

/// Runs every check on a fresh profile from `profiles`, then the profile checks.
/// `store_written` is the backend's [`TextIndexes`] when the store writes them.
pub async fn run_all(profiles: &dyn MemoryProfiles, store_written: Option<&dyn TextIndexes>) {
    let name = unique("profile");
    let store = profiles.open(&name).await.unwrap();
    let index = match store_written {
        Some(indexes) => {
            let index = indexes.text_index(&name).await.unwrap();
            assert!(index.capabilities().written_by_store);
            Some(index)
        }
        None => None,
    };
    let index = index.as_deref();
    raw_messages_are_insert_or_ignore_and_searchable(store.as_ref(), index).await;
    supersession_keeps_every_version(store.as_ref(), index).await;
    list_filters_and_pages(store.as_ref()).await;
    forget_hides_and_purge_erases(store.as_ref(), index).await;
    purge_keeps_the_chain_whole(store.as_ref()).await;
    get_memories_follows_the_order_asked(store.as_ref()).await;
    metadata_is_kept_as_given(store.as_ref()).await;
    metadata_filters_select_what_the_grammar_says(store.as_ref()).await;
    let selective_name = unique("profile");
    a_filter_selecting_one_percent_of_100_000_memories(
        profiles.open(&selective_name).await.unwrap().as_ref(),
    )
    .await;
    let expiry_name = unique("profile");
    expiry_is_kept_judged_and_listed_for_the_sweep(
        profiles.open(&expiry_name).await.unwrap().as_ref(),
    )
    .await;
    let raw_name = unique("profile");
    raw_metadata_is_kept_and_selected(profiles.open(&raw_name).await.unwrap().as_ref()).await;
    let merge_name = unique("profile");
    let merge_index = match store_written {
        Some(indexes) => Some(indexes.text_index(&merge_name).await.unwrap()),
        None => None,
    };
    merge_is_one_write_and_keeps_provenance(
        profiles.open(&merge_name).await.unwrap().as_ref(),
        merge_index.as_deref(),
    )
    .await;
    let recalled_name = unique("profile");
    recall_times_only_move_forward(profiles.open(&recalled_name).await.unwrap().as_ref()).await;
    let fresh_name = unique("profile");
    let fresh = profiles.open(&fresh_name).await.unwrap();
    let fresh_index = match store_written {
        Some(indexes) => Some(indexes.text_index(&fresh_name).await.unwrap()),
        None => None,
    };
    raw_lookup_neighbours_and_erasure(fresh.as_ref(), fresh_index.as_deref()).await;
    profiles_are_isolated(profiles).await;
}

/// Ids of the any-word matches of `text` in a namespace, best first (`None` without an index).
async fn any_word_ids(
    index: Option<&dyn TextIndex>,
    namespace: &str,
    text: &str,
) -> Option<Vec<String>> {
    let index = index?;
    let query = TextQuery::new(text, 10).mode(SearchMode::AnyWords);
    let hits = index.search(namespace, &query).await.unwrap();
    Some(hits.into_iter().map(|h| h.id).collect())
}

/// `raw_by_ids` keeps the asked order; `raw_neighbors` stays in the session and excludes the
/// given ids; `raw_neighbors_each` answers each id as `raw_neighbors` would alone; `purge_raw`
/// erases from reads and search.
pub async fn raw_lookup_neighbours_and_erasure(
    store: &dyn LongTermMemoryStore,
    index: Option<&dyn TextIndex>,
) {
    let raw = |id: &str, session: &str, text: &str| RawMessage {
        id: id.into(),
        session_id: session.into(),
        role: "user".into(),
        content: text.into(),
        created_at: Timestamp(1),
        metadata: Default::default(),
    };
    store
        .insert_raw(vec![
            raw("a1", "a", "alpha one"),
            raw("b1", "b", "beta one"),
            raw("a2", "a", "alpha two"),
            raw("a3", "a", "alpha three"),
            raw("b2", "b", "beta two"),
            raw("a4", "a", "alpha four"),
            raw("a5", "a", "alpha five"),
        ])
        .await
        .unwrap();
    let ids = |v: Vec<RawMessage>| v.into_iter().map(|m| m.id).collect::<Vec<_>>();
    let found = store
        .raw_by_ids(&["a3".into(), "missing".into(), "b1".into()])
        .await
        .unwrap();
    assert_eq!(ids(found), ["a3", "b1"]);
    let near = store.raw_neighbors(&["a3".into()], 1).await.unwrap();
    assert_eq!(ids(near), ["a2", "a4"]);
    let near = store
        .raw_neighbors(&["a3".into(), "a4".into()], 2)
        .await
        .unwrap();
    assert_eq!(ids(near), ["a1", "a2", "a5"]);
    assert!(
        store
            .raw_neighbors(&["a3".into()], 0)
            .await
            .unwrap()
            .is_empty()
    );
    // Each id's own context, in the asked order: a3 and a4 are each other's neighbours here.
    let asked: Vec<String> = ["a3", "missing", "a4", "b2", "a3"].map(String::from).into();
    let each = store.raw_neighbors_each(&asked, 1).await.unwrap();
    let each: Vec<Vec<String>> = each.into_iter().map(ids).collect();
    assert_eq!(
        each,
        [
            vec!["a2", "a4"],
            vec![],
            vec!["a3", "a5"],
            vec!["b1"],
            vec!["a2", "a4"]
        ]
    );
    for (id, found) in asked.iter().zip(&each) {
        let one = store
            .raw_neighbors(std::slice::from_ref(id), 1)
            .await
            .unwrap();
        assert_eq!(
            &ids(one),
            found,
            "raw_neighbors_each agrees with raw_neighbors"
        );
    }
    let wide = store.raw_neighbors_each(&asked[..1], 3).await.unwrap();
    assert_eq!(ids(wide[0].clone()), ["a1", "a2", "a4", "a5"]);
    let none = store.raw_neighbors_each(&asked, 0).await.unwrap();
    assert_eq!(none.len(), asked.len());
    assert!(none.iter().all(Vec::is_empty));
    assert!(store.raw_neighbors_each(&[], 1).await.unwrap().is_empty());
    assert_eq!(
        store.purge_raw(&["a2".into(), "zz".into()]).await.unwrap(),
        1
    );
    assert!(store.raw_by_ids(&["a2".into()]).await.unwrap().is_empty());
    if let Some(ids) = any_word_ids(index, namespaces::RAW, "two").await {
        assert!(
            !ids.contains(&"a2".to_owned()),
            "a purged message is never found"
        );
    }
    let near = store.raw_neighbors(&["a3".into()], 1).await.unwrap();
    assert_eq!(ids(near), ["a1", "a4"]);
    let each = store.raw_neighbors_each(&["a3".into()], 1).await.unwrap();
    assert_eq!(
        ids(each[0].clone()),
        ["a1", "a4"],
        "a purged message is no one's context"
    );
    let (page, _) = store.raw_page(None, 100).await.unwrap();
    assert_eq!(page.len(), 6);
}

fn memory(id: &str, kind: MemoryKind, key: Option<&str>, content: &str, at: i64) -> MemoryRecord {
    MemoryRecord {
        id: id.into(),
        kind,
        content: content.into(),
        key: key.map(str::to_owned),
        questions: vec![format!("what about {content}?")],
        session_id: Some("s1".into()),
        source_message_ids: vec!["r1".into()],
        source_lines: None,
        recorded_at: Timestamp(at),
        valid_at: Some(Timestamp(at - 1_000)),
        superseded_by: None,
        forgotten: None,
        metadata: Default::default(),
        expires_at: None,
        merged: None,
        confirmed_at: None,
        recalled_at: None,
    }
}

/// Known raw ids are ignored and counted; raw messages are full-text searchable.
pub async fn raw_messages_are_insert_or_ignore_and_searchable(
    store: &dyn LongTermMemoryStore,
    index: Option<&dyn TextIndex>,
) {
    let raw = |id: &str, text: &str| RawMessage {
        id: id.into(),
        session_id: "s1".into(),
        role: "user".into(),
        content: text.into(),
        created_at: Timestamp(1),
        metadata: Default::default(),
    };
    let first = store
        .insert_raw(vec![
            raw("r1", "I moved to Lisbon in March"),
            raw("r2", "My dog is called Miso"),
        ])
        .await
        .unwrap();
    assert_eq!((first.inserted, first.existing), (2, 0));
    let again = store
        .insert_raw(vec![
            raw("r1", "I moved to Lisbon in March"),
            raw("r3", "Prices went up"),
        ])
        .await
        .unwrap();
    assert_eq!((again.inserted, again.existing), (1, 1));
    let (page, next) = store.raw_page(None, 2).await.unwrap();
    assert_eq!(
        page.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(),
        ["r1", "r2"]
    );
    let (rest, end) = store.raw_page(next, 2).await.unwrap();
    assert_eq!(
        rest.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(),
        ["r3"]
    );
    assert_eq!(end, None);
    assert_eq!(page[0].content, "I moved to Lisbon in March");
    let Some(index) = index else { return };
    let hits = index
        .search(namespaces::RAW, &TextQuery::new("lisbon march", 10))
        .await
        .unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].id, "r1");
    assert_eq!(hits[0].text, "I moved to Lisbon in March");
    assert_eq!(hits[0].fields.session.as_deref(), Some("s1"));
    assert_eq!(hits[0].fields.role.as_deref(), Some("user"));
    assert!(
        any_word_ids(Some(index), namespaces::RAW, "\"(")
            .await
            .unwrap_or_default()
            .is_empty()
    );
    // Any word may match; more matching words rank higher.
    let ids = any_word_ids(Some(index), namespaces::RAW, "prices lisbon")
        .await
        .unwrap_or_default();
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert!(ids.contains(&"r1".to_owned()) && ids.contains(&"r3".to_owned()));
    let ids = any_word_ids(Some(index), namespaces::RAW, "prices went up")
        .await
        .unwrap_or_default();
    assert_eq!(ids[0], "r3");
    assert_eq!(index.count(namespaces::RAW).await.unwrap(), 3);
}

/// A memory's metadata comes back from every read exactly as stored: integers exact,
/// floats, booleans, strings with quotes and non-ASCII text, lists; none stays none.
pub async fn metadata_is_kept_as_given(store: &dyn LongTermMemoryStore) {
    let metadata: memory_core::Metadata = serde_json::from_value(serde_json::json!({
        "project": "atlas \"north\" \u{e9}t\u{e9}",
        "priority": 9_007_199_254_740_993_u64,
        "score": -0.25,
        "done": false,
        "tags": ["a", "b c"],
    }))
    .unwrap();
    let mut with = memory("meta1", MemoryKind::Fact, None, "metadata kept", 1);
    with.metadata = metadata.clone();
    store.insert_memory(with.clone()).await.unwrap();
    store
        .insert_memory(memory("meta2", MemoryKind::Fact, None, "no metadata", 2))
        .await
        .unwrap();
    assert_eq!(store.get_memory("meta1").await.unwrap().unwrap(), with);
    let both = store
        .get_memories(&["meta1".to_owned(), "meta2".to_owned()])
        .await
        .unwrap();
    assert_eq!(both[0].metadata, metadata);
    assert!(both[1].metadata.is_empty());
    let listed = store
        .list(&MemoryFilter::default(), None, 1_000)
        .await
        .unwrap();
    let found = listed.memories.iter().find(|m| m.id == "meta1").unwrap();
    assert_eq!(found.metadata, metadata);
}

/// Every operator of the metadata filter grammar selects, through `list`, exactly the memories
/// [`memory_core::MetadataFilter::matches`] selects: equality on strings, string lists,
/// integers (exact past 2^53), floats and booleans; `$in`; numeric and string (ISO time)
/// ranges; `$exists`; `$and` / `$or` / `$not` (true for a missing key); with other filters and
/// across pages.
pub async fn metadata_filters_select_what_the_grammar_says(store: &dyn LongTermMemoryStore) {
    use memory_core::MetadataFilter;
    use serde_json::json;
    let values = [
        json!({"project": "atlas", "priority": 1, "tags": ["home", "trip"], "at": "2026-01-05T10:00:00Z"}),
        json!({"project": "atlas", "priority": 3, "score": 0.5, "done": true}),
        json!({"project": "borealis", "priority": 2.5, "tags": ["work"], "at": "2026-03-01T00:00:00Z"}),
        json!({"project": "Atlas", "big": 9_007_199_254_740_993_u64, "done": false}),
        json!({"priority": "3", "tags": [], "at": "2025-12-31T23:59:59Z"}),
        json!({"project": "caf\u{e9}", "score": -1, "tags": ["trip"]}),
        json!({}),
    ];
    for (i, value) in values.iter().enumerate() {
        let mut m = memory(
            &format!("mf{i}"),
            MemoryKind::Fact,
            None,
            "filtered",
            10 + i as i64,
        );
        if i == 6 {
            m.kind = MemoryKind::Event;
        }
        m.metadata = serde_json::from_value(value.clone()).unwrap();
        store.insert_memory(m).await.unwrap();
    }
    let everything = store
        .list(&MemoryFilter::default(), None, 10_000)
        .await
        .unwrap()
        .memories;
    assert!(everything.iter().any(|m| m.id == "mf0"));
    let filters = [
        json!({"project": "atlas"}),
        json!({"project": {"$eq": "atlas"}}),
        json!({"project": {"$in": ["borealis", "caf\u{e9}", "nope"]}}),
        json!({"tags": "trip"}),
        json!({"tags": {"$in": ["work", "home"]}}),
        json!({"priority": 3}),
        json!({"priority": 2.5}),
        json!({"priority": {"$in": [1, 3]}}),
        json!({"priority": {"$gte": 1, "$lt": 3}}),
        json!({"priority": {"$gt": 2.5}}),
        json!({"priority": {"$lte": 1}}),
        json!({"score": {"$lt": 0}}),
        json!({"big": 9_007_199_254_740_993_u64}),
        json!({"big": 9_007_199_254_740_992_u64}),
        json!({"done": true}),
        json!({"done": false}),
        json!({"done": "true"}),
        json!({"at": {"$gte": "2026-01-01", "$lt": "2026-02-01"}}),
        json!({"at": {"$lt": "2026"}}),
        json!({"tags": {"$gte": "trip"}}),
        json!({"project": {"$gt": "b"}}),
        json!({"tags": {"$exists": true}}),
        json!({"score": {"$exists": false}}),
        json!({"$not": {"project": "atlas"}}),
        json!({"$not": {"tags": {"$exists": true}}}),
        json!({"$or": [{"done": true}, {"tags": "work"}]}),
        json!({"$and": [{"project": "atlas"}, {"$not": {"done": true}}]}),
        json!({"project": "atlas", "priority": {"$gt": 2}}),
        json!({"$or": [{"project": {"$exists": false}}, {"$not": {"$or": [{"priority": {"$lt": 3}}, {"score": {"$gte": 0}}]}}]}),
    ];
    for json in filters {
        let filter = MetadataFilter::from_json(&json).unwrap();
        let expected: Vec<String> = everything
            .iter()
            .filter(|m| filter.matches(&m.metadata))
            .map(|m| m.id.clone())
            .collect();
        let listed = MemoryFilter {
            metadata: Some(filter.clone()),
            ..MemoryFilter::default()
        };
        assert_eq!(listed_ids(store, &listed).await, expected, "{json}");
        // Pages of one: the same memories, in the same order.
        let mut paged = Vec::new();
        let mut cursor = None;
        loop {
            let page = store.list(&listed, cursor, 1).await.unwrap();
            paged.extend(page.memories.into_iter().map(|m| m.id));
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        assert_eq!(paged, expected, "{json}, a page at a time");
    }
    let events_without_project = MemoryFilter {
        kind: Some(MemoryKind::Event),
        metadata: Some(MetadataFilter::from_json(&json!({"project": {"$exists": false}})).unwrap()),
        ..MemoryFilter::default()
    };
    let got = listed_ids(store, &events_without_project).await;
    let expected: Vec<String> = everything
        .iter()
        .filter(|m| m.kind == MemoryKind::Event && !m.metadata.iter().any(|(k, _)| k == "project"))
        .map(|m| m.id.clone())
        .collect();
    assert!(expected.iter().any(|id| id == "mf6"));
    assert_eq!(got, expected, "a metadata filter with a kind filter");
}

/// The ids `list` answers for `filter`, in one page.
async fn listed_ids(store: &dyn LongTermMemoryStore, filter: &MemoryFilter) -> Vec<String> {
    store
        .list(filter, None, 10_000)
        .await
        .unwrap()
        .memories
        .into_iter()
        .map(|m| m.id)
        .collect()
}

/// `get_memories` answers as `get_memory` would, in the order asked, without the unknown ids.
pub async fn get_memories_follows_the_order_asked(store: &dyn LongTermMemoryStore) {
    for (id, at) in [("g1", 1), ("g2", 2), ("g3", 3)] {
        store
            .insert_memory(memory(id, MemoryKind::Event, None, "a batch lookup", at))
            .await
            .unwrap();
    }
    let ids = |ids: &[&str]| ids.iter().map(|id| (*id).to_owned()).collect::<Vec<_>>();
    let found = store
        .get_memories(&ids(&["g3", "missing", "g1", "g2"]))
        .await
        .unwrap();
    let found: Vec<&str> = found.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(found, ["g3", "g1", "g2"]);
    assert!(store.get_memories(&[]).await.unwrap().is_empty());
    let one = store.get_memories(&ids(&["g2"])).await.unwrap();
    assert_eq!(one, vec![store.get_memory("g2").await.unwrap().unwrap()]);
}

/// Erasing a version relinks its chain: the middle one leaves its predecessor pointing at
/// its successor; the current one makes its predecessor current again. No pointer to an
/// erased id remains.
pub async fn purge_keeps_the_chain_whole(store: &dyn LongTermMemoryStore) {
    for (id, content, at) in [
        ("c1", "in Porto", 10),
        ("c2", "in Braga", 20),
        ("c3", "in Faro", 30),
    ] {
        store
            .insert_memory(memory(
                id,
                MemoryKind::Fact,
                Some("chain.city"),
                content,
                at,
            ))
            .await
            .unwrap();
    }
    store.supersede("c1", "c2").await.unwrap();
    store.supersede("c2", "c3").await.unwrap();
    let chain = |versions: Vec<MemoryRecord>| {
        versions
            .into_iter()
            .map(|m| (m.id, m.superseded_by))
            .collect::<Vec<_>>()
    };
    assert!(store.purge("c2").await.unwrap());
    assert_eq!(
        chain(
            store
                .versions(MemoryKind::Fact, "chain.city")
                .await
                .unwrap()
        ),
        [
            ("c1".to_owned(), Some("c3".to_owned())),
            ("c3".to_owned(), None)
        ]
    );
    assert!(store.purge("c3").await.unwrap());
    assert_eq!(
        chain(
            store
                .versions(MemoryKind::Fact, "chain.city")
                .await
                .unwrap()
        ),
        [("c1".to_owned(), None)]
    );
    let current = store
        .current_by_key(MemoryKind::Fact, "chain.city")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(current.id, "c1", "the predecessor is current again");
}

/// A new version supersedes by forward pointer; nothing is deleted; reads return the latest.
pub async fn supersession_keeps_every_version(
    store: &dyn LongTermMemoryStore,
    index: Option<&dyn TextIndex>,
) {
    store
        .insert_memory(memory(
            "f1",
            MemoryKind::Fact,
            Some("user.city"),
            "lives in Porto",
            10,
        ))
        .await
        .unwrap();
    store
        .insert_memory(memory(
            "f2",
            MemoryKind::Fact,
            Some("user.city"),
            "lives in Lisbon",
            20,
        ))
        .await
        .unwrap();
    store.supersede("f1", "f2").await.unwrap();
    let current = store
        .current_by_key(MemoryKind::Fact, "user.city")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(current.id, "f2");
    let versions = store.versions(MemoryKind::Fact, "user.city").await.unwrap();
    assert_eq!(
        versions.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(),
        ["f1", "f2"]
    );
    assert_eq!(versions[0].superseded_by.as_deref(), Some("f2"));
    assert_eq!(
        store.get_memory("f1").await.unwrap().unwrap().content,
        "lives in Porto"
    );
    assert_eq!(
        store.get_memory("f2").await.unwrap().unwrap(),
        memory(
            "f2",
            MemoryKind::Fact,
            Some("user.city"),
            "lives in Lisbon",
            20
        )
    );
    assert!(
        store
            .current_by_key(MemoryKind::Instruction, "user.city")
            .await
            .unwrap()
            .is_none()
    );
    // Both kinds in one look: the current one of each, in the order asked, none for a kind
    // without one.
    store
        .insert_memory(memory(
            "i1",
            MemoryKind::Instruction,
            Some("user.pet"),
            "never mention the cat",
            30,
        ))
        .await
        .unwrap();
    store
        .insert_memory(memory(
            "f3",
            MemoryKind::Fact,
            Some("user.pet"),
            "has a cat",
            40,
        ))
        .await
        .unwrap();
    let ids = |found: Vec<MemoryRecord>| found.into_iter().map(|m| m.id).collect::<Vec<_>>();
    let kinds = [MemoryKind::Instruction, MemoryKind::Fact];
    assert_eq!(
        ids(store.current_by_keys(&kinds, "user.pet").await.unwrap()),
        ["i1", "f3"]
    );
    assert_eq!(
        ids(store.current_by_keys(&kinds, "user.city").await.unwrap()),
        ["f2"],
        "a superseded memory is not current"
    );
    assert!(
        store
            .current_by_keys(&kinds, "user.none")
            .await
            .unwrap()
            .is_empty()
    );
    if let Some(ids) = any_word_ids(index, namespaces::MEMORIES, "lives").await {
        assert_eq!(ids, ["f2"], "superseded memories are not searched");
    }
    assert!(
        store
            .supersede("f1", "ghost")
            .await
            .unwrap_err()
            .is_not_found()
    );
    let dup = store
        .insert_memory(memory("f2", MemoryKind::Fact, None, "x", 1))
        .await;
    assert!(
        matches!(dup, Err(memory_core::MemoryError::AlreadyExists { .. })),
        "{dup:?}"
    );
}

/// Filters by kind, key, session and time; cursors page in insertion order.
pub async fn list_filters_and_pages(store: &dyn LongTermMemoryStore) {
    for i in 0..5 {
        store
            .insert_memory(memory(
                &format!("e{i}"),
                MemoryKind::Event,
                None,
                &format!("event {i}"),
                100 + i,
            ))
            .await
            .unwrap();
    }
    let events = MemoryFilter {
        kind: Some(MemoryKind::Event),
        ..MemoryFilter::default()
    };
    let page = store.list(&events, None, 2).await.unwrap();
    assert_eq!(
        page.memories
            .iter()
            .map(|m| m.id.as_str())
            .collect::<Vec<_>>(),
        ["e0", "e1"]
    );
    let page2 = store
        .list(&events, page.next_cursor.clone(), 2)
        .await
        .unwrap();
    assert_eq!(
        page2
            .memories
            .iter()
            .map(|m| m.id.as_str())
            .collect::<Vec<_>>(),
        ["e2", "e3"]
    );
    let page3 = store
        .list(&events, page2.next_cursor.clone(), 2)
        .await
        .unwrap();
    assert_eq!(page3.memories.len(), 1);
    assert_eq!(page3.next_cursor, None);
    let window = MemoryFilter {
        kind: Some(MemoryKind::Event),
        from: Some(Timestamp(101)),
        to: Some(Timestamp(103)),
        ..MemoryFilter::default()
    };
    assert_eq!(
        store.list(&window, None, 10).await.unwrap().memories.len(),
        2
    );
    let keyed = MemoryFilter {
        key: Some("user.city".into()),
        include_superseded: true,
        ..MemoryFilter::default()
    };
    assert_eq!(
        store.list(&keyed, None, 10).await.unwrap().memories.len(),
        2
    );
    let current = MemoryFilter {
        key: Some("user.city".into()),
        ..MemoryFilter::default()
    };
    assert_eq!(
        store.list(&current, None, 10).await.unwrap().memories.len(),
        1
    );
    let other = MemoryFilter {
        session_id: Some("other".into()),
        ..MemoryFilter::default()
    };
    assert!(
        store
            .list(&other, None, 10)
            .await
            .unwrap()
            .memories
            .is_empty()
    );
    assert!(
        store
            .list(&events, Some("not-a-cursor".into()), 2)
            .await
            .is_err()
    );
}

/// Forgotten memories leave list and search but stay readable for audit; purge erases.
pub async fn forget_hides_and_purge_erases(
    store: &dyn LongTermMemoryStore,
    index: Option<&dyn TextIndex>,
) {
    store
        .insert_memory(memory(
            "t1",
            MemoryKind::Task,
            None,
            "renew the passport",
            200,
        ))
        .await
        .unwrap();
    store
        .forget(
            "t1",
            ForgetRequest {
                reason: "done".into(),
                at: Timestamp(300),
            },
        )
        .await
        .unwrap();
    if let Some(ids) = any_word_ids(index, namespaces::MEMORIES, "passport").await {
        assert!(ids.is_empty(), "forgotten memories are not searched");
    }
    let tasks = MemoryFilter {
        kind: Some(MemoryKind::Task),
        ..MemoryFilter::default()
    };
    assert!(
        store
            .list(&tasks, None, 10)
            .await
            .unwrap()
            .memories
            .is_empty()
    );
    let audit = MemoryFilter {
        kind: Some(MemoryKind::Task),
        include_forgotten: true,
        ..MemoryFilter::default()
    };
    assert_eq!(
        store.list(&audit, None, 10).await.unwrap().memories[0]
            .forgotten
            .as_ref()
            .unwrap()
            .reason,
        "done"
    );
    assert!(store.purge("t1").await.unwrap());
    assert!(!store.purge("t1").await.unwrap());
    assert!(store.get_memory("t1").await.unwrap().is_none());
    assert!(
        store
            .forget(
                "t1",
                ForgetRequest {
                    reason: "x".into(),
                    at: Timestamp(1)
                }
            )
            .await
            .unwrap_err()
            .is_not_found()
    );
}

/// Profiles share nothing; deleting one removes it.
pub async fn profiles_are_isolated(profiles: &dyn MemoryProfiles) {
    let a = unique("pa");
    let b = unique("pb");
    let store_a = profiles.open(&a).await.unwrap();
    let store_b = profiles.open(&b).await.unwrap();
    store_a
        .insert_memory(memory("m", MemoryKind::Fact, Some("k"), "only in a", 1))
        .await
        .unwrap();
    assert!(store_b.get_memory("m").await.unwrap().is_none());
    let listed = profiles.list().await.unwrap();
    assert!(listed.contains(&a) && listed.contains(&b));
    assert!(profiles.delete(&a).await.unwrap());
    assert!(!profiles.list().await.unwrap().contains(&a));
    assert!(
        profiles
            .open(&a)
            .await
            .unwrap()
            .get_memory("m")
            .await
            .unwrap()
            .is_none(),
        "a deleted profile starts empty"
    );
    assert!(profiles.open("").await.is_err());
    assert!(profiles.open("../escape").await.is_err());
}

/// A raw message's metadata is kept as given through every read, and `raw_matching` names
/// the messages a filter admits, in insertion order, a page at a time, exactly as
/// `MetadataFilter::matches` decides.
pub async fn raw_metadata_is_kept_and_selected(store: &dyn LongTermMemoryStore) {
    let metadata = |value: serde_json::Value| -> memory_core::Metadata {
        serde_json::from_value(value).unwrap()
    };
    let messages: Vec<RawMessage> = (0..12)
        .map(|i| RawMessage {
            id: format!("meta-{i:02}"),
            session_id: "s-meta".into(),
            role: "user".into(),
            content: format!("message {i}"),
            created_at: Timestamp(i),
            metadata: match i % 3 {
                0 => metadata(serde_json::json!({"user": "ada", "n": i, "tags": ["a", "b"]})),
                1 => metadata(serde_json::json!({"user": "bob", "n": i, "ok": true})),
                _ => memory_core::Metadata::default(),
            },
        })
        .collect();
    store.insert_raw(messages.clone()).await.unwrap();
    let ids: Vec<String> = messages.iter().map(|m| m.id.clone()).collect();
    assert_eq!(
        store.raw_by_ids(&ids).await.unwrap(),
        messages,
        "kept as given"
    );
    let (page, _) = store.raw_page(None, 100).await.unwrap();
    let paged: Vec<&RawMessage> = page.iter().filter(|m| m.session_id == "s-meta").collect();
    assert_eq!(paged, messages.iter().collect::<Vec<_>>());
    let neighbours = store.raw_neighbors(&ids[..1], 1).await.unwrap();
    assert_eq!(neighbours, messages[1..2]);
    for filter in [
        r#"{"user": "ada"}"#,
        r#"{"n": {"$gte": 4, "$lt": 10}}"#,
        r#"{"tags": "b"}"#,
        r#"{"ok": true}"#,
        r#"{"user": {"$exists": false}}"#,
        r#"{"$not": {"user": "ada"}}"#,
        r#"{"$or": [{"user": "bob"}, {"n": {"$in": [0, 3]}}]}"#,
        r#"{"user": "nobody"}"#,
    ] {
        let parsed = memory_core::MetadataFilter::parse(filter).unwrap();
        let expected: Vec<String> = messages
            .iter()
            .filter(|m| parsed.matches(&m.metadata))
            .map(|m| m.id.clone())
            .collect();
        let mut found = Vec::new();
        let mut cursor = None;
        loop {
            let (ids, next) = store.raw_matching(&parsed, cursor, 2).await.unwrap();
            assert!(ids.len() <= 2, "{filter}: a page holds at most its limit");
            found.extend(ids);
            match next {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        assert_eq!(found, expected, "{filter}");
    }
}

/// `expires_at` round-trips; `list` with `current_at` leaves out what expired by then
/// (unless `include_forgotten`), and without it judges no expiry; `expired(at)` names what
/// expired by `at` and is not forgotten, earliest expiry first, `limit` at a time.
pub async fn expiry_is_kept_judged_and_listed_for_the_sweep(store: &dyn LongTermMemoryStore) {
    let expiring = |id: &str, at: Option<i64>| MemoryRecord {
        expires_at: at.map(Timestamp),
        ..memory(id, MemoryKind::Task, None, &format!("task {id}"), 1)
    };
    for m in [
        expiring("late", Some(300)),
        expiring("never", None),
        expiring("early", Some(100)),
        expiring("middle", Some(200)),
        expiring("same", Some(200)),
    ] {
        store.insert_memory(m).await.unwrap();
    }
    let got = store.get_memory("early").await.unwrap().unwrap();
    assert_eq!(got.expires_at, Some(Timestamp(100)));
    assert_eq!(
        store.get_memory("never").await.unwrap().unwrap().expires_at,
        None
    );
    let listed = |filter: MemoryFilter| async move {
        let page = store.list(&filter, None, 100).await.unwrap();
        page.memories.into_iter().map(|m| m.id).collect::<Vec<_>>()
    };
    let at = |t: i64| MemoryFilter {
        current_at: Some(Timestamp(t)),
        ..MemoryFilter::default()
    };
    assert_eq!(
        listed(MemoryFilter::default()).await,
        ["late", "never", "early", "middle", "same"],
        "without current_at no expiry is judged"
    );
    assert_eq!(
        listed(at(99)).await,
        ["late", "never", "early", "middle", "same"]
    );
    assert_eq!(
        listed(at(200)).await,
        ["late", "never"],
        "expired at the instant itself (expires_at <= current_at)"
    );
    assert_eq!(
        listed(MemoryFilter {
            include_forgotten: true,
            ..at(1_000)
        })
        .await,
        ["late", "never", "early", "middle", "same"],
        "include_forgotten shows expired memories too"
    );
    assert!(store.expired(Timestamp(99), 10).await.unwrap().is_empty());
    assert_eq!(
        store.expired(Timestamp(200), 10).await.unwrap(),
        ["early", "middle", "same"]
    );
    assert_eq!(
        store.expired(Timestamp(1_000), 2).await.unwrap(),
        ["early", "middle"]
    );
    store
        .forget(
            "early",
            ForgetRequest {
                reason: "expired".into(),
                at: Timestamp(100),
            },
        )
        .await
        .unwrap();
    assert_eq!(
        store.expired(Timestamp(1_000), 10).await.unwrap(),
        ["middle", "same", "late"],
        "a forgotten memory is no longer due"
    );
    assert!(store.purge("middle").await.unwrap());
    assert_eq!(
        store.expired(Timestamp(1_000), 10).await.unwrap(),
        ["same", "late"]
    );
}

/// A metadata filter matching 1 % of 100,000 memories lists exactly those 1,000, page by
/// page, with both an equality and a range on the same key (the query plan a backend picks
/// for a selective filter over a large profile, not only for a handful of rows).
pub async fn a_filter_selecting_one_percent_of_100_000_memories(store: &dyn LongTermMemoryStore) {
    use futures::StreamExt;
    use memory_core::MetadataFilter;
    const COUNT: usize = 100_000;
    let inserts = futures::stream::iter(0..COUNT).map(|i| {
        let mut m = memory(
            &format!("s{i:06}"),
            MemoryKind::Event,
            None,
            "selective",
            i as i64,
        );
        m.metadata = serde_json::from_value(serde_json::json!({ "bucket": i % 100 })).unwrap();
        store.insert_memory(m)
    });
    let failed = inserts
        .buffer_unordered(16)
        .filter(|r| std::future::ready(r.is_err()))
        .count()
        .await;
    assert_eq!(failed, 0, "every insert succeeds");
    for text in [
        r#"{"bucket": 42}"#,
        r#"{"bucket": {"$gte": 41.5, "$lt": 42.5}}"#,
    ] {
        let filter = MemoryFilter {
            metadata: Some(MetadataFilter::parse(text).unwrap()),
            ..MemoryFilter::default()
        };
        let mut ids = Vec::new();
        let mut cursor = None;
        loop {
            let page = store.list(&filter, cursor, 300).await.unwrap();
            ids.extend(page.memories.into_iter().map(|m| {
                assert_eq!(m.metadata.to_json(), r#"{"bucket":42}"#);
                m.id
            }));
            cursor = page.next_cursor;
            if cursor.is_none() {
                break;
            }
        }
        let expected: Vec<String> = (0..COUNT)
            .filter(|i| i % 100 == 42)
            .map(|i| format!("s{i:06}"))
            .collect();
        ids.sort();
        assert_eq!(ids, expected, "filter {text}");
    }
}

/// `merge` is one write: the survivor takes the union of the sources and the latest
/// confirmation, the absorbed memories point at it with the note, `merged_into` lists them;
/// a merge naming a missing or no longer current memory writes nothing; a purge of an
/// absorbed memory leaves the survivor whole; the new fields survive an insert as given. A
/// store-written index keeps searching the absorbed memories (their wording leads recall to
/// the survivor: [`MemoryRecord::is_searchable`]) until they are purged.
pub async fn merge_is_one_write_and_keeps_provenance(
    store: &dyn LongTermMemoryStore,
    index: Option<&dyn TextIndex>,
) {
    let with_sources = |id: &str, at: i64, sources: &[&str]| MemoryRecord {
        source_message_ids: sources.iter().map(|s| (*s).to_owned()).collect(),
        ..memory(
            id,
            MemoryKind::Fact,
            None,
            &format!("likes green tea ({id})"),
            at,
        )
    };
    store
        .insert_memory(with_sources("keep", 2_000, &["r1", "r2"]))
        .await
        .unwrap();
    store
        .insert_memory(with_sources("older", 1_000, &["r2", "r3"]))
        .await
        .unwrap();
    store
        .insert_memory(with_sources("newer", 5_000, &["r4"]))
        .await
        .unwrap();
    store
        .insert_memory(with_sources("other", 3_000, &["r9"]))
        .await
        .unwrap();
    let note = MergeNote {
        reason: "the same words".into(),
        at: Timestamp(9_000),
    };
    let merge = |absorbed: &[&str]| MemoryMerge {
        survivor: "keep".into(),
        absorbed: absorbed.iter().map(|s| (*s).to_owned()).collect(),
        note: note.clone(),
    };

    // Refused whole: a missing id, the survivor among the absorbed, nothing to absorb.
    let missing = store.merge(&merge(&["older", "nonesuch"])).await;
    assert!(
        matches!(missing, Err(MemoryError::NotFound { .. })),
        "{missing:?}"
    );
    for bad in [merge(&["keep"]), merge(&[]), merge(&["older", "older"])] {
        let refused = store.merge(&bad).await;
        assert!(
            matches!(refused, Err(MemoryError::InvalidInput { .. })),
            "{refused:?}"
        );
    }
    let untouched = store.get_memory("older").await.unwrap().unwrap();
    assert_eq!(
        untouched.superseded_by, None,
        "a refused merge wrote nothing"
    );
    assert_eq!(
        store
            .get_memory("keep")
            .await
            .unwrap()
            .unwrap()
            .source_message_ids,
        ["r1", "r2"]
    );

    store.merge(&merge(&["older", "newer"])).await.unwrap();
    let keep = store.get_memory("keep").await.unwrap().unwrap();
    assert_eq!(keep.source_message_ids, ["r1", "r2", "r3", "r4"]);
    assert_eq!(keep.superseded_by, None);
    assert_eq!(keep.merged, None);
    assert_eq!(
        keep.confirmed_at,
        Some(Timestamp(5_000)),
        "the newest restatement"
    );
    assert_eq!(keep.last_confirmed(), Timestamp(5_000));
    for id in ["older", "newer"] {
        let absorbed = store.get_memory(id).await.unwrap().unwrap();
        assert_eq!(absorbed.superseded_by.as_deref(), Some("keep"));
        assert_eq!(absorbed.merged.as_ref(), Some(&note));
        assert_eq!(absorbed.forgotten, None, "nothing is forgotten or deleted");
    }
    let into: Vec<String> = store
        .merged_into("keep")
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.id)
        .collect();
    assert_eq!(into, ["older", "newer"], "oldest first");
    assert!(store.merged_into("other").await.unwrap().is_empty());
    let current: Vec<String> = store
        .list(&MemoryFilter::default(), None, 10)
        .await
        .unwrap()
        .memories
        .into_iter()
        .map(|m| m.id)
        .collect();
    assert_eq!(current, ["keep", "other"]);
    if let Some(mut found) = any_word_ids(index, namespaces::MEMORIES, "green tea").await {
        found.sort();
        assert_eq!(
            found,
            ["keep", "newer", "older", "other"],
            "merged, still searched"
        );
    }

    // A stale plan: an absorbed memory that is already superseded is a conflict.
    let stale = MemoryMerge {
        survivor: "other".into(),
        absorbed: vec!["older".into()],
        note: note.clone(),
    };
    let conflict = store.merge(&stale).await;
    assert!(
        matches!(conflict, Err(MemoryError::Conflict { .. })),
        "{conflict:?}"
    );
    assert_eq!(
        store
            .get_memory("older")
            .await
            .unwrap()
            .unwrap()
            .superseded_by
            .as_deref(),
        Some("keep")
    );

    // Purging an absorbed memory leaves the survivor and the other absorbed one as they were.
    assert!(store.purge("older").await.unwrap());
    let into: Vec<String> = store
        .merged_into("keep")
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.id)
        .collect();
    assert_eq!(into, ["newer"]);
    if let Some(mut found) = any_word_ids(index, namespaces::MEMORIES, "green tea").await {
        found.sort();
        assert_eq!(found, ["keep", "newer", "other"], "the purged one is not");
    }

    // The fields are kept as inserted.
    let given = MemoryRecord {
        merged: Some(note.clone()),
        superseded_by: Some("keep".into()),
        confirmed_at: Some(Timestamp(7_000)),
        recalled_at: Some(Timestamp(8_000)),
        ..memory("imported", MemoryKind::Fact, None, "imported", 6_000)
    };
    store.insert_memory(given.clone()).await.unwrap();
    assert_eq!(store.get_memory("imported").await.unwrap(), Some(given));
}

/// `mark_recalled` moves `recalled_at` forward only and ignores ids that are not stored.
pub async fn recall_times_only_move_forward(store: &dyn LongTermMemoryStore) {
    for id in ["a", "b"] {
        store
            .insert_memory(memory(id, MemoryKind::Fact, None, id, 1_000))
            .await
            .unwrap();
    }
    let ids = |names: &[&str]| names.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    store
        .mark_recalled(&ids(&["a", "nonesuch"]), Timestamp(5_000))
        .await
        .unwrap();
    store
        .mark_recalled(&ids(&["a", "b"]), Timestamp(4_000))
        .await
        .unwrap();
    store.mark_recalled(&[], Timestamp(9_000)).await.unwrap();
    for (id, expected) in [("a", 5_000), ("b", 4_000)] {
        let recalled = store.get_memory(id).await.unwrap().unwrap().recalled_at;
        assert_eq!(
            recalled,
            Some(Timestamp(expected)),
            "{id}: never moved back"
        );
    }
}
