//! Contract of [`MessageStore`], and of the `messages` text index that follows it.
//!
//! `index` is the [`TextIndex`] that holds the store's messages: the adapter's own when its
//! store writes it (SQLite), or one the engine's `IndexedMessageStore` keeps in step (then
//! `store` is that decorator). Without one the search checks are skipped.

use memory_core::ports::{MessageStore, MessageStoreExt, TextIndex};
use memory_core::{
    AppendOutcome, MemoryError, NewCompaction, NewMessage, Parent, Role, SearchHit, SearchMode,
    SearchQuery, SessionId, UiMessage, search_messages,
};
use serde_json::json;

use super::fresh_session;
use crate::samples::{assistant, assistant_with_tool, user};

/// Runs every message-store contract check; `deep_path` is the length of the deep-path check.
pub async fn run_all(store: &dyn MessageStore, index: Option<&dyn TextIndex>, deep_path: usize) {
    append_get_round_trip(store).await;
    append_is_insert_if_absent(store, index).await;
    resend_with_missing_parent_is_already_exists(store).await;
    parent_rules(store).await;
    batch_is_atomic(store, index).await;
    latest_leaf_follows_insertion_order(store).await;
    history_of_branches(store).await;
    unknown_leaf_is_not_found(store).await;
    branches_in_insertion_order(store).await;
    update_replaces_and_reindexes(store, index).await;
    upsert_updates_or_appends(store).await;
    delete_relinks_children_and_unindexes(store, index).await;
    sessions_are_isolated(store, index).await;
    clear_removes_one_session(store, index).await;
    reserved_prefix_is_rejected(store).await;
    the_row_limit_holds_on_every_write(store).await;
    recent_history_window(store).await;
    search_semantics(store, index).await;
    search_ranks_by_relevance(store, index).await;
    search_limits(store, index).await;
    messages_page_in_insertion_order(store).await;
    compaction_records(store).await;
    deep_linear_path(store, deep_path).await;
    interleaved_sessions_and_many_branches(store).await;
    path_tail_is_the_end_of_the_path(store).await;
    forks_name_the_branch_points(store).await;
    latest_leaf_under_is_the_newest_of_the_subtree(store).await;
}

/// The hits of `query`; `None` without an index.
async fn search(index: Option<&dyn TextIndex>, query: &SearchQuery) -> Option<Vec<SearchHit>> {
    Some(search_messages(index?, query).await.unwrap())
}

/// True when `query` finds nothing (trivially without an index).
async fn finds_nothing(index: Option<&dyn TextIndex>, query: &SearchQuery) -> bool {
    search(index, query)
        .await
        .is_none_or(|hits| hits.is_empty())
}

fn ids(messages: &[UiMessage]) -> Vec<&str> {
    messages.iter().map(|m| m.id.as_str()).collect()
}

async fn append_chain(store: &dyn MessageStore, session: &SessionId, names: &[&str]) {
    let batch = names
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let role = if i % 2 == 0 {
                Role::User
            } else {
                Role::Assistant
            };
            NewMessage::new(UiMessage::text_message(*id, role, format!("message {id}")))
        })
        .collect();
    store.append(session, batch).await.unwrap();
}

/// A stored message reads back identical, rich parts included.
pub async fn append_get_round_trip(store: &dyn MessageStore) {
    let s = fresh_session("roundtrip");
    let m = assistant_with_tool(
        "a1",
        "getWeather",
        json!({"city": "Lisbon"}),
        json!({"tempC": 21, "nested": {"list": [1, 2, 3]}}),
        "It is sunny.",
    );
    let mut with_extra = m.clone();
    with_extra
        .extra
        .insert("custom".into(), json!({"kept": true}));
    let outcome = store
        .append_one(&s, with_extra.clone(), Parent::LatestLeaf)
        .await
        .unwrap();
    assert_eq!(outcome, AppendOutcome::Inserted { parent_id: None });
    assert_eq!(store.get(&s, "a1").await.unwrap(), Some(with_extra));
    assert_eq!(store.get(&s, "missing").await.unwrap(), None);
}

/// Appending an existing id changes nothing and says so.
pub async fn append_is_insert_if_absent(store: &dyn MessageStore, index: Option<&dyn TextIndex>) {
    let s = fresh_session("idempotent");
    store
        .append_one(&s, user("u1", "original"), Parent::LatestLeaf)
        .await
        .unwrap();
    store
        .append_one(&s, assistant("a1", "reply"), Parent::LatestLeaf)
        .await
        .unwrap();
    let again = store
        .append_one(&s, user("u1", "changed"), Parent::message("a1"))
        .await
        .unwrap();
    assert_eq!(again, AppendOutcome::AlreadyExists);
    assert_eq!(
        store.get(&s, "u1").await.unwrap().unwrap().text(),
        "original"
    );
    assert_eq!(
        ids(&store.history(&s, None).await.unwrap()),
        vec!["u1", "a1"]
    );
    assert!(finds_nothing(index, &SearchQuery::new("changed").in_session(s.clone())).await);
}

/// Latest leaf by default, explicit root, explicit parent; a parent outside the session fails.
pub async fn parent_rules(store: &dyn MessageStore) {
    let s = fresh_session("parents");
    let other = fresh_session("parents-other");
    store
        .append_one(&other, user("x1", "elsewhere"), Parent::LatestLeaf)
        .await
        .unwrap();
    let first = store
        .append_one(&s, user("u1", "hi"), Parent::LatestLeaf)
        .await
        .unwrap();
    assert_eq!(first, AppendOutcome::Inserted { parent_id: None });
    let second = store
        .append_one(&s, assistant("a1", "hello"), Parent::LatestLeaf)
        .await
        .unwrap();
    assert_eq!(
        second,
        AppendOutcome::Inserted {
            parent_id: Some("u1".into())
        }
    );
    let root = store
        .append_one(&s, user("r2", "new topic"), Parent::Root)
        .await
        .unwrap();
    assert_eq!(root, AppendOutcome::Inserted { parent_id: None });
    let explicit = store
        .append_one(&s, assistant("a2", "alt"), Parent::message("u1"))
        .await
        .unwrap();
    assert_eq!(
        explicit,
        AppendOutcome::Inserted {
            parent_id: Some("u1".into())
        }
    );
    let foreign = store
        .append_one(&s, user("u9", "bad"), Parent::message("x1"))
        .await;
    assert!(
        matches!(foreign, Err(MemoryError::NotFound { .. })),
        "{foreign:?}"
    );
    let missing = store
        .append_one(&s, user("u9", "bad"), Parent::message("nope"))
        .await;
    assert!(
        matches!(missing, Err(MemoryError::NotFound { .. })),
        "{missing:?}"
    );
    assert_eq!(store.get(&s, "u9").await.unwrap(), None);
    assert_eq!(
        ids(&store.history(&s, Some("a2".into())).await.unwrap()),
        vec!["u1", "a2"]
    );
    assert_eq!(
        ids(&store.history(&s, Some("r2".into())).await.unwrap()),
        vec!["r2"]
    );
}

/// A batch is one transaction: later items see earlier ones; one bad item stores none.
pub async fn batch_is_atomic(store: &dyn MessageStore, index: Option<&dyn TextIndex>) {
    let s = fresh_session("batch");
    let outcomes = store
        .append(
            &s,
            vec![
                NewMessage::new(user("u1", "one")),
                NewMessage::new(assistant("a1", "two")),
                NewMessage::with_parent(user("u2", "three"), Parent::message("u1")),
                NewMessage::new(user("u1", "dup")),
            ],
        )
        .await
        .unwrap();
    assert_eq!(
        outcomes,
        vec![
            AppendOutcome::Inserted { parent_id: None },
            AppendOutcome::Inserted {
                parent_id: Some("u1".into())
            },
            AppendOutcome::Inserted {
                parent_id: Some("u1".into())
            },
            AppendOutcome::AlreadyExists,
        ]
    );
    let failing = store
        .append(
            &s,
            vec![
                NewMessage::new(user("ok1", "stored?")),
                NewMessage::with_parent(user("ok2", "stored?"), Parent::message("ghost")),
            ],
        )
        .await;
    assert!(failing.is_err());
    assert_eq!(store.get(&s, "ok1").await.unwrap(), None);
    let reserved = store
        .append(
            &s,
            vec![
                NewMessage::new(user("ok3", "x")),
                NewMessage::new(user("compaction_1", "x")),
            ],
        )
        .await;
    assert!(
        matches!(reserved, Err(MemoryError::InvalidInput { .. })),
        "{reserved:?}"
    );
    assert_eq!(store.get(&s, "ok3").await.unwrap(), None);
    assert!(finds_nothing(index, &SearchQuery::new("stored").in_session(s.clone())).await);
    assert!(store.append(&s, Vec::new()).await.unwrap().is_empty());
}

/// The latest leaf is the most recently appended childless message, by sequence.
pub async fn latest_leaf_follows_insertion_order(store: &dyn MessageStore) {
    let s = fresh_session("leaf");
    assert_eq!(store.latest_leaf(&s).await.unwrap(), None);
    append_chain(store, &s, &["m1", "m2", "m3"]).await;
    assert_eq!(store.latest_leaf(&s).await.unwrap().as_deref(), Some("m3"));
    // A branch from m1 appended within the same millisecond is still "latest".
    store
        .append_one(&s, assistant("b1", "branch"), Parent::message("m1"))
        .await
        .unwrap();
    assert_eq!(store.latest_leaf(&s).await.unwrap().as_deref(), Some("b1"));
    // Continue the older branch: its new leaf becomes latest.
    store
        .append_one(&s, user("m4", "more"), Parent::message("m3"))
        .await
        .unwrap();
    assert_eq!(store.latest_leaf(&s).await.unwrap().as_deref(), Some("m4"));
    // Default parent follows.
    store
        .append_one(&s, assistant("m5", "reply"), Parent::LatestLeaf)
        .await
        .unwrap();
    assert_eq!(
        ids(&store.history(&s, None).await.unwrap()),
        vec!["m1", "m2", "m3", "m4", "m5"]
    );
    // Deleting the latest leaf makes the next most recent childless message latest.
    store.delete(&s, &["m5".into(), "m4".into()]).await.unwrap();
    assert_eq!(store.latest_leaf(&s).await.unwrap().as_deref(), Some("b1"));
}

/// `history(leaf)` is the root-to-leaf path of that branch.
pub async fn history_of_branches(store: &dyn MessageStore) {
    let s = fresh_session("branches-history");
    append_chain(store, &s, &["u1", "a1", "u2", "a2"]).await;
    store
        .append_one(&s, user("u2b", "edited question"), Parent::message("a1"))
        .await
        .unwrap();
    store
        .append_one(&s, assistant("a2b", "other answer"), Parent::LatestLeaf)
        .await
        .unwrap();
    assert_eq!(
        ids(&store.history(&s, Some("a2".into())).await.unwrap()),
        vec!["u1", "a1", "u2", "a2"]
    );
    assert_eq!(
        ids(&store.history(&s, None).await.unwrap()),
        vec!["u1", "a1", "u2b", "a2b"]
    );
    assert_eq!(
        ids(&store.history(&s, Some("a1".into())).await.unwrap()),
        vec!["u1", "a1"]
    );
    assert_eq!(store.path_length(&s, Some("a2")).await.unwrap(), 4);
    let path = store.path(&s, Some("u2b".into())).await.unwrap();
    assert_eq!(
        path.iter().map(|p| p.id.as_str()).collect::<Vec<_>>(),
        vec!["u1", "a1", "u2b"]
    );
    assert_eq!(path[0].role, Role::User);
    let stored_len = serde_json::to_vec(&store.get(&s, "u1").await.unwrap().unwrap())
        .unwrap()
        .len();
    assert!(
        path[0].bytes > 0 && path[0].bytes.abs_diff(stored_len as u64) <= stored_len as u64 / 2
    );
    assert!(
        store
            .history(&fresh_session("empty"), None)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .path(&fresh_session("empty"), None)
            .await
            .unwrap()
            .is_empty()
    );
}

/// An unknown leaf, or a leaf of another session, is a typed not-found error.
pub async fn unknown_leaf_is_not_found(store: &dyn MessageStore) {
    let s = fresh_session("unknown-leaf");
    let other = fresh_session("unknown-leaf-other");
    append_chain(store, &s, &["m1"]).await;
    append_chain(store, &other, &["o1"]).await;
    for leaf in ["nope", "o1"] {
        let h = store.history(&s, Some(leaf.into())).await;
        assert!(matches!(h, Err(MemoryError::NotFound { .. })), "{h:?}");
        let p = store.path(&s, Some(leaf.into())).await;
        assert!(matches!(p, Err(MemoryError::NotFound { .. })), "{p:?}");
    }
    let empty = fresh_session("unknown-leaf-empty");
    assert!(
        store
            .history(&empty, Some("m1".into()))
            .await
            .unwrap_err()
            .is_not_found()
    );
    assert!(store.children(&s, "nope").await.unwrap_err().is_not_found());
}

/// Children come back in insertion order.
pub async fn branches_in_insertion_order(store: &dyn MessageStore) {
    let s = fresh_session("children");
    append_chain(store, &s, &["root"]).await;
    for id in ["c3", "c1", "c2"] {
        store
            .append_one(&s, assistant(id, id), Parent::message("root"))
            .await
            .unwrap();
    }
    assert_eq!(
        ids(&store.children(&s, "root").await.unwrap()),
        vec!["c3", "c1", "c2"]
    );
    assert!(store.children(&s, "c1").await.unwrap().is_empty());
}

/// `update` replaces content and re-indexes; parent and role stay; absent is not-found.
pub async fn update_replaces_and_reindexes(
    store: &dyn MessageStore,
    index: Option<&dyn TextIndex>,
) {
    let s = fresh_session("update");
    append_chain(store, &s, &["u1", "a1"]).await;
    store
        .append_one(&s, user("u2", "zebrafish question"), Parent::LatestLeaf)
        .await
        .unwrap();
    let mut changed = user("u2", "platypus question");
    changed.role = Role::Assistant; // role is not changed by update
    changed.metadata = Some(json!({"edited": true}));
    store.update(&s, changed).await.unwrap();
    let stored = store.get(&s, "u2").await.unwrap().unwrap();
    assert_eq!(stored.text(), "platypus question");
    assert_eq!(stored.role, Role::User);
    assert_eq!(stored.metadata, Some(json!({"edited": true})));
    assert_eq!(
        ids(&store.history(&s, None).await.unwrap()),
        vec!["u1", "a1", "u2"]
    );
    let scoped = |q: &str| SearchQuery::new(q).in_session(s.clone());
    assert!(finds_nothing(index, &scoped("zebrafish")).await);
    if let Some(hits) = search(index, &scoped("platypus")).await {
        assert_eq!(hits.len(), 1, "an update re-indexes");
    }
    // Losing all text removes the search entry.
    let empty = UiMessage::new("u2", Role::User, vec![]);
    store.update(&s, empty).await.unwrap();
    assert!(finds_nothing(index, &scoped("platypus")).await);
    let missing = store.update(&s, user("ghost", "x")).await;
    assert!(
        matches!(missing, Err(MemoryError::NotFound { .. })),
        "{missing:?}"
    );
}

/// `upsert` updates an existing message and appends a new one.
pub async fn upsert_updates_or_appends(store: &dyn MessageStore) {
    let s = fresh_session("upsert");
    let first = store
        .upsert(&s, user("u1", "draft"), Parent::LatestLeaf)
        .await
        .unwrap();
    assert!(first.inserted());
    let second = store
        .upsert(&s, user("u1", "final"), Parent::LatestLeaf)
        .await
        .unwrap();
    assert_eq!(second, AppendOutcome::AlreadyExists);
    assert_eq!(store.get(&s, "u1").await.unwrap().unwrap().text(), "final");
    assert_eq!(store.path_length(&s, None).await.unwrap(), 1);
}

/// Deleting removes rows and search entries; children re-link to the grandparent.
pub async fn delete_relinks_children_and_unindexes(
    store: &dyn MessageStore,
    index: Option<&dyn TextIndex>,
) {
    let s = fresh_session("delete");
    append_chain(store, &s, &["m1", "m2", "m3", "m4"]).await;
    store
        .append_one(&s, user("b3", "branch wombat"), Parent::message("m2"))
        .await
        .unwrap();
    let deleted = store
        .delete(&s, &["m2".into(), "not-there".into()])
        .await
        .unwrap();
    assert_eq!(deleted, 1);
    assert_eq!(store.get(&s, "m2").await.unwrap(), None);
    assert_eq!(
        ids(&store.history(&s, Some("m4".into())).await.unwrap()),
        vec!["m1", "m3", "m4"]
    );
    assert_eq!(
        ids(&store.history(&s, Some("b3".into())).await.unwrap()),
        vec!["m1", "b3"]
    );
    assert_eq!(
        ids(&store.children(&s, "m1").await.unwrap()),
        vec!["m3", "b3"]
    );
    let scoped = |q: &str| SearchQuery::new(q).in_session(s.clone());
    assert!(finds_nothing(index, &scoped("m2")).await);
    if let Some(hits) = search(index, &scoped("m3")).await {
        assert_eq!(hits.len(), 1);
    }
    // Deleting a root promotes its children to roots.
    store.delete(&s, &["m1".into()]).await.unwrap();
    assert_eq!(
        ids(&store.history(&s, Some("m4".into())).await.unwrap()),
        vec!["m3", "m4"]
    );
    assert_eq!(
        ids(&store.history(&s, Some("b3".into())).await.unwrap()),
        vec!["b3"]
    );
    // Deleting a leaf and its parent together works in either order.
    store.delete(&s, &["m3".into(), "m4".into()]).await.unwrap();
    assert_eq!(store.latest_leaf(&s).await.unwrap().as_deref(), Some("b3"));
    store.delete(&s, &["b3".into()]).await.unwrap();
    assert!(finds_nothing(index, &scoped("wombat")).await);
    assert_eq!(store.latest_leaf(&s).await.unwrap(), None);
}

/// The same message id lives independently in two sessions.
pub async fn sessions_are_isolated(store: &dyn MessageStore, index: Option<&dyn TextIndex>) {
    let a = fresh_session("iso-a");
    let b = fresh_session("iso-b");
    store
        .append_one(&a, user("m1", "alpha kiwi"), Parent::LatestLeaf)
        .await
        .unwrap();
    let in_b = store
        .append_one(&b, user("m1", "beta kiwi"), Parent::LatestLeaf)
        .await
        .unwrap();
    assert!(
        in_b.inserted(),
        "the same id in another session is a new message"
    );
    assert_eq!(
        store.get(&a, "m1").await.unwrap().unwrap().text(),
        "alpha kiwi"
    );
    assert_eq!(
        store.get(&b, "m1").await.unwrap().unwrap().text(),
        "beta kiwi"
    );
    store
        .update(&b, user("m1", "beta kiwi updated"))
        .await
        .unwrap();
    assert_eq!(
        store.get(&a, "m1").await.unwrap().unwrap().text(),
        "alpha kiwi"
    );
    if let Some(hits) = search(index, &SearchQuery::new("kiwi").in_session(a.clone())).await {
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].session_id, a);
        assert_eq!(hits[0].content, "alpha kiwi");
    }
    store
        .add_compaction(
            &a,
            NewCompaction {
                summary: "s".into(),
                from_message_id: "m1".into(),
                to_message_id: "m1".into(),
            },
        )
        .await
        .unwrap();
    assert!(store.compactions(&b).await.unwrap().is_empty());
    store.delete(&b, &["m1".into()]).await.unwrap();
    assert!(store.get(&a, "m1").await.unwrap().is_some());
    if let Some(hits) = search(index, &SearchQuery::new("alpha kiwi").in_session(a.clone())).await {
        assert_eq!(hits.len(), 1);
    }
}

/// `clear` removes one session's messages, overlays and search entries, nothing else.
pub async fn clear_removes_one_session(store: &dyn MessageStore, index: Option<&dyn TextIndex>) {
    let a = fresh_session("clear-a");
    let b = fresh_session("clear-b");
    let marker = super::unique("quokka").replace('-', "");
    for s in [&a, &b] {
        store
            .append_one(s, user("m1", &format!("{marker} here")), Parent::LatestLeaf)
            .await
            .unwrap();
        store
            .append_one(s, assistant("m2", "ok"), Parent::LatestLeaf)
            .await
            .unwrap();
        store
            .add_compaction(
                s,
                NewCompaction {
                    summary: "sum".into(),
                    from_message_id: "m1".into(),
                    to_message_id: "m2".into(),
                },
            )
            .await
            .unwrap();
    }
    // A long branch with side branches: more than an adapter's delete batch.
    let names: Vec<String> = (3..4_600).map(|i| format!("m{i}")).collect();
    let batch: Vec<NewMessage> = names
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let parent = if i % 97 == 5 {
                Parent::Message("m1".into())
            } else {
                Parent::LatestLeaf
            };
            NewMessage::with_parent(UiMessage::text_message(id, Role::User, "long"), parent)
        })
        .collect();
    store.append(&a, batch).await.unwrap();
    store.clear(&a).await.unwrap();
    assert!(store.history(&a, None).await.unwrap().is_empty());
    assert!(store.compactions(&a).await.unwrap().is_empty());
    assert!(store.get(&a, "m4000").await.unwrap().is_none());
    assert_eq!(store.latest_leaf(&a).await.unwrap(), None);
    if let Some(global) = search(index, &SearchQuery::new(&marker)).await {
        assert_eq!(
            global.iter().map(|h| &h.session_id).collect::<Vec<_>>(),
            vec![&b]
        );
    }
    assert_eq!(store.history(&b, None).await.unwrap().len(), 2);
    assert_eq!(store.compactions(&b).await.unwrap().len(), 1);
    // The cleared session can be written again.
    assert!(
        store
            .append_one(&a, user("m1", "again"), Parent::LatestLeaf)
            .await
            .unwrap()
            .inserted()
    );
}

/// Ids in the `compaction_` namespace are rejected on every write.
pub async fn reserved_prefix_is_rejected(store: &dyn MessageStore) {
    let s = fresh_session("reserved");
    let err = store
        .append_one(&s, user("compaction_abc", "x"), Parent::LatestLeaf)
        .await;
    assert!(
        matches!(err, Err(MemoryError::InvalidInput { .. })),
        "{err:?}"
    );
    let err = store.update(&s, user("compaction_abc", "x")).await;
    assert!(
        matches!(err, Err(MemoryError::InvalidInput { .. })),
        "{err:?}"
    );
    for bad in ["", "a\u{0}b", "line\nbreak", &"x".repeat(257)] {
        let err = store
            .append_one(&s, user(bad, "x"), Parent::LatestLeaf)
            .await;
        assert!(
            matches!(err, Err(MemoryError::InvalidInput { .. })),
            "{bad:?}: {err:?}"
        );
    }
    assert!(store.history(&s, None).await.unwrap().is_empty());
}

/// A store that declares `max_message_bytes` refuses a larger message on append, batch
/// append and update, with [`MemoryError::TooLarge`] and nothing written.
pub async fn the_row_limit_holds_on_every_write(store: &dyn MessageStore) {
    let Some(limit) = store.capabilities().max_message_bytes else {
        return;
    };
    let s = fresh_session("row-limit");
    append_chain(store, &s, &["m1"]).await;
    let big = user(
        "big",
        &"x".repeat(usize::try_from(limit).unwrap_or(usize::MAX) + 1),
    );
    let err = store.append_one(&s, big.clone(), Parent::LatestLeaf).await;
    assert!(
        matches!(err, Err(MemoryError::TooLarge { .. })),
        "{:?}",
        err.map(|_| ())
    );
    let err = store.update(&s, user("m1", &big.text())).await;
    assert!(matches!(err, Err(MemoryError::TooLarge { .. })));
    let history = store.history(&s, None).await.unwrap();
    assert_eq!(ids(&history), ["m1"]);
    assert_eq!(history[0].text(), "message m1");
}

/// `recent_history` returns the suffix within the budget, always with the leaf.
pub async fn recent_history_window(store: &dyn MessageStore) {
    let s = fresh_session("recent");
    append_chain(store, &s, &["m1", "m2", "m3", "m4", "m5"]).await;
    let path = store.path(&s, None).await.unwrap();
    let total: u64 = path.iter().map(|p| p.bytes).sum();
    let one = path[4].bytes;
    let all = store.recent_history(&s, None, u64::MAX, 1).await.unwrap();
    assert_eq!(ids(&all.messages), vec!["m1", "m2", "m3", "m4", "m5"]);
    assert!(!all.truncated);
    assert_eq!(all.total_bytes, total);
    let two = store
        .recent_history(&s, None, path[3].bytes + one, 1)
        .await
        .unwrap();
    assert_eq!(ids(&two.messages), vec!["m4", "m5"]);
    assert!(two.truncated);
    let leaf_only = store.recent_history(&s, None, 0, 1).await.unwrap();
    assert_eq!(ids(&leaf_only.messages), vec!["m5"]);
    let min = store.recent_history(&s, None, 0, 3).await.unwrap();
    assert_eq!(ids(&min.messages), vec!["m3", "m4", "m5"]);
    let branch = store
        .recent_history(&s, Some("m2"), u64::MAX, 1)
        .await
        .unwrap();
    assert_eq!(ids(&branch.messages), vec!["m1", "m2"]);
}

/// Word and phrase matching, stemming, unicode, inert syntax, empty queries, hit fields.
pub async fn search_semantics(store: &dyn MessageStore, index: Option<&dyn TextIndex>) {
    let Some(index) = index else { return };
    let caps = index.capabilities();
    let s = fresh_session("search");
    let tag = super::unique("tag").replace('-', "");
    let texts = [
        (
            "m1",
            format!("{tag} We are deploying the new release to production"),
        ),
        ("m2", format!("{tag} The rollout failed; rollback started")),
        ("m3", format!("{tag} Café crème and naïve résumé")),
        ("m4", format!("{tag} release production notes")),
    ];
    for (id, text) in &texts {
        store
            .append_one(&s, user(id, text), Parent::LatestLeaf)
            .await
            .unwrap();
    }
    let tool_only = assistant_with_tool(
        "m5",
        "lookup",
        json!({"q": "unindexedtoolword"}),
        json!("unindexedtoolword"),
        "",
    );
    store
        .append_one(&s, tool_only, Parent::LatestLeaf)
        .await
        .unwrap();
    let q = |text: &str| SearchQuery::new(format!("{tag} {text}")).in_session(s.clone());
    let found = |hits: Vec<memory_core::SearchHit>| {
        let mut v: Vec<String> = hits.into_iter().map(|h| h.message_id).collect();
        v.sort();
        v
    };
    // Every word must match; with stemming, deploy/deploying/deployed are one word.
    if caps.stemming && caps.language == memory_core::TextLanguage::English {
        assert_eq!(
            found(search_messages(index, &q("deployed")).await.unwrap()),
            vec!["m1"]
        );
    }
    assert_eq!(
        found(
            search_messages(index, &q("production release"))
                .await
                .unwrap()
        ),
        vec!["m1", "m4"]
    );
    assert!(finds_nothing(Some(index), &q("production rollback")).await);
    // Phrase mode keeps word order.
    if caps.phrase {
        let phrase = q("release production").mode(SearchMode::Phrase);
        assert_eq!(
            found(search_messages(index, &phrase).await.unwrap()),
            vec!["m4"]
        );
    }
    // Unicode words match.
    assert_eq!(
        found(search_messages(index, &q("café")).await.unwrap()),
        vec!["m3"]
    );
    // Query syntax in user input is inert and never an error.
    for hostile in [
        "\"unbalanced",
        "AND OR NOT",
        "deploy*",
        "col:value",
        "(((",
        "NEAR(a b)",
        "'; DROP TABLE x; --",
        "^ - + {}",
    ] {
        let hits = search_messages(index, &q(hostile)).await;
        assert!(hits.is_ok(), "query {hostile:?} failed: {hits:?}");
    }
    // An operator is a word like any other (unless the analyzer drops it as a stop word).
    if !caps.stop_words {
        assert!(finds_nothing(Some(index), &q("OR")).await);
    }
    // Only text parts are indexed.
    assert!(
        finds_nothing(
            Some(index),
            &SearchQuery::new("unindexedtoolword").in_session(s.clone())
        )
        .await
    );
    // Empty and punctuation-only queries give nothing.
    for empty in ["", "   ", "?!", "\"\""] {
        assert!(
            search_messages(index, &SearchQuery::new(empty))
                .await
                .unwrap()
                .is_empty(),
            "{empty:?}"
        );
    }
    // Hits carry session, id, role, content and a score; global search finds the same.
    let hits = search_messages(index, &q("rollback")).await.unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].session_id, s);
    assert_eq!(hits[0].message_id, "m2");
    assert_eq!(hits[0].role, Role::User);
    assert_eq!(hits[0].content, texts[1].1);
    assert!(hits[0].score.is_finite());
    let global = search_messages(index, &SearchQuery::new(format!("{tag} rollback")))
        .await
        .unwrap();
    assert_eq!(global.len(), 1);
    assert_eq!(global[0].session_id, s);
}

/// Better matches rank first.
pub async fn search_ranks_by_relevance(store: &dyn MessageStore, index: Option<&dyn TextIndex>) {
    let Some(index) = index else { return };
    let s = fresh_session("rank");
    let tag = super::unique("rk").replace('-', "");
    store
        .append_one(
            &s,
            user(
                "weak",
                &format!("{tag} one mention of lighthouse among many many other words here today"),
            ),
            Parent::LatestLeaf,
        )
        .await
        .unwrap();
    store
        .append_one(
            &s,
            user("strong", &format!("{tag} lighthouse lighthouse lighthouse")),
            Parent::LatestLeaf,
        )
        .await
        .unwrap();
    let hits = search_messages(
        index,
        &SearchQuery::new(format!("{tag} lighthouse")).in_session(s.clone()),
    )
    .await
    .unwrap();
    assert_eq!(
        hits.iter()
            .map(|h| h.message_id.as_str())
            .collect::<Vec<_>>(),
        vec!["strong", "weak"]
    );
    assert!(hits[0].score > hits[1].score);
}

/// Limit defaults to 20 and is capped at 1,000.
pub async fn search_limits(store: &dyn MessageStore, index: Option<&dyn TextIndex>) {
    let Some(index) = index else { return };
    let s = fresh_session("limits");
    let tag = super::unique("lim").replace('-', "");
    let batch = (0..1_005)
        .map(|i| NewMessage::new(user(&format!("m{i}"), &format!("{tag} common word {i}"))))
        .collect();
    store.append(&s, batch).await.unwrap();
    let q = SearchQuery::new(format!("{tag} common")).in_session(s.clone());
    assert_eq!(search_messages(index, &q).await.unwrap().len(), 20);
    assert_eq!(
        search_messages(index, &q.clone().limit(5))
            .await
            .unwrap()
            .len(),
        5
    );
    assert_eq!(
        search_messages(index, &q.clone().limit(5_000))
            .await
            .unwrap()
            .len(),
        1_000
    );
    assert!(finds_nothing(Some(index), &q.clone().limit(0)).await);
}

/// `messages` pages through a session in insertion order with parents.
pub async fn messages_page_in_insertion_order(store: &dyn MessageStore) {
    let s = fresh_session("pages");
    append_chain(store, &s, &["m1", "m2", "m3"]).await;
    store
        .append_one(&s, user("b1", "branch"), Parent::message("m1"))
        .await
        .unwrap();
    let page = store.messages(&s, None, 2).await.unwrap();
    let first = page.messages;
    assert_eq!(
        first
            .iter()
            .map(|m| m.message.id.as_str())
            .collect::<Vec<_>>(),
        vec!["m1", "m2"]
    );
    assert_eq!(first[0].parent_id, None);
    assert_eq!(first[1].parent_id.as_deref(), Some("m1"));
    let cursor = page.next_cursor.expect("a cursor while messages remain");
    let rest = store.messages(&s, Some(cursor), 10).await.unwrap();
    assert_eq!(
        rest.messages
            .iter()
            .map(|m| m.message.id.as_str())
            .collect::<Vec<_>>(),
        vec!["m3", "b1"]
    );
    assert_eq!(rest.messages[1].parent_id.as_deref(), Some("m1"));
    assert_eq!(rest.next_cursor, None, "no cursor after the last page");
    let exact = store.messages(&s, None, 4).await.unwrap();
    assert_eq!((exact.messages.len(), exact.next_cursor), (4, None));
    assert!(matches!(
        store.messages(&s, Some("not a cursor".into()), 10).await,
        Err(MemoryError::InvalidInput { .. })
    ));
    let empty = store
        .messages(&fresh_session("none"), None, 10)
        .await
        .unwrap();
    assert!(empty.messages.is_empty() && empty.next_cursor.is_none());
}

/// Overlay records are stored in order, need real endpoints, and leave messages alone.
pub async fn compaction_records(store: &dyn MessageStore) {
    let s = fresh_session("compactions");
    append_chain(store, &s, &["m1", "m2", "m3", "m4"]).await;
    let first = store
        .add_compaction(
            &s,
            NewCompaction {
                summary: "first".into(),
                from_message_id: "m1".into(),
                to_message_id: "m2".into(),
            },
        )
        .await
        .unwrap();
    let second = store
        .add_compaction(
            &s,
            NewCompaction {
                summary: "second".into(),
                from_message_id: "m1".into(),
                to_message_id: "m3".into(),
            },
        )
        .await
        .unwrap();
    assert_ne!(first.id, second.id);
    let listed = store.compactions(&s).await.unwrap();
    assert_eq!(
        listed
            .iter()
            .map(|c| c.summary.as_str())
            .collect::<Vec<_>>(),
        vec!["first", "second"]
    );
    assert!(listed[0].seq < listed[1].seq);
    let bad = store
        .add_compaction(
            &s,
            NewCompaction {
                summary: "x".into(),
                from_message_id: "m1".into(),
                to_message_id: "ghost".into(),
            },
        )
        .await;
    assert!(bad.unwrap_err().is_not_found());
    assert_eq!(
        store.history(&s, None).await.unwrap().len(),
        4,
        "overlays never delete originals"
    );
}

/// A long linear path reads back whole and in order.
pub async fn deep_linear_path(store: &dyn MessageStore, length: usize) {
    let s = fresh_session("deep");
    let mut start = 0;
    while start < length {
        let end = (start + 5_000).min(length);
        let batch = (start..end)
            .map(|i| NewMessage::new(user(&format!("d{i}"), "x")))
            .collect();
        store.append(&s, batch).await.unwrap();
        start = end;
    }
    let history = store.history(&s, None).await.unwrap();
    assert_eq!(history.len(), length);
    assert!(
        history
            .iter()
            .enumerate()
            .all(|(i, m)| m.id == format!("d{i}"))
    );
    assert_eq!(store.path_length(&s, None).await.unwrap(), length);
    if length > 2 {
        let mid = format!("d{}", length / 2);
        assert_eq!(
            store.history(&s, Some(mid.clone())).await.unwrap().len(),
            length / 2 + 1
        );
        assert_eq!(
            store.latest_leaf_under(&s, "d0").await.unwrap(),
            format!("d{}", length - 1)
        );
        let tail = store.path_tail(&s, None, 10).await.unwrap();
        assert_eq!(tail.total, length);
        let expected: Vec<String> = (length.saturating_sub(10)..length)
            .map(|i| format!("d{i}"))
            .collect();
        assert_eq!(
            tail.entries
                .iter()
                .map(|e| e.id.clone())
                .collect::<Vec<_>>(),
            expected
        );
        let recent = store.recent_history(&s, None, 0, 3).await.unwrap();
        assert_eq!(recent.messages.len(), 3);
        assert!(recent.truncated);
    }
}

/// Interleaved appends of two sessions and a bushy tree still give exact paths.
pub async fn interleaved_sessions_and_many_branches(store: &dyn MessageStore) {
    let a = fresh_session("inter-a");
    let b = fresh_session("inter-b");
    for i in 0..20 {
        let main_parent = if i == 0 {
            Parent::Root
        } else {
            Parent::message(format!("m{}", i - 1))
        };
        store
            .append_one(&a, user(&format!("m{i}"), "a"), main_parent)
            .await
            .unwrap();
        store
            .append_one(&b, user(&format!("m{i}"), "b"), Parent::LatestLeaf)
            .await
            .unwrap();
        if i % 3 == 0 && i > 0 {
            store
                .append_one(
                    &a,
                    assistant(&format!("alt{i}"), "alt"),
                    Parent::message(format!("m{}", i - 1)),
                )
                .await
                .unwrap();
            store
                .append_one(&a, user(&format!("alt{i}-2"), "alt"), Parent::LatestLeaf)
                .await
                .unwrap();
        }
    }
    let expected_b: Vec<String> = (0..20).map(|i| format!("m{i}")).collect();
    assert_eq!(ids(&store.history(&b, None).await.unwrap()), expected_b);
    let a_main: Vec<String> = (0..20).map(|i| format!("m{i}")).collect();
    assert_eq!(
        ids(&store.history(&a, Some("m19".into())).await.unwrap()),
        a_main
    );
    assert_eq!(
        ids(&store.history(&a, None).await.unwrap()),
        ids(&store.history(&a, Some("m19".into())).await.unwrap())
    );
    // Branch alt18 hangs off m17 and has one child.
    let branch = store.history(&a, Some("alt18-2".into())).await.unwrap();
    let mut expected: Vec<String> = (0..18).map(|i| format!("m{i}")).collect();
    expected.push("alt18".into());
    expected.push("alt18-2".into());
    assert_eq!(ids(&branch), expected);
}

/// Re-sending a stored message is idempotent even when its given parent is gone.
pub async fn resend_with_missing_parent_is_already_exists(store: &dyn MessageStore) {
    let s = fresh_session("resend");
    store
        .append_one(&s, user("u1", "hello"), Parent::LatestLeaf)
        .await
        .unwrap();
    let again = store
        .append_one(&s, user("u1", "hello"), Parent::message("gone"))
        .await
        .unwrap();
    assert_eq!(again, AppendOutcome::AlreadyExists);
}

/// A bushy tree for the tail and fork checks: a main line `m0..m11`, branches off `m2`
/// (`b0..b3`, itself forking at `b1` into `c0, c1`) and `m7` (`d0`), then `m5` deleted (its
/// child re-links to `m4`). Returns the session and every message id.
async fn bushy_tree(store: &dyn MessageStore, name: &str) -> (SessionId, Vec<String>) {
    let s = fresh_session(name);
    let main: Vec<String> = (0..12).map(|i| format!("m{i}")).collect();
    let refs: Vec<&str> = main.iter().map(String::as_str).collect();
    append_chain(store, &s, &refs).await;
    for (id, parent) in [
        ("b0", "m2"),
        ("b1", "b0"),
        ("b2", "b1"),
        ("b3", "b2"),
        ("c0", "b1"),
        ("c1", "c0"),
        ("d0", "m7"),
        ("m11x", "m10"),
    ] {
        store
            .append_one(&s, user(id, id), Parent::message(parent))
            .await
            .unwrap();
    }
    assert_eq!(store.delete(&s, &["m5".to_owned()]).await.unwrap(), 1);
    let mut all: Vec<String> = main.into_iter().filter(|id| id != "m5").collect();
    all.extend(
        ["b0", "b1", "b2", "b3", "c0", "c1", "d0", "m11x"]
            .iter()
            .map(|id| (*id).to_owned()),
    );
    (s, all)
}

/// `path_tail` is exactly the end of `path` and counts the whole path, for every message
/// and limit, across runs, branch points and a deleted message; same leaf rules as `path`.
pub async fn path_tail_is_the_end_of_the_path(store: &dyn MessageStore) {
    let (s, all) = bushy_tree(store, "path-tail").await;
    let mut leaves: Vec<Option<String>> = all.iter().cloned().map(Some).collect();
    leaves.push(None);
    for leaf in leaves {
        let path = store.path(&s, leaf.clone()).await.unwrap();
        for limit in [0, 1, 2, 3, 5, 8, path.len(), path.len() + 4] {
            let tail = store.path_tail(&s, leaf.clone(), limit).await.unwrap();
            assert_eq!(tail.total, path.len(), "total to {leaf:?}");
            let start = path.len().saturating_sub(limit);
            assert_eq!(tail.entries, path[start..], "tail {limit} to {leaf:?}");
            assert_eq!(tail.is_whole_path(), start == 0);
        }
    }
    let path = store.path(&s, Some("c1".into())).await.unwrap();
    assert_eq!(
        path.iter().map(|e| e.id.as_str()).collect::<Vec<_>>(),
        vec!["m0", "m1", "m2", "b0", "b1", "c0", "c1"]
    );
    let empty = store
        .path_tail(&fresh_session("path-tail-empty"), None, 5)
        .await
        .unwrap();
    assert_eq!(empty, memory_core::PathTail::default());
    for leaf in ["nope", "m5"] {
        let missing = store.path_tail(&s, Some(leaf.into()), 3).await;
        assert!(
            matches!(missing, Err(MemoryError::NotFound { .. })),
            "{missing:?}"
        );
    }
    let other = fresh_session("path-tail-other");
    append_chain(store, &other, &["o1"]).await;
    assert!(
        store
            .path_tail(&s, Some("o1".into()), 3)
            .await
            .unwrap_err()
            .is_not_found()
    );
}

/// `forks` names each asked-for message with more than one child, with its children in
/// insertion order, and agrees with `children`; unknown ids, duplicates and another
/// session's ids change nothing.
pub async fn forks_name_the_branch_points(store: &dyn MessageStore) {
    let (s, all) = bushy_tree(store, "forks").await;
    let mut expected = std::collections::BTreeMap::new();
    for id in &all {
        let children = store.children(&s, id).await.unwrap();
        if children.len() > 1 {
            expected.insert(
                id.clone(),
                children.into_iter().map(|m| m.id).collect::<Vec<_>>(),
            );
        }
    }
    assert_eq!(
        expected.keys().map(String::as_str).collect::<Vec<_>>(),
        vec!["b1", "m10", "m2", "m7"]
    );
    assert_eq!(expected["m2"], vec!["m3", "b0"]);
    let mut asked = all.clone();
    asked.push("nope".into());
    asked.push("m2".into());
    assert_eq!(store.forks(&s, &asked).await.unwrap(), expected);
    assert_eq!(
        store
            .forks(&s, &["b1".to_owned(), "b2".to_owned()])
            .await
            .unwrap(),
        std::collections::BTreeMap::from([(
            "b1".to_owned(),
            vec!["b2".to_owned(), "c0".to_owned()]
        )])
    );
    assert!(store.forks(&s, &[]).await.unwrap().is_empty());
    let other = fresh_session("forks-other");
    assert!(store.forks(&other, &all).await.unwrap().is_empty());
}

/// `latest_leaf_under` is the most recently appended message of the subtree (itself for a
/// leaf), across runs, forks and a deleted message's re-linked children; unknown, deleted
/// and other sessions' ids are not found.
pub async fn latest_leaf_under_is_the_newest_of_the_subtree(store: &dyn MessageStore) {
    let (s, _) = bushy_tree(store, "leaf-under").await;
    for (id, newest) in [
        ("m0", "m11x"),
        ("m2", "m11x"),
        ("b0", "c1"),
        ("b1", "c1"),
        ("b2", "b3"),
        ("b3", "b3"),
        ("c0", "c1"),
        ("m4", "m11x"),
        ("m6", "m11x"),
        ("m7", "m11x"),
        ("m11", "m11"),
        ("d0", "d0"),
        ("m10", "m11x"),
    ] {
        assert_eq!(
            store.latest_leaf_under(&s, id).await.unwrap(),
            newest,
            "under {id}"
        );
    }
    let other = fresh_session("leaf-under-other");
    append_chain(store, &other, &["o1"]).await;
    for id in ["nope", "m5", "o1"] {
        let missing = store.latest_leaf_under(&s, id).await;
        assert!(
            matches!(missing, Err(MemoryError::NotFound { .. })),
            "{id}: {missing:?}"
        );
    }
}
