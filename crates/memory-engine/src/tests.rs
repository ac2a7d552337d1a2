//! Engine tests: interaction tests on mockall mocks (the pattern users copy for their own
//! agent logic) and behaviour tests on the in-memory adapters.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use memory_core::ports::StoreCapabilities;
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
        name: Some("named".into()),
        parent_session_id: None,
        model: None,
        source: None,
        usage: SessionUsage::default(),
        end_reason: None,
        profile: None,
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
    store.expect_capabilities().return_const(StoreCapabilities {
        max_message_bytes: None,
    });
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
    store.expect_capabilities().return_const(StoreCapabilities {
        max_message_bytes: None,
    });
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
async fn manager_append_touches_and_names_the_session_in_one_call() {
    let mut store = MockMessageStore::new();
    store.expect_capabilities().return_const(StoreCapabilities {
        max_message_bytes: None,
    });
    store
        .expect_append()
        .times(1)
        .returning(|_, _| Ok(vec![AppendOutcome::Inserted { parent_id: None }]));
    let mut registry = MockSessionRegistry::new();
    // One read, to open the session; the title needs none.
    registry
        .expect_get()
        .times(1)
        .returning(|id| Ok(Some(info(id.as_str()))));
    registry
        .expect_touch_and_name()
        .withf(|id, now, name| {
            *id == sid("s1") && *now == Timestamp(42) && name.as_deref() == Some("x")
        })
        .times(1)
        .returning(|_, _, _| Ok(()));
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
    .with_search(
        Arc::new(memory_testkit::in_memory::InMemoryTextIndex::new()),
        Arc::new(memory_testkit::in_memory::InMemoryKeyValueStore::new()),
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

mod context_sessions {
    use std::sync::Arc;

    use memory_core::ports::{BlockProvider, KeyValueStore, MessageStore, SkillStore, TextIndex};
    use memory_core::{NewSession, Parent, Role, SessionId, UiMessage};
    use memory_testkit::in_memory::{
        InMemoryKeyValueStore, InMemoryMessageStore, InMemorySessionRegistry, InMemorySkillStore,
        InMemoryTextIndex, ManualClock,
    };
    use serde_json::json;

    use crate::SessionManager;
    use crate::context::{BlockSpec, ContextWiring, StoredSkills, TextBlock};

    struct World {
        manager: SessionManager,
        kv: Arc<InMemoryKeyValueStore>,
        store: Arc<InMemoryMessageStore>,
        skills: Arc<InMemorySkillStore>,
        index: Arc<InMemoryTextIndex>,
    }

    fn world() -> World {
        let kv = Arc::new(InMemoryKeyValueStore::new());
        let store = Arc::new(InMemoryMessageStore::new());
        let skills = Arc::new(InMemorySkillStore::new());
        let index = Arc::new(InMemoryTextIndex::new());
        let wiring = ContextWiring {
            profiles: None,
            kv: Some(kv.clone() as Arc<dyn KeyValueStore>),
            index: Some(index.clone() as Arc<dyn TextIndex>),
            specs: vec![
                BlockSpec::provider(
                    "soul",
                    BlockProvider::ReadOnly(Arc::new(TextBlock::new("Be brief."))),
                ),
                BlockSpec::writable("memory").description("Learned facts"),
                BlockSpec::searchable("notes"),
                BlockSpec::provider(
                    "skills",
                    BlockProvider::Skill(Arc::new(StoredSkills::new(
                        skills.clone() as Arc<dyn SkillStore>
                    ))),
                ),
            ],
            ..ContextWiring::default()
        };
        let manager = SessionManager::new(
            store.clone(),
            Arc::new(InMemorySessionRegistry::new()),
            Arc::new(ManualClock::new(1)),
        )
        .with_context(wiring)
        .with_search(Arc::new(InMemoryTextIndex::new()), kv.clone());
        World {
            manager,
            kv,
            store,
            skills,
            index,
        }
    }

    #[tokio::test]
    async fn a_scripted_model_writes_a_fact_that_appears_only_after_refresh() {
        let w = world();
        let info = w.manager.create(NewSession::default()).await.unwrap();
        let session = w.manager.session(&info.id).await.unwrap();
        let frozen = session.freeze_system_prompt().await.unwrap();
        let out = session
            .execute_tool(
                "set_context",
                &json!({"label": "memory", "content": "The user's cat is called Miso."}),
            )
            .await
            .unwrap();
        assert!(out.starts_with("Written to memory."), "{out}");
        // The same handle (cached by the manager) keeps the frozen prompt byte for byte.
        let again = w.manager.session(&info.id).await.unwrap();
        assert_eq!(again.freeze_system_prompt().await.unwrap(), frozen);
        let refreshed = again.refresh_system_prompt().await.unwrap();
        assert!(refreshed.contains("The user's cat is called Miso."));
        assert!(!frozen.contains("Miso"));
        assert_eq!(
            session.execute_tool("nope", &json!({})).await.unwrap(),
            "Error: unknown tool \"nope\""
        );
    }

    #[tokio::test]
    async fn unloading_a_skill_reclaims_its_output_in_history() {
        let w = world();
        w.skills
            .put("deploy", "Step 1. Step 2.", Some("How to deploy".into()))
            .await
            .unwrap();
        let info = w.manager.create(NewSession::default()).await.unwrap();
        let session = w.manager.session(&info.id).await.unwrap();
        let loaded = session
            .execute_tool("load_context", &json!({"label": "skills", "key": "deploy"}))
            .await
            .unwrap();
        assert_eq!(loaded, "Step 1. Step 2.");
        let assistant: UiMessage = serde_json::from_value(json!({
            "id": "a1", "role": "assistant",
            "parts": [{"type": "tool-load_context", "toolCallId": "c1", "state": "output-available",
                       "input": {"label": "skills", "key": "deploy"}, "output": loaded}]
        }))
        .unwrap();
        w.manager
            .append(
                &info.id,
                UiMessage::text_message("u1", Role::User, "deploy please"),
                Parent::LatestLeaf,
            )
            .await
            .unwrap();
        w.manager
            .append(&info.id, assistant, Parent::LatestLeaf)
            .await
            .unwrap();
        let out = session
            .execute_tool(
                "unload_context",
                &json!({"label": "skills", "key": "deploy"}),
            )
            .await
            .unwrap();
        assert_eq!(out, "Unloaded \"deploy\" from skills. Context reclaimed.");
        let stored = w.store.get(&info.id, "a1").await.unwrap().unwrap();
        assert_eq!(
            stored.parts[0].as_tool().unwrap().output,
            Some(json!("[skill unloaded: deploy]"))
        );
    }

    #[tokio::test]
    async fn delete_leaves_nothing_of_the_session_behind() {
        let w = world();
        let info = w.manager.create(NewSession::default()).await.unwrap();
        let session = w.manager.session(&info.id).await.unwrap();
        session
            .execute_tool("set_context", &json!({"label": "memory", "content": "x"}))
            .await
            .unwrap();
        session
            .execute_tool(
                "set_context",
                &json!({"label": "notes", "content": "a note", "metadata": {"title": "n"}}),
            )
            .await
            .unwrap();
        session.freeze_system_prompt().await.unwrap();
        w.manager
            .append(
                &info.id,
                UiMessage::text_message("u1", Role::User, "hi"),
                Parent::LatestLeaf,
            )
            .await
            .unwrap();
        assert!(!w.kv.keys("session:").await.unwrap().is_empty());
        w.manager.delete(&info.id).await.unwrap();
        assert!(
            w.kv.keys(&format!("session:{}:", info.id))
                .await
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            w.index
                .count(&format!("session:{}:block:notes", info.id))
                .await
                .unwrap(),
            0
        );
        assert!(w.store.history(&info.id, None).await.unwrap().is_empty());
        assert!(
            w.manager
                .session(&info.id)
                .await
                .unwrap_err()
                .is_not_found()
        );
    }

    #[tokio::test]
    async fn sessions_take_a_title_from_the_first_user_message() {
        let w = world();
        let info = w.manager.create(NewSession::default()).await.unwrap();
        w.manager
            .append(
                &info.id,
                UiMessage::text_message("s", Role::System, "system text"),
                Parent::LatestLeaf,
            )
            .await
            .unwrap();
        assert_eq!(w.manager.get(&info.id).await.unwrap().unwrap().name, None);
        let long = "Plan   a three-day trip to Lisbon with kids, museums and a beach day, please";
        w.manager
            .append(
                &info.id,
                UiMessage::text_message("u1", Role::User, long),
                Parent::LatestLeaf,
            )
            .await
            .unwrap();
        let name = w
            .manager
            .get(&info.id)
            .await
            .unwrap()
            .unwrap()
            .name
            .unwrap();
        assert_eq!(
            name,
            "Plan a three-day trip to Lisbon with kids, museums and a bea"
        );
        assert_eq!(name.chars().count(), 60);
        w.manager
            .append(
                &info.id,
                UiMessage::text_message("u2", Role::User, "other"),
                Parent::LatestLeaf,
            )
            .await
            .unwrap();
        assert_eq!(
            w.manager
                .get(&info.id)
                .await
                .unwrap()
                .unwrap()
                .name
                .unwrap(),
            name
        );
    }

    #[tokio::test]
    async fn fork_copies_the_path_and_links_the_parent() {
        let w = world();
        let info = w
            .manager
            .create(NewSession {
                name: Some("orig".into()),
                model: Some("m".into()),
                ..Default::default()
            })
            .await
            .unwrap();
        for (id, text) in [("m1", "one"), ("m2", "two"), ("m3", "three")] {
            w.manager
                .append(
                    &info.id,
                    UiMessage::text_message(id, Role::User, text),
                    Parent::LatestLeaf,
                )
                .await
                .unwrap();
        }
        let fork = w
            .manager
            .fork(&info.id, "m2", Some("fork".into()))
            .await
            .unwrap();
        assert_eq!(fork.parent_session_id.as_ref(), Some(&info.id));
        assert_eq!(fork.model.as_deref(), Some("m"));
        assert!(fork.updated_at >= fork.created_at);
        let ids: Vec<String> = w
            .store
            .history(&fork.id, None)
            .await
            .unwrap()
            .into_iter()
            .map(|m| m.id)
            .collect();
        assert_eq!(ids, vec!["m1", "m2"]);
        assert_eq!(
            w.store.history(&info.id, None).await.unwrap().len(),
            3,
            "the original is untouched"
        );
        assert!(
            w.manager
                .fork(&info.id, "ghost", None)
                .await
                .unwrap_err()
                .is_not_found()
        );
    }

    #[tokio::test]
    async fn session_search_tool_spans_sessions() {
        let w = world();
        let a = w.manager.create(NewSession::default()).await.unwrap();
        let b = w.manager.create(NewSession::default()).await.unwrap();
        w.manager
            .append(
                &a.id,
                UiMessage::text_message("m1", Role::User, "deploy the API"),
                Parent::LatestLeaf,
            )
            .await
            .unwrap();
        w.manager
            .append(
                &b.id,
                UiMessage::text_message("m1", Role::Assistant, "deploy finished"),
                Parent::LatestLeaf,
            )
            .await
            .unwrap();
        let tools = w.manager.tools();
        assert_eq!(tools[0].name, "session_search");
        let session_tools = w
            .manager
            .session(&a.id)
            .await
            .unwrap()
            .tools()
            .await
            .unwrap();
        assert!(session_tools.iter().all(|t| t.name != "session_search"));
        let out = w
            .manager
            .execute_tool("session_search", &json!({"query": "deploy"}))
            .await
            .unwrap();
        assert!(
            out.contains("[user] deploy the API")
                && out.contains("[assistant] deploy finished")
                && out.contains("\n---\n"),
            "{out}"
        );
        assert_eq!(
            w.manager
                .execute_tool("session_search", &json!({"query": "zzz"}))
                .await
                .unwrap(),
            "No results found."
        );
        assert!(
            w.manager
                .execute_tool("session_search", &json!({}))
                .await
                .unwrap()
                .starts_with("Error: ")
        );
        assert!(w.manager.execute_tool("other", &json!({})).await.is_none());
        let _ = SessionId::new("x");
    }
}

mod splitting {
    use std::sync::Arc;

    use memory_core::ports::MessageStore;
    use memory_core::{NewSession, Parent, Role, UiMessage};
    use memory_testkit::in_memory::{InMemoryMessageStore, InMemorySessionRegistry, ManualClock};

    use crate::SessionManager;

    #[tokio::test]
    async fn compact_and_split_ends_the_old_session_and_seeds_a_linked_one() {
        let store = Arc::new(InMemoryMessageStore::new());
        let manager = SessionManager::new(
            store.clone(),
            Arc::new(InMemorySessionRegistry::new()),
            Arc::new(ManualClock::new(1)),
        );
        let old = manager
            .create(NewSession {
                name: Some("long chat".into()),
                model: Some("m".into()),
                ..Default::default()
            })
            .await
            .unwrap();
        manager
            .append(
                &old.id,
                UiMessage::text_message("u1", Role::User, "hi"),
                Parent::LatestLeaf,
            )
            .await
            .unwrap();
        let new = manager
            .compact_and_split(&old.id, "We planned the trip.", None)
            .await
            .unwrap();
        assert_eq!(
            manager
                .get(&old.id)
                .await
                .unwrap()
                .unwrap()
                .end_reason
                .as_deref(),
            Some("compaction")
        );
        assert_eq!(new.parent_session_id.as_ref(), Some(&old.id));
        assert_eq!(new.model.as_deref(), Some("m"));
        assert_eq!(new.name.as_deref(), Some("long chat"));
        let history = store.history(&new.id, None).await.unwrap();
        assert_eq!(history.len(), 1);
        assert_eq!(history[0].role, Role::Assistant);
        assert_eq!(
            history[0].text(),
            "[Context from previous session]\n\nWe planned the trip."
        );
    }
}

/// The engine keeps an index its store does not write in step: the contract suite with
/// search, the model, and faults between the store write and the index write.
mod index_sync {
    use std::sync::Arc;

    use memory_core::ports::{
        KeyValueStore, MessageStore, MessageStoreExt, SessionRegistry, TextIndex,
    };
    use memory_core::{
        MemoryError, NewSession, Parent, Role, SearchQuery, SessionId, Timestamp, UiMessage,
    };
    use memory_testkit::faults::{FlakyTextIndex, Outage};
    use memory_testkit::in_memory::{
        InMemoryKeyValueStore, InMemoryMessageStore, InMemorySessionRegistry, InMemoryTextIndex,
    };

    use crate::{IndexedMessageStore, MessageSearch};

    struct Rig {
        raw: Arc<InMemoryMessageStore>,
        healthy: Arc<InMemoryTextIndex>,
        index: Arc<FlakyTextIndex>,
        outage: Outage,
        outbox: Arc<InMemoryKeyValueStore>,
        registry: Arc<InMemorySessionRegistry>,
    }

    impl Rig {
        fn new() -> Self {
            let healthy = Arc::new(InMemoryTextIndex::new());
            let outage = Outage::new();
            Self {
                raw: Arc::new(InMemoryMessageStore::new()),
                index: Arc::new(FlakyTextIndex::new(healthy.clone(), outage.clone())),
                healthy,
                outage,
                outbox: Arc::new(InMemoryKeyValueStore::new()),
                registry: Arc::new(InMemorySessionRegistry::new()),
            }
        }

        /// A new "process" over the same store, index, outbox and registry.
        fn open(&self) -> (Arc<dyn MessageStore>, MessageSearch) {
            self.open_listing(self.registry.clone())
        }

        /// A new "process" whose rebuilds list the sessions of `registry`.
        fn open_listing(
            &self,
            registry: Arc<dyn SessionRegistry>,
        ) -> (Arc<dyn MessageStore>, MessageSearch) {
            MessageSearch::pair(
                self.raw.clone(),
                self.index.clone(),
                self.outbox.clone(),
                registry,
            )
        }

        /// Registers a session (what a `SessionManager` does before its first append).
        async fn register(&self, id: &SessionId) {
            self.registry
                .create(id, &NewSession::default(), Timestamp(0))
                .await
                .unwrap();
        }

        fn set_down(&self, down: bool) {
            self.outage.set_down(down);
        }
    }

    fn sid(s: &str) -> SessionId {
        SessionId::new(s).unwrap()
    }

    fn user(id: &str, text: &str) -> UiMessage {
        UiMessage::text_message(id, Role::User, text)
    }

    async fn found(search: &MessageSearch, text: &str) -> Vec<String> {
        search
            .search(&SearchQuery::new(text))
            .await
            .unwrap()
            .into_iter()
            .map(|h| h.message_id)
            .collect()
    }

    #[tokio::test]
    async fn an_engine_written_index_passes_the_message_store_contract() {
        let index = Arc::new(InMemoryTextIndex::new());
        let store = IndexedMessageStore::new(
            Arc::new(InMemoryMessageStore::new()),
            index.clone(),
            Arc::new(InMemoryKeyValueStore::new()),
            Arc::new(InMemorySessionRegistry::new()),
        );
        memory_testkit::contract::message_store::run_all(&store, Some(index.as_ref()), 5_000).await;
    }

    #[test]
    fn an_engine_written_index_agrees_with_the_model() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let index = Arc::new(InMemoryTextIndex::new());
        let store = IndexedMessageStore::new(
            Arc::new(InMemoryMessageStore::new()),
            index.clone(),
            Arc::new(InMemoryKeyValueStore::new()),
            Arc::new(InMemorySessionRegistry::new()),
        );
        memory_testkit::model::check_against_model(&runtime, &store, Some(index.as_ref()), 64);
    }

    #[tokio::test]
    async fn a_failed_index_write_is_replayed_and_the_write_stands() {
        let rig = Rig::new();
        let (store, search) = rig.open();
        let s = sid("s");
        store
            .append_one(&s, user("m1", "first otter"), Parent::LatestLeaf)
            .await
            .unwrap();
        rig.set_down(true);
        // The store write succeeds even though the index is down.
        store
            .append_one(&s, user("m2", "second otter"), Parent::LatestLeaf)
            .await
            .unwrap();
        store.delete(&s, &["m1".into()]).await.unwrap();
        assert_eq!(rig.outbox.keys("").await.unwrap().len(), 2);
        // While the index is down, a search that would miss documents says so.
        assert!(search.search(&SearchQuery::new("otter")).await.is_err());
        rig.set_down(false);
        assert_eq!(found(&search, "otter").await, ["m2"]);
        assert!(rig.outbox.keys("").await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_crash_between_the_store_and_the_index_is_caught_up_on_restart() {
        let rig = Rig::new();
        let s = sid("s");
        {
            let (store, _) = rig.open();
            store
                .append_one(&s, user("m1", "kept otter"), Parent::LatestLeaf)
                .await
                .unwrap();
            store
                .append_one(&s, user("m2", "erased otter"), Parent::LatestLeaf)
                .await
                .unwrap();
            // The process dies after the store writes and before the index writes.
            rig.set_down(true);
            store
                .append_one(&s, user("m3", "late otter"), Parent::LatestLeaf)
                .await
                .unwrap();
            store.update(&s, user("m1", "kept beaver")).await.unwrap();
            store.delete(&s, &["m2".into()]).await.unwrap();
        }
        rig.set_down(false);
        let (_, search) = rig.open();
        let mut otters = found(&search, "otter").await;
        otters.sort();
        assert_eq!(
            otters,
            ["m3"],
            "the new message is found, the deleted one never again"
        );
        assert_eq!(found(&search, "beaver").await, ["m1"]);
    }

    /// A write another process could not index is found by this process's next search.
    #[tokio::test]
    async fn another_processes_failed_index_write_is_replayed_here() {
        let rig = Rig::new();
        let (_, searcher) = rig.open();
        assert!(found(&searcher, "otter").await.is_empty());
        let (writer, _) = rig.open();
        rig.set_down(true);
        writer
            .append_one(&sid("s"), user("m1", "otter seen"), Parent::LatestLeaf)
            .await
            .unwrap();
        rig.set_down(false);
        assert_eq!(found(&searcher, "otter").await, ["m1"]);
    }

    #[tokio::test]
    async fn reindex_rebuilds_the_namespace_from_the_store() {
        let rig = Rig::new();
        let (store, search) = rig.open();
        let s = sid("s");
        rig.register(&s).await;
        for i in 0..1_200 {
            store
                .append_one(&s, user(&format!("m{i}"), "heron"), Parent::LatestLeaf)
                .await
                .unwrap();
        }
        rig.healthy
            .clear(memory_core::ports::namespaces::MESSAGES)
            .await
            .unwrap();
        assert!(found(&search, "heron").await.is_empty());
        let report = search.reindex().await.unwrap();
        assert_eq!((report.documents, report.rebuilt), (1_200, true));
        let hits = search
            .search(&SearchQuery::new("heron").limit(1_000))
            .await
            .unwrap();
        assert_eq!(hits.len(), 1_000);
    }

    /// The sessions are listed after the index is cleared: a session another process made
    /// and indexed just before the clear is listed, so its documents come back.
    #[tokio::test]
    async fn reindex_lists_the_sessions_after_the_clear() {
        let rig = Rig::new();
        let (old, late) = (sid("old"), sid("late"));
        rig.register(&old).await;
        let (store, _) = rig.open();
        store
            .append_one(&old, user("m1", "heron"), Parent::LatestLeaf)
            .await
            .unwrap();
        // The listing is where another process's session, made and indexed only now, shows up.
        let (raw, healthy, registry) = (rig.raw.clone(), rig.healthy.clone(), rig.registry.clone());
        // The process that wrote `m1` (its index check is behind it) writes the late session.
        let (late_id, other) = (late.clone(), store.clone());
        let mut hooked = memory_testkit::mocks::MockSessionRegistry::new();
        hooked
            .expect_list()
            .times(1)
            .returning(move |limit, offset| {
                futures::executor::block_on(async {
                    let query = memory_core::ports::TextQuery::new("heron", 10);
                    let documents = healthy
                        .search(memory_core::ports::namespaces::MESSAGES, &query)
                        .await
                        .unwrap();
                    assert!(documents.is_empty(), "listed before the index was cleared");
                    registry
                        .create(&late_id, &NewSession::default(), Timestamp(1))
                        .await
                        .unwrap();
                    other
                        .append_one(&late_id, user("m2", "heron"), Parent::LatestLeaf)
                        .await
                        .unwrap();
                    assert_eq!(
                        raw.messages(&late_id, None, 10)
                            .await
                            .unwrap()
                            .messages
                            .len(),
                        1
                    );
                    registry.list(limit, offset).await
                })
            });
        let (_, search) = rig.open_listing(Arc::new(hooked));
        let report = search.reindex().await.unwrap();
        assert_eq!(report.documents, 2);
        assert_eq!(found(&search, "heron").await.len(), 2);
    }

    /// A manager (a "process") over the rig's store, a registry and an index.
    fn manager(
        rig: &Rig,
        registry: &Arc<memory_testkit::in_memory::InMemorySessionRegistry>,
        index: Arc<dyn memory_core::ports::TextIndex>,
    ) -> crate::SessionManager {
        crate::SessionManager::new(
            rig.raw.clone(),
            registry.clone(),
            Arc::new(memory_testkit::in_memory::ManualClock::new(0)),
        )
        .with_search(index, rig.outbox.clone())
    }

    async fn seeded(rig: &Rig) -> Arc<memory_testkit::in_memory::InMemorySessionRegistry> {
        let registry = Arc::new(memory_testkit::in_memory::InMemorySessionRegistry::new());
        let first = manager(rig, &registry, rig.index.clone());
        for (session, text) in [("a", "heron by the river"), ("b", "heron in the reeds")] {
            let id = first
                .create(memory_core::NewSession {
                    id: Some(sid(session)),
                    ..Default::default()
                })
                .await
                .unwrap()
                .id;
            first
                .append(&id, user("m1", text), Parent::LatestLeaf)
                .await
                .unwrap();
        }
        registry
    }

    /// The message index is lost (a new, empty one): the next process rebuilds it from the
    /// store before its first search, and before its first write.
    #[tokio::test]
    async fn a_lost_message_index_is_rebuilt_by_the_next_process() {
        let rig = Rig::new();
        let registry = seeded(&rig).await;
        let searcher = manager(&rig, &registry, Arc::new(InMemoryTextIndex::new()));
        let hits = searcher.search(&SearchQuery::new("heron")).await.unwrap();
        assert_eq!(hits.len(), 2, "{hits:?}");

        let empty = Arc::new(InMemoryTextIndex::new());
        let writer = manager(&rig, &registry, empty.clone());
        writer
            .append(&sid("a"), user("m2", "kingfisher"), Parent::LatestLeaf)
            .await
            .unwrap();
        let query = memory_core::ports::TextQuery::new("heron", 10);
        let documents = empty
            .search(memory_core::ports::namespaces::MESSAGES, &query)
            .await
            .unwrap();
        assert_eq!(documents.len(), 2, "the older messages came first");
        assert!(rig.outbox.keys("").await.unwrap().is_empty());
    }

    /// A write whose index update failed is replayed at start; the check comes first, so the
    /// replayed document does not make a lost index look whole.
    #[tokio::test]
    async fn the_catch_up_at_start_does_not_hide_a_lost_message_index() {
        let rig = Rig::new();
        let registry = seeded(&rig).await;
        rig.set_down(true);
        manager(&rig, &registry, rig.index.clone())
            .append(&sid("a"), user("m2", "otter"), Parent::LatestLeaf)
            .await
            .unwrap();
        rig.set_down(false);
        assert_eq!(rig.outbox.keys("index-outbox/").await.unwrap().len(), 1);
        let next = manager(&rig, &registry, Arc::new(InMemoryTextIndex::new()));
        next.catch_up_search().await.unwrap();
        assert_eq!(
            next.search(&SearchQuery::new("heron")).await.unwrap().len(),
            2
        );
        assert_eq!(
            next.search(&SearchQuery::new("otter")).await.unwrap().len(),
            1
        );
    }

    /// A rebuild cut short resumes after the last session it finished: that session is not
    /// written again (here it never was, so its message stays missing).
    #[tokio::test]
    async fn a_message_index_rebuild_resumes_after_the_last_session_it_finished() {
        let rig = Rig::new();
        let registry = seeded(&rig).await;
        rig.outbox
            .set(
                "index-rebuild/messages",
                r#"{"cut_off":"index-outbox/messages/0","after":"a"}"#,
            )
            .await
            .unwrap();
        let next = manager(&rig, &registry, Arc::new(InMemoryTextIndex::new()));
        let hits = next.search(&SearchQuery::new("heron")).await.unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].session_id, sid("b"));
        assert!(
            rig.outbox
                .get("index-rebuild/messages")
                .await
                .unwrap()
                .is_none()
        );
    }

    /// An index that holds documents is trusted: nothing is rebuilt.
    #[tokio::test]
    async fn a_message_index_that_holds_documents_is_left_alone() {
        let rig = Rig::new();
        let registry = seeded(&rig).await;
        let partial = Arc::new(InMemoryTextIndex::new());
        partial
            .upsert(
                memory_core::ports::namespaces::MESSAGES,
                vec![
                    memory_core::ports::TextDocument::new(
                        memory_core::ports::message_document_id("z", "m9"),
                        "stray heron",
                    )
                    .with_fields(memory_core::ports::TextFields {
                        session: Some("z".into()),
                        role: Some("user".into()),
                        ..Default::default()
                    }),
                ],
            )
            .await
            .unwrap();
        let next = manager(&rig, &registry, partial);
        assert_eq!(
            next.search(&SearchQuery::new("heron")).await.unwrap().len(),
            1
        );
    }

    #[tokio::test]
    async fn a_manager_without_an_index_says_search_is_not_supported() {
        let manager = crate::SessionManager::new(
            Arc::new(InMemoryMessageStore::new()),
            Arc::new(memory_testkit::in_memory::InMemorySessionRegistry::new()),
            Arc::new(memory_testkit::in_memory::ManualClock::new(0)),
        );
        assert!(matches!(
            manager.search(&SearchQuery::new("x")).await,
            Err(MemoryError::NotSupported { .. })
        ));
    }
}

/// A manager used for more sessions than it keeps handles of keeps at most
/// `KEPT_SESSIONS`, never one held elsewhere out from under its holder, and a session whose
/// handle went is served again from the stores.
#[tokio::test]
async fn the_manager_keeps_a_bounded_number_of_session_handles() {
    let manager = in_memory_manager(Arc::new(ManualClock::new(0)));
    let held = {
        manager
            .create(NewSession {
                id: Some(sid("held")),
                ..NewSession::default()
            })
            .await
            .unwrap();
        manager.session(&sid("held")).await.unwrap()
    };
    let more = crate::session_manager::KEPT_SESSIONS + 50;
    for i in 0..more {
        let id = sid(&format!("s{i}"));
        manager
            .create(NewSession {
                id: Some(id.clone()),
                ..NewSession::default()
            })
            .await
            .unwrap();
        manager
            .append(&id, user(&format!("m{i}"), "hello"), Parent::LatestLeaf)
            .await
            .unwrap();
        manager.session(&id).await.unwrap();
        assert!(manager.kept_handles() <= crate::session_manager::KEPT_SESSIONS);
    }
    // The first sessions' handles went; they are served from the stores as before.
    let first = manager.session(&sid("s0")).await.unwrap();
    assert_eq!(first.history(None).await.unwrap().len(), 1);
    // The handle held all along is still the kept one (same blocks, same frozen prompt).
    assert!(held.in_use());
}
