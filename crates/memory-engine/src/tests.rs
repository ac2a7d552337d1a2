//! Engine tests: interaction tests on mockall mocks (the pattern users copy for their own
//! agent logic) and behaviour tests on the in-memory adapters.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use memory_core::{
    AppendOutcome, MemoryError, NewSession, Parent, Role, SearchQuery, SessionId, SessionInfo,
    SessionUsage, Timestamp, UiMessage,
};
use memory_testkit::in_memory::{InMemoryMessageStore, InMemorySessionRegistry, ManualClock};
use memory_testkit::mocks::{MockMessageStore, MockSessionRegistry};
use mockall::predicate::eq;

use crate::{Session, SessionManager};

fn sid(s: &str) -> SessionId {
    SessionId::new(s).unwrap()
}

fn info(id: &str) -> SessionInfo {
    SessionInfo {
        id: sid(id),
        name: None,
        parent_session_id: None,
        model: None,
        source: None,
        usage: SessionUsage::default(),
        end_reason: None,
        created_at: Timestamp(0),
        updated_at: Timestamp(0),
    }
}

fn user(id: &str, text: &str) -> UiMessage {
    UiMessage::text_message(id, Role::User, text)
}

#[tokio::test]
async fn append_all_chains_parents_from_the_latest_leaf() {
    let mut store = MockMessageStore::new();
    store
        .expect_append()
        .withf(|session, batch| {
            session.as_str() == "s1"
                && batch.len() == 3
                && batch[0].parent == Parent::LatestLeaf
                && batch[1].parent == Parent::message("a")
                && batch[2].parent == Parent::message("b")
        })
        .times(1)
        .returning(|_, batch| {
            Ok(batch
                .iter()
                .map(|_| AppendOutcome::Inserted { parent_id: None })
                .collect())
        });
    let session = Session::new(Arc::new(store), sid("s1"));
    let outcomes = session
        .append_all(
            vec![user("a", "1"), user("b", "2"), user("c", "3")],
            Parent::LatestLeaf,
        )
        .await
        .unwrap();
    assert_eq!(outcomes.len(), 3);
}

#[tokio::test]
async fn session_errors_propagate_unchanged() {
    let mut store = MockMessageStore::new();
    store
        .expect_append()
        .returning(|_, _| Err(MemoryError::not_found("parent message", "ghost")));
    let session = Session::new(Arc::new(store), sid("s1"));
    let err = session
        .append_to(user("a", "x"), Parent::message("ghost"))
        .await
        .unwrap_err();
    assert!(err.is_not_found());
}

#[tokio::test]
async fn manager_refuses_unregistered_sessions_without_touching_the_store() {
    let store = MockMessageStore::new(); // any call would panic: no expectations
    let mut registry = MockSessionRegistry::new();
    registry.expect_get().returning(|_| Ok(None));
    let manager = SessionManager::new(
        Arc::new(store),
        Arc::new(registry),
        Arc::new(ManualClock::new(5)),
    );
    let err = manager
        .append(&sid("nope"), user("a", "x"), Parent::LatestLeaf)
        .await
        .unwrap_err();
    assert!(matches!(
        err,
        MemoryError::NotFound {
            kind: "session",
            ..
        }
    ));
    assert!(
        manager
            .delete(&sid("nope"))
            .await
            .unwrap_err()
            .is_not_found()
    );
}

#[tokio::test]
async fn manager_append_touches_the_session_with_the_clock() {
    let mut store = MockMessageStore::new();
    store
        .expect_append()
        .times(1)
        .returning(|_, _| Ok(vec![AppendOutcome::Inserted { parent_id: None }]));
    let mut registry = MockSessionRegistry::new();
    registry
        .expect_get()
        .returning(|id| Ok(Some(info(id.as_str()))));
    registry
        .expect_touch()
        .with(eq(sid("s1")), eq(Timestamp(42)))
        .times(1)
        .returning(|_, _| Ok(()));
    let manager = SessionManager::new(
        Arc::new(store),
        Arc::new(registry),
        Arc::new(ManualClock::new(42)),
    );
    let outcome = manager
        .append(&sid("s1"), user("a", "x"), Parent::LatestLeaf)
        .await
        .unwrap();
    assert!(outcome.inserted());
}

#[tokio::test]
async fn manager_delete_clears_history_then_the_record() {
    let mut seq = mockall::Sequence::new();
    let mut store = MockMessageStore::new();
    let mut registry = MockSessionRegistry::new();
    registry
        .expect_get()
        .returning(|id| Ok(Some(info(id.as_str()))));
    store
        .expect_clear()
        .with(eq(sid("s1")))
        .times(1)
        .in_sequence(&mut seq)
        .returning(|_| Ok(()));
    registry
        .expect_delete()
        .with(eq(sid("s1")))
        .times(1)
        .in_sequence(&mut seq)
        .returning(|_| Ok(true));
    let manager = SessionManager::new(
        Arc::new(store),
        Arc::new(registry),
        Arc::new(ManualClock::new(0)),
    );
    manager.delete(&sid("s1")).await.unwrap();
}

#[tokio::test]
async fn a_failed_clear_keeps_the_session_record() {
    let mut store = MockMessageStore::new();
    let mut registry = MockSessionRegistry::new();
    registry
        .expect_get()
        .returning(|id| Ok(Some(info(id.as_str()))));
    store
        .expect_clear()
        .returning(|_| Err(MemoryError::backend("mock", "disk full")));
    registry.expect_delete().never();
    let manager = SessionManager::new(
        Arc::new(store),
        Arc::new(registry),
        Arc::new(ManualClock::new(0)),
    );
    assert!(manager.delete(&sid("s1")).await.is_err());
}

fn in_memory_manager(clock: Arc<ManualClock>) -> SessionManager {
    SessionManager::new(
        Arc::new(InMemoryMessageStore::new()),
        Arc::new(InMemorySessionRegistry::new()),
        clock,
    )
}

#[tokio::test]
async fn manager_lifecycle_on_in_memory_adapters() {
    let clock = Arc::new(ManualClock::new(1_000));
    let manager = in_memory_manager(clock.clone());
    let a = manager
        .create(NewSession {
            name: Some("first".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    clock.advance(10);
    let b = manager.create(NewSession::default()).await.unwrap();
    assert_ne!(a.id, b.id);
    clock.advance(10);
    manager
        .append_all(
            &a.id,
            vec![user("m1", "hello otter"), user("m2", "bye")],
            Parent::LatestLeaf,
        )
        .await
        .unwrap();
    let listed: Vec<_> = manager
        .list(10, 0)
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(
        listed,
        vec![a.id.clone(), b.id.clone()],
        "the active session comes first"
    );
    manager
        .append(&b.id, user("m1", "another otter"), Parent::LatestLeaf)
        .await
        .unwrap();
    let hits = manager.search(&SearchQuery::new("otter")).await.unwrap();
    assert_eq!(hits.len(), 2);
    let renamed = manager.rename(&b.id, "second").await.unwrap();
    assert_eq!(renamed.name.as_deref(), Some("second"));
    manager.delete(&a.id).await.unwrap();
    assert!(manager.get(&a.id).await.unwrap().is_none());
    let hits = manager.search(&SearchQuery::new("otter")).await.unwrap();
    assert_eq!(
        hits.iter().map(|h| &h.session_id).collect::<Vec<_>>(),
        vec![&b.id]
    );
    let child = manager
        .create(NewSession {
            parent_session_id: Some(a.id.clone()),
            ..Default::default()
        })
        .await;
    assert!(
        child.unwrap_err().is_not_found(),
        "parent session must exist"
    );
}

#[tokio::test]
async fn upsert_and_append_all_continue_the_conversation() {
    let manager = in_memory_manager(Arc::new(ManualClock::new(0)));
    let s = manager.create(NewSession::default()).await.unwrap();
    manager
        .append(&s.id, user("m1", "one"), Parent::LatestLeaf)
        .await
        .unwrap();
    manager
        .append_all(
            &s.id,
            vec![user("m2", "two"), user("m3", "three")],
            Parent::LatestLeaf,
        )
        .await
        .unwrap();
    let session = manager.session(&s.id).await.unwrap();
    let ids: Vec<_> = session
        .history(None)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.id)
        .collect();
    assert_eq!(ids, vec!["m1", "m2", "m3"]);
    let outcome = manager
        .upsert(&s.id, user("m2", "two, edited"), Parent::LatestLeaf)
        .await
        .unwrap();
    assert_eq!(outcome, AppendOutcome::AlreadyExists);
    assert_eq!(session.require("m2").await.unwrap().text(), "two, edited");
    assert_eq!(session.path_length(None).await.unwrap(), 3);
}
