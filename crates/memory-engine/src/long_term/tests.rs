#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use memory_core::ports::{MemoryFilter, MemoryKind};
use memory_core::{MemoryError, Role, SessionId, UiMessage};
use memory_testkit::in_memory::{InMemoryProfiles, ManualClock};

use super::*;

fn service() -> MemoryService {
    MemoryService::new(
        super::in_memory(Arc::new(InMemoryProfiles::new())),
        Arc::new(ManualClock::new(1_000)),
    )
}

fn conversation() -> Vec<UiMessage> {
    vec![
        UiMessage::text_message("m1", Role::User, "I just moved to Lisbon from Porto."),
        UiMessage::text_message(
            "m2",
            Role::Assistant,
            "Welcome to Lisbon! How is the new flat?",
        ),
        UiMessage::text_message("m3", Role::User, "Great, the rent is 1,450 euros a month."),
    ]
}

#[tokio::test]
async fn re_ingesting_a_conversation_is_a_no_op() {
    let s = service();
    let session = SessionId::new("chat-1").unwrap();
    let first = s.ingest("ada", &session, &conversation()).await.unwrap();
    assert_eq!((first.new, first.known), (3, 0));
    let again = s.ingest("ada", &session, &conversation()).await.unwrap();
    assert_eq!((again.new, again.known), (0, 3));
    assert_eq!(first.message_ids, again.message_ids);
    let other = SessionId::new("chat-2").unwrap();
    assert_eq!(
        s.ingest("ada", &other, &conversation()[..1])
            .await
            .unwrap()
            .new,
        1,
        "the session is part of the address"
    );
}

#[tokio::test]
async fn remember_supersedes_by_key_and_recall_fuses_channels() {
    let s = service();
    let session = SessionId::new("chat-1").unwrap();
    s.ingest("ada", &session, &conversation()).await.unwrap();
    let porto = RememberRequest {
        content: "Lives in Porto".into(),
        session_id: None,
        kind: None,
        key: Some("User City".into()),
        metadata: Default::default(),
        expires_at: None,
    };
    let old = s.remember("ada", porto).await.unwrap();
    assert_eq!(old.key.as_deref(), Some("user.city"));
    let lisbon = RememberRequest {
        content: "Lives in Lisbon".into(),
        session_id: Some("chat-1".into()),
        kind: Some(MemoryKind::Fact),
        key: Some("user city".into()),
        metadata: Default::default(),
        expires_at: None,
    };
    let new = s.remember("ada", lisbon).await.unwrap();
    let all = s
        .list(
            "ada",
            &MemoryFilter {
                include_superseded: true,
                ..MemoryFilter::default()
            },
            None,
            10,
        )
        .await
        .unwrap();
    assert_eq!(all.memories.len(), 2);
    assert_eq!(
        all.memories[0].superseded_by.as_deref(),
        Some(new.id.as_str())
    );
    // The filter's key is normalised as `remember` normalised the stored one.
    let by_key = s
        .list(
            "ada",
            &MemoryFilter {
                key: Some("User  City".into()),
                ..MemoryFilter::default()
            },
            None,
            10,
        )
        .await
        .unwrap();
    assert_eq!(by_key.memories.len(), 1);
    assert_eq!(by_key.memories[0].id, new.id);

    let recall = |q: &'static str| {
        let s = s.clone();
        async move {
            s.recall("ada", RecallRequest::new(q, 5))
                .await
                .unwrap()
                .hits
        }
    };
    let hits = recall("user city").await;
    match &hits[0].item {
        RecallItem::Memory(m) => assert_eq!(m.content, "Lives in Lisbon"),
        other => panic!("{other:?}"),
    }
    assert_eq!(hits[0].ranks[0].channel, "key");
    let lisbon_hits = recall("lisbon").await;
    assert!(
        matches!(lisbon_hits[0].item, RecallItem::Memory(_)),
        "typed memories outrank raw messages"
    );
    assert!(lisbon_hits.iter().any(|h| matches!(&h.item, RecallItem::Raw { content, .. } if content.contains("moved to Lisbon"))));
    assert!(
        lisbon_hits
            .iter()
            .all(|h| !matches!(&h.item, RecallItem::Memory(m) if m.id == old.id)),
        "superseded memories are never recalled"
    );

    s.forget("ada", &new.id, "user asked").await.unwrap();
    assert!(
        recall("user city")
            .await
            .iter()
            .all(|h| !matches!(h.item, RecallItem::Memory(_)))
    );
    assert!(s.purge("ada", &new.id, false).await.unwrap().memory);
    assert!(
        s.remember(
            "ada",
            RememberRequest {
                content: "  ".into(),
                session_id: None,
                kind: None,
                key: None,
                metadata: Default::default(),
                expires_at: None,
            }
        )
        .await
        .is_err()
    );
    // Profiles are isolated: another profile knows nothing (and one never written to does
    // not exist).
    s.remember(
        "bob",
        RememberRequest {
            content: "Bob likes tea.".into(),
            session_id: None,
            kind: None,
            key: None,
            metadata: Default::default(),
            expires_at: None,
        },
    )
    .await
    .unwrap();
    assert!(
        s.recall("bob", RecallRequest::new("lisbon", 5))
            .await
            .unwrap()
            .hits
            .is_empty()
    );
    assert!(matches!(
        s.recall("carol", RecallRequest::new("lisbon", 5)).await,
        Err(MemoryError::NotFound { .. })
    ));
}

#[tokio::test]
async fn export_then_import_round_trips_a_profile() {
    let s = service();
    let session = SessionId::new("chat-1").unwrap();
    s.ingest("ada", &session, &conversation()).await.unwrap();
    let key = |k: &str| Some(k.to_owned());
    s.remember(
        "ada",
        RememberRequest {
            content: "Lives in Porto".into(),
            session_id: None,
            kind: None,
            key: key("city"),
            metadata: Default::default(),
            expires_at: None,
        },
    )
    .await
    .unwrap();
    let now = s
        .remember(
            "ada",
            RememberRequest {
                content: "Lives in Lisbon".into(),
                session_id: None,
                kind: None,
                key: key("city"),
                metadata: Default::default(),
                expires_at: None,
            },
        )
        .await
        .unwrap();
    s.forget("ada", &now.id, "test").await.unwrap();
    let mut lines = Vec::new();
    s.export("ada", false, &mut |line: &str| {
        lines.push(line.to_owned());
        Ok(())
    })
    .await
    .unwrap();
    assert_eq!(lines.len(), 1 + 3 + 2);
    let report = s.import("bob", &lines).await.unwrap();
    assert_eq!((report.raw_new, report.memories_new), (3, 2));
    let again = s.import("bob", &lines).await.unwrap();
    assert_eq!((again.raw_known, again.memories_known), (3, 2));
    let mut copied = Vec::new();
    s.export("bob", false, &mut |line: &str| {
        copied.push(line.to_owned());
        Ok(())
    })
    .await
    .unwrap();
    assert_eq!(
        copied, lines,
        "lossless: chains, provenance and forget markers survive"
    );
    let bad = vec!["{\"kind\":\"raw\"}".to_owned()];
    assert!(s.import("carol", &bad).await.is_err());
}

/// A job held by a live worker is left alone; once that worker's lease runs out (it died),
/// another worker resumes the job, and the dead worker can no longer write it.
#[tokio::test]
async fn a_dead_workers_job_is_taken_over_after_its_lease() {
    use memory_core::MemoryError;
    use memory_core::ports::{Clock, JobQueue, JobState};
    let profiles = Arc::new(InMemoryProfiles::new());
    let clock = Arc::new(ManualClock::new(1_000));
    let s = MemoryService::new(super::in_memory(profiles.clone()), clock.clone());
    let job = s
        .enqueue_ingest(
            "ada",
            "chat",
            vec![IngestMessage::new("user", "hello there")],
        )
        .await
        .unwrap();
    let queue = profiles.jobs();
    let lease_millis = s.config().job_lease_millis;
    let (_, dead) = queue
        .claim_id(&job.id, "dead-worker", lease_millis, clock.now())
        .await
        .unwrap()
        .unwrap();
    assert!(s.resume_jobs("ada", false).await.unwrap().is_empty());
    assert!(matches!(
        s.run_job("ada", &job.id).await,
        Err(MemoryError::Conflict { .. })
    ));
    clock.advance(i64::try_from(lease_millis).unwrap() + 1);
    let resumed = s.resume_jobs("ada", false).await.unwrap();
    assert_eq!(resumed.len(), 1);
    assert_eq!(resumed[0].status, JobStatus::Done);
    let record = queue.get(&job.id).await.unwrap().unwrap();
    assert_eq!(record.state, JobState::Done);
    assert!(matches!(
        queue
            .checkpoint(&dead, "extracting", serde_json::json!({}), clock.now())
            .await,
        Err(MemoryError::Conflict { .. })
    ));
    assert_eq!(s.job("ada", &job.id).await.unwrap().status, JobStatus::Done);
    assert!(s.job("other", &job.id).await.unwrap_err().is_not_found());
}

/// Deleting a profile removes its jobs, vectors and records.
#[tokio::test]
async fn deleting_a_profile_reaches_every_backend() {
    use memory_core::ports::{JobFilter, JobQueue, VectorIndexes};
    let profiles = Arc::new(InMemoryProfiles::new());
    let s = MemoryService::new(
        super::in_memory(profiles.clone()),
        Arc::new(ManualClock::new(0)),
    )
    .with_embedder(Arc::new(memory_testkit::in_memory::HashingEmbedder::new(
        16,
    )));
    s.ingest_messages(
        "ada",
        "chat",
        vec![IngestMessage::new("user", "hello there")],
    )
    .await
    .unwrap();
    s.enqueue_ingest("ada", "chat", vec![IngestMessage::new("user", "queued")])
        .await
        .unwrap();
    let vectors = profiles.vector_index("ada").await.unwrap();
    assert!(vectors.model(RAW_NAMESPACE).await.unwrap().is_some());
    let in_chat = memory_core::ports::VectorFilter {
        session: Some("chat".into()),
        ..Default::default()
    };
    assert_eq!(
        vectors.count(RAW_NAMESPACE, &in_chat).await.unwrap(),
        1,
        "a raw message's vector carries its session"
    );
    assert!(s.delete_profile("ada").await.unwrap());
    assert!(!s.list_profiles().await.unwrap().contains(&"ada".to_owned()));
    let jobs = profiles
        .jobs()
        .list(&JobFilter::default(), None, 10)
        .await
        .unwrap();
    assert!(jobs.jobs.is_empty());
    let vectors = profiles.vector_index("ada").await.unwrap();
    assert!(vectors.model(RAW_NAMESPACE).await.unwrap().is_none());
    assert!(!s.delete_profile("ada").await.unwrap());
}

/// Records in one backend, a text index the engine writes in another: every write reaches
/// the index, a failed index write is replayed, and a rebuild restores it.
mod engine_written_index {
    use std::sync::Arc;

    use memory_core::SearchMode;
    use memory_core::ports::{
        KeyValueStore, MemoryKind, TextDocument, TextIndexes, TextQuery, namespaces,
    };
    use memory_testkit::faults::{FlakyTextIndexes, Outage};
    use memory_testkit::in_memory::{
        InMemoryKeyValueStore, InMemoryProfiles, InMemoryTextIndexes, ManualClock,
    };

    use super::super::*;

    struct Rig {
        records: Arc<InMemoryProfiles>,
        indexes: Arc<InMemoryTextIndexes>,
        text: Arc<FlakyTextIndexes>,
        outage: Outage,
        outbox: Arc<InMemoryKeyValueStore>,
    }

    impl Rig {
        fn new() -> Self {
            let indexes = Arc::new(InMemoryTextIndexes::new());
            let outage = Outage::new();
            Self {
                records: Arc::new(InMemoryProfiles::new()),
                text: Arc::new(FlakyTextIndexes::new(indexes.clone(), outage.clone())),
                indexes,
                outage,
                outbox: Arc::new(InMemoryKeyValueStore::new()),
            }
        }

        /// A service (a "process") over the shared backends.
        fn service(&self) -> MemoryService {
            let backends = LongTermBackends::from_parts(
                self.records.clone(),
                self.text.clone(),
                self.records.clone(),
                self.records.jobs(),
                self.outbox.clone(),
            );
            MemoryService::new(backends, Arc::new(ManualClock::new(1_000)))
        }

        async fn found(&self, namespace: &str, text: &str) -> Vec<String> {
            let index = self.indexes.text_index("ada").await.unwrap();
            let query = TextQuery::new(text, 10).mode(SearchMode::AnyWords);
            let mut ids: Vec<String> = index
                .search(namespace, &query)
                .await
                .unwrap()
                .into_iter()
                .map(|h| h.id)
                .collect();
            ids.sort();
            ids
        }
    }

    fn fact(content: &str, key: &str) -> RememberRequest {
        RememberRequest {
            content: content.into(),
            session_id: Some("chat".into()),
            kind: Some(MemoryKind::Fact),
            key: Some(key.into()),
            metadata: Default::default(),
            expires_at: None,
        }
    }

    #[tokio::test]
    async fn every_write_reaches_an_engine_written_index() {
        let rig = Rig::new();
        let s = rig.service();
        let ingest = s
            .ingest_messages(
                "ada",
                "chat",
                vec![IngestMessage::new("user", "I moved to Lisbon")],
            )
            .await
            .unwrap();
        assert_eq!(
            rig.found(namespaces::RAW, "lisbon").await,
            ingest.message_ids
        );
        let porto = s
            .remember("ada", fact("Lives in Porto", "city"))
            .await
            .unwrap();
        assert_eq!(
            rig.found(namespaces::MEMORIES, "lives").await,
            std::slice::from_ref(&porto.id)
        );
        let lisbon = s
            .remember("ada", fact("Lives in Lisbon", "city"))
            .await
            .unwrap();
        assert_eq!(
            rig.found(namespaces::MEMORIES, "lives").await,
            std::slice::from_ref(&lisbon.id),
            "a superseded memory leaves the index"
        );
        let hits = s
            .recall("ada", RecallRequest::new("where does she live", 5))
            .await
            .unwrap()
            .hits;
        assert_eq!(hits[0].item.id(), lisbon.id);
        s.forget("ada", &lisbon.id, "asked").await.unwrap();
        assert!(rig.found(namespaces::MEMORIES, "lives").await.is_empty());
        s.purge("ada", &porto.id, false).await.unwrap();
        assert!(rig.found(namespaces::MEMORIES, "porto").await.is_empty());
        let erased = s
            .remember(
                "ada",
                RememberRequest {
                    content: "Passport X1234567".into(),
                    session_id: Some("chat".into()),
                    kind: Some(MemoryKind::Fact),
                    key: None,
                    metadata: Default::default(),
                    expires_at: None,
                },
            )
            .await
            .unwrap();
        s.purge("ada", &erased.id, false).await.unwrap();
        assert!(rig.found(namespaces::MEMORIES, "passport").await.is_empty());
        assert!(
            rig.outbox.keys("").await.unwrap().is_empty(),
            "nothing left pending"
        );
    }

    #[tokio::test]
    async fn an_index_outage_is_replayed_before_the_next_recall() {
        let rig = Rig::new();
        let s = rig.service();
        rig.outage.set_down(true);
        let ingest = s
            .ingest_messages(
                "ada",
                "chat",
                vec![IngestMessage::new("user", "The heron nests by the river")],
            )
            .await
            .unwrap();
        assert_eq!(ingest.new, 1, "the records were written");
        assert!(
            s.recall("ada", RecallRequest::new("heron", 5))
                .await
                .is_err(),
            "a recall that would miss a document fails instead"
        );
        rig.outage.set_down(false);
        // A new process (the old one died) catches up before its first recall.
        let restarted = rig.service();
        let hits = restarted
            .recall("ada", RecallRequest::new("heron", 5))
            .await
            .unwrap()
            .hits;
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].ranks[0].channel, "raw_fts");
        assert!(rig.outbox.keys("").await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn reindex_rebuilds_a_profiles_text_index() {
        let rig = Rig::new();
        let s = rig.service();
        s.ingest_messages(
            "ada",
            "chat",
            vec![IngestMessage::new("user", "kingfisher sighting")],
        )
        .await
        .unwrap();
        let kept = s
            .remember("ada", fact("Likes kingfishers", "bird"))
            .await
            .unwrap();
        s.remember("ada", fact("Likes herons", "bird"))
            .await
            .unwrap();
        let index = rig.indexes.text_index("ada").await.unwrap();
        index.clear(namespaces::RAW).await.unwrap();
        index.clear(namespaces::MEMORIES).await.unwrap();
        let report = s.reindex_text("ada").await.unwrap();
        assert_eq!((report.documents, report.rebuilt), (2, true));
        assert_eq!(rig.found(namespaces::RAW, "kingfisher").await.len(), 1);
        let memories = rig.found(namespaces::MEMORIES, "likes").await;
        assert_eq!(memories.len(), 1);
        assert_ne!(memories[0], kept.id, "only the current version is indexed");
        // An index its store writes has nothing to rebuild.
        let plain = MemoryService::new(
            super::super::in_memory(Arc::new(InMemoryProfiles::new())),
            Arc::new(ManualClock::new(0)),
        );
        assert!(!plain.reindex_text("ada").await.unwrap().rebuilt);
    }

    /// The key a rebuild of ada's index marks itself unfinished under.
    const ADA_REBUILDING: &str = "index-rebuild/profiles/ada";

    impl Rig {
        /// The same records and key-value store over new, empty text indexes: the next
        /// process after the index's directory was lost (or a backup restored without it).
        fn with_empty_indexes(&self) -> Self {
            let indexes = Arc::new(InMemoryTextIndexes::new());
            let outage = Outage::new();
            Self {
                records: self.records.clone(),
                text: Arc::new(FlakyTextIndexes::new(indexes.clone(), outage.clone())),
                indexes,
                outage,
                outbox: self.outbox.clone(),
            }
        }
    }

    /// Ada's records: one raw message ("kingfisher") and one memory ("herons").
    async fn seed(s: &MemoryService) -> String {
        s.ingest_messages(
            "ada",
            "chat",
            vec![IngestMessage::new("user", "kingfisher sighting")],
        )
        .await
        .unwrap();
        s.remember("ada", fact("Likes herons", "bird"))
            .await
            .unwrap()
            .id
    }

    #[tokio::test]
    async fn a_lost_index_is_rebuilt_when_a_process_first_opens_the_profile() {
        let rig = Rig::new();
        let herons = seed(&rig.service()).await;
        let next = rig.with_empty_indexes();
        let hits = next
            .service()
            .recall("ada", RecallRequest::new("kingfisher herons", 5))
            .await
            .unwrap()
            .hits;
        assert_eq!(hits.len(), 2, "both records are found: {hits:?}");
        assert_eq!(next.found(namespaces::RAW, "kingfisher").await.len(), 1);
        assert_eq!(
            next.found(namespaces::MEMORIES, "herons").await,
            std::slice::from_ref(&herons)
        );
        assert!(rig.outbox.get(ADA_REBUILDING).await.unwrap().is_none());
        // A write is the first thing the next process does: the rebuild comes before it.
        let writer = rig.with_empty_indexes();
        writer
            .service()
            .remember("ada", fact("Likes egrets", "wader"))
            .await
            .unwrap();
        assert_eq!(writer.found(namespaces::RAW, "kingfisher").await.len(), 1);
        assert_eq!(
            writer.found(namespaces::MEMORIES, "herons").await,
            std::slice::from_ref(&herons)
        );
        assert_eq!(writer.found(namespaces::MEMORIES, "egrets").await.len(), 1);
    }

    #[tokio::test]
    async fn an_index_that_holds_documents_is_trusted_and_left_alone() {
        let rig = Rig::new();
        seed(&rig.service()).await;
        // A document the records do not hold: a rebuild would clear it.
        let index = rig.indexes.text_index("ada").await.unwrap();
        index
            .upsert(
                namespaces::RAW,
                vec![TextDocument::new("stray", "stray egret")],
            )
            .await
            .unwrap();
        rig.service()
            .recall("ada", RecallRequest::new("kingfisher", 5))
            .await
            .unwrap();
        assert_eq!(rig.found(namespaces::RAW, "egret").await, ["stray"]);
    }

    #[tokio::test]
    async fn a_rebuild_a_crash_cut_short_is_run_again_by_the_next_process() {
        let rig = Rig::new();
        let herons = seed(&rig.service()).await;
        // The crash: the raw page was written, the memories were not, the marker stayed
        // (unreadable here: the rebuild then starts from the first record).
        rig.outbox.set(ADA_REBUILDING, "unfinished").await.unwrap();
        let index = rig.indexes.text_index("ada").await.unwrap();
        index.clear(namespaces::MEMORIES).await.unwrap();
        let hits = rig
            .service()
            .recall("ada", RecallRequest::new("herons", 5))
            .await
            .unwrap()
            .hits;
        assert_eq!(hits.len(), 1);
        assert_eq!(
            rig.found(namespaces::MEMORIES, "herons").await,
            std::slice::from_ref(&herons)
        );
        assert!(rig.outbox.get(ADA_REBUILDING).await.unwrap().is_none());
    }

    #[tokio::test]
    async fn a_rebuild_resumes_from_its_saved_progress() {
        let rig = Rig::new();
        let herons = seed(&rig.service()).await;
        let next = rig.with_empty_indexes();
        // A rebuild that wrote every raw message, then stopped before the memories: the
        // raw page is not written again (here: it never was, so it stays missing).
        rig.outbox
            .set(
                ADA_REBUILDING,
                r#"{"cut_off":"index-outbox/profiles/ada/0","raw":null,"raw_done":true,"memories":null}"#,
            )
            .await
            .unwrap();
        next.service()
            .recall("ada", RecallRequest::new("herons", 5))
            .await
            .unwrap();
        assert_eq!(
            next.found(namespaces::MEMORIES, "herons").await,
            std::slice::from_ref(&herons)
        );
        assert!(next.found(namespaces::RAW, "kingfisher").await.is_empty());
        assert!(rig.outbox.get(ADA_REBUILDING).await.unwrap().is_none());
    }

    #[tokio::test]
    async fn deleting_a_profile_drops_its_rebuild_marker() {
        let rig = Rig::new();
        let s = rig.service();
        seed(&s).await;
        rig.outbox.set(ADA_REBUILDING, "unfinished").await.unwrap();
        assert!(s.delete_profile("ada").await.unwrap());
        assert!(rig.outbox.get(ADA_REBUILDING).await.unwrap().is_none());
    }
}

/// The same words said twice are two raw messages; ingesting the conversation again, or a
/// later batch of it, stores nothing twice and loses no occurrence.
#[tokio::test]
async fn repeated_utterances_are_kept_apart_and_re_ingest_stays_idempotent() {
    use memory_core::Timestamp;
    let s = service();
    let session = SessionId::new("chat").unwrap();
    let at = |minute: i64| Timestamp(1_700_000_000_000 + minute * 60_000);
    let first = vec![
        IngestMessage::new("assistant", "Shall I book it?").at(at(1)),
        IngestMessage::new("user", "yes").at(at(2)),
        IngestMessage::new("assistant", "And the hotel?").at(at(3)),
        IngestMessage::new("user", "yes").at(at(4)),
    ];
    let report = s
        .ingest_messages("ada", session.as_str(), first.clone())
        .await
        .unwrap();
    assert_eq!((report.new, report.known), (4, 0));
    let again = s
        .ingest_messages("ada", session.as_str(), first)
        .await
        .unwrap();
    assert_eq!((again.new, again.known), (0, 4));
    // A later batch says "yes" again, at another time: a third occurrence, kept.
    let later = vec![IngestMessage::new("user", "yes").at(at(9))];
    let report = s
        .ingest_messages("ada", session.as_str(), later.clone())
        .await
        .unwrap();
    assert_eq!((report.new, report.known), (1, 0));
    let again = s
        .ingest_messages("ada", session.as_str(), later)
        .await
        .unwrap();
    assert_eq!((again.new, again.known), (0, 1));
    // Undated messages in one batch are told apart by position.
    let undated = vec![
        IngestMessage::new("user", "ok"),
        IngestMessage::new("user", "ok"),
    ];
    let raw = s.raw_messages("chat", undated).unwrap();
    assert_ne!(raw[0].id, raw[1].id);
}
