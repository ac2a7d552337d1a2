//! Recall, vectors, degraded mode, query analysis, synthesis and fusion order.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use memory_core::ports::{
    MemoryKind, MemoryProfiles, TextIndexes, TextQuery, VectorIndexes, namespaces,
};
use memory_core::{MetadataFilter, SearchMode};
use memory_testkit::in_memory::{
    HashingEmbedder, InMemoryProfiles, ManualClock, RoutedLanguageModel,
};
use serde_json::json;

use super::*;

const DAY: i64 = memory_core::DAY_MILLIS;

fn service_with(profiles: Arc<InMemoryProfiles>, dims: usize) -> MemoryService {
    MemoryService::new(
        super::in_memory(profiles),
        Arc::new(ManualClock::new(400 * DAY)),
    )
    .with_embedder(Arc::new(HashingEmbedder::new(dims)))
}

fn fact(content: &str, key: Option<&str>, kind: MemoryKind) -> RememberRequest {
    RememberRequest {
        content: content.into(),
        session_id: Some("chat".into()),
        kind: Some(kind),
        key: key.map(str::to_owned),
        metadata: Default::default(),
        expires_at: None,
    }
}

async fn export(s: &MemoryService, profile: &str) -> Vec<String> {
    let mut lines = Vec::new();
    s.export(profile, true, &mut |l: &str| {
        lines.push(l.to_owned());
        Ok(())
    })
    .await
    .unwrap();
    lines
}

async fn memory_vector(profiles: &InMemoryProfiles, id: &str) -> bool {
    let index = profiles.vector_index("p").await.unwrap();
    !index
        .get(MEMORY_NAMESPACE, &[id.to_owned()])
        .await
        .unwrap()
        .is_empty()
}

#[tokio::test]
async fn tasks_are_never_vectorized_and_superseded_or_forgotten_memories_lose_their_vectors() {
    let profiles = Arc::new(InMemoryProfiles::new());
    let s = service_with(profiles.clone(), 64);
    let task = s
        .remember("p", fact("Renew the passport", None, MemoryKind::Task))
        .await
        .unwrap();
    assert!(
        !memory_vector(&profiles, &task.id).await,
        "tasks are full-text only"
    );
    let old = s
        .remember("p", fact("Lives in Porto", Some("home"), MemoryKind::Fact))
        .await
        .unwrap();
    assert!(memory_vector(&profiles, &old.id).await);
    let new = s
        .remember("p", fact("Lives in Lisbon", Some("home"), MemoryKind::Fact))
        .await
        .unwrap();
    assert!(
        !memory_vector(&profiles, &old.id).await,
        "a superseded memory loses its vector"
    );
    assert!(memory_vector(&profiles, &new.id).await);
    s.forget("p", &new.id, "asked").await.unwrap();
    assert!(!memory_vector(&profiles, &new.id).await);
    let hits = s
        .recall("p", RecallRequest::new("Lives in Lisbon", 10))
        .await
        .unwrap()
        .hits;
    assert!(
        hits.iter()
            .all(|h| h.item.id() != new.id && h.item.id() != old.id),
        "{hits:?}"
    );
    // The task is still found by full text.
    let hits = s
        .recall("p", RecallRequest::new("passport", 10))
        .await
        .unwrap()
        .hits;
    assert_eq!(hits[0].item.id(), task.id);
    assert!(hits[0].ranks.iter().all(|r| r.channel != "direct_vector"));
}

#[tokio::test]
async fn vector_channels_find_what_full_text_misses_and_explain_says_so() {
    let profiles = Arc::new(InMemoryProfiles::new());
    let s = service_with(profiles.clone(), 256);
    let report = s
        .ingest_messages(
            "p",
            "chat",
            vec![
                IngestMessage::new("user", "Our deploys happen every Friday afternoon"),
                IngestMessage::new("assistant", "Noted: Friday afternoon deploys"),
            ],
        )
        .await
        .unwrap();
    assert_eq!((report.new, report.vectorized), (2, 2));
    assert!(report.usage.stages["embedding"].calls >= 1);
    let again = s
        .ingest_messages(
            "p",
            "chat",
            vec![IngestMessage::new(
                "user",
                "Our deploys happen every Friday afternoon",
            )],
        )
        .await
        .unwrap();
    assert_eq!(
        (again.new, again.known, again.vectorized),
        (0, 1, 0),
        "known messages are not re-embedded"
    );
    let response = s
        .recall("p", RecallRequest::new("deploys?", 5))
        .await
        .unwrap();
    let channels: Vec<&str> = response.hits[0].ranks.iter().map(|r| r.channel).collect();
    assert!(
        channels.contains(&"raw_fts") && channels.contains(&"raw_vector"),
        "{channels:?}"
    );
    assert!(
        response
            .degraded
            .iter()
            .any(|d| d.feature == "query_analysis")
    );
    assert!(response.degraded.iter().all(|d| d.feature != "vectors"));
}

#[tokio::test]
async fn without_llm_or_embedder_everything_else_works_and_says_what_is_missing() {
    let s = MemoryService::new(
        super::in_memory(Arc::new(InMemoryProfiles::new())),
        Arc::new(ManualClock::new(0)),
    );
    let report = s
        .ingest_messages(
            "p",
            "chat",
            vec![IngestMessage::new("user", "The wifi password is hunter2")],
        )
        .await
        .unwrap();
    assert_eq!(report.new, 1);
    assert!(report.degraded.iter().any(|d| d.feature == "vectors"));
    let response = s
        .recall(
            "p",
            RecallRequest::new("what is the wifi password", 5).with_answer(),
        )
        .await
        .unwrap();
    assert!(response.hits[0].item.content().contains("hunter2"));
    let features: Vec<&str> = response
        .degraded
        .iter()
        .map(|d| d.feature.as_str())
        .collect();
    assert!(
        features.contains(&"vectors")
            && features.contains(&"query_analysis")
            && features.contains(&"synthesis"),
        "{features:?}"
    );
    assert_eq!(response.terms, ["wifi", "password"]);
    assert!(response.answer.is_none());
}

#[tokio::test]
async fn a_new_embedding_model_is_never_mixed_in_and_reembed_rebuilds() {
    let profiles = Arc::new(InMemoryProfiles::new());
    let old = service_with(profiles.clone(), 32);
    old.ingest_messages(
        "p",
        "chat",
        vec![IngestMessage::new("user", "Tabs, not spaces")],
    )
    .await
    .unwrap();
    old.remember(
        "p",
        fact("Prefers tabs", Some("indent"), MemoryKind::Instruction),
    )
    .await
    .unwrap();
    let new = service_with(profiles.clone(), 48);
    let response = new
        .recall("p", RecallRequest::new("tabs", 5))
        .await
        .unwrap();
    assert!(
        response
            .degraded
            .iter()
            .any(|d| d.reason.contains("reembed")),
        "{:?}",
        response.degraded
    );
    assert!(!response.hits.is_empty(), "full text still answers");
    let ingest = new
        .ingest_messages(
            "p",
            "chat",
            vec![IngestMessage::new("user", "Two-space YAML")],
        )
        .await
        .unwrap();
    assert!(ingest.degraded.iter().any(|d| d.reason.contains("reembed")));
    let index = profiles.vector_index("p").await.unwrap();
    assert_eq!(
        index.model(RAW_NAMESPACE).await.unwrap().as_deref(),
        Some("hashing-32")
    );
    let report = new.reembed("p").await.unwrap();
    assert_eq!((report.raw, report.memories), (2, 1));
    assert_eq!(
        index.model(RAW_NAMESPACE).await.unwrap().as_deref(),
        Some("hashing-48")
    );
    let response = new
        .recall("p", RecallRequest::new("tabs", 5))
        .await
        .unwrap();
    assert!(response.degraded.iter().all(|d| d.feature != "vectors"));
}

#[tokio::test]
async fn purge_with_sources_leaves_no_trace_in_any_store() {
    let profiles = Arc::new(InMemoryProfiles::new());
    let s = service_with(profiles.clone(), 64);
    let report = s
        .ingest_messages(
            "p",
            "chat",
            vec![IngestMessage::new("user", "My passport number is X1234567")],
        )
        .await
        .unwrap();
    let store = profiles.open("p").await.unwrap();
    let mut memory = fact(
        "Passport number X1234567",
        Some("passport"),
        MemoryKind::Fact,
    );
    memory.session_id = Some("chat".into());
    let stored = s.remember("p", memory).await.unwrap();
    // Give it provenance, as extraction would.
    let mut with_sources = store.get_memory(&stored.id).await.unwrap().unwrap();
    store.purge(&stored.id).await.unwrap();
    with_sources.source_message_ids = report.message_ids.clone();
    s.core()
        .store_memories("p", &s.core().meter("p"), vec![with_sources.clone()])
        .await
        .unwrap();
    let purged = s.purge("p", &stored.id, true).await.unwrap();
    assert!(purged.memory);
    assert_eq!(purged.raw_messages, 1);
    assert_eq!(purged.vectors, 2);
    assert!(store.get_memory(&stored.id).await.unwrap().is_none());
    assert!(
        store
            .raw_by_ids(&report.message_ids)
            .await
            .unwrap()
            .is_empty()
    );
    let text = profiles.text_index("p").await.unwrap();
    for namespace in [namespaces::RAW, namespaces::MEMORIES] {
        let query = TextQuery::new("passport X1234567", 10).mode(SearchMode::AnyWords);
        assert!(text.search(namespace, &query).await.unwrap().is_empty());
    }
    let index = profiles.vector_index("p").await.unwrap();
    assert!(
        index
            .get(RAW_NAMESPACE, &report.message_ids)
            .await
            .unwrap()
            .is_empty()
    );
    let lines = export(&s, "p").await;
    assert!(lines.iter().all(|l| !l.contains("X1234567")), "{lines:?}");
}

#[tokio::test]
async fn export_with_vectors_round_trips_into_another_profile() {
    let profiles = Arc::new(InMemoryProfiles::new());
    let s = service_with(profiles.clone(), 16);
    s.ingest_messages("p", "chat", vec![IngestMessage::new("user", "hello there")])
        .await
        .unwrap();
    s.remember("p", fact("Likes tea", None, MemoryKind::Fact))
        .await
        .unwrap();
    let lines = export(&s, "p").await;
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.contains("\"kind\":\"vector\""))
            .count(),
        2
    );
    let report = s.import("q", &lines).await.unwrap();
    assert_eq!(report.vectors, 2);
    let copy = export(&s, "q").await;
    assert_eq!(copy, lines);
}

/// A model that answers query analysis and synthesis by looking at the system prompt.
fn analysing_model(analysis: serde_json::Value, broken_first: bool) -> Arc<RoutedLanguageModel> {
    let calls = std::sync::atomic::AtomicUsize::new(0);
    Arc::new(RoutedLanguageModel::new(move |request| {
        let system = &request.messages[0].content;
        if system.contains("analyse search queries") {
            let n = calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            if broken_first && n == 0 {
                return Ok("keys: user.home (sorry, no JSON)".into());
            }
            return Ok(analysis.to_string());
        }
        if system.contains("answer a question") {
            return Ok(
                json!({"answer": "Lisbon, since 2023-01-10", "citations": [1, 9]}).to_string(),
            );
        }
        Err(format!("unexpected prompt: {system}"))
    }))
}

#[tokio::test]
async fn query_analysis_drives_keys_terms_and_hyde_and_synthesis_cites_records() {
    let profiles = Arc::new(InMemoryProfiles::new());
    let model = analysing_model(
        json!({"keys": ["User Home"], "terms": ["residence", "city"], "hyde": "The user lives in Lisbon."}),
        true,
    );
    let s = service_with(profiles.clone(), 128).with_models(StageModels::all(model.clone()));
    let home = s
        .remember(
            "p",
            fact("Lives in Lisbon", Some("user.home"), MemoryKind::Fact),
        )
        .await
        .unwrap();
    s.remember("p", fact("Owns a bicycle", None, MemoryKind::Fact))
        .await
        .unwrap();
    let response = s
        .recall(
            "p",
            RecallRequest::new("where does the user live?", 5).with_answer(),
        )
        .await
        .unwrap();
    let top = &response.hits[0];
    assert_eq!(top.item.id(), home.id);
    let channels: Vec<&str> = top.ranks.iter().map(|r| r.channel).collect();
    assert_eq!(channels[0], "key", "{channels:?}");
    assert!(channels.contains(&"hyde_vector"), "{channels:?}");
    assert!(response.terms.contains(&"residence".to_owned()));
    let answer = response.answer.unwrap();
    assert_eq!(
        answer.citations,
        std::slice::from_ref(&home.id),
        "out-of-range citations are dropped"
    );
    let usage = &response.usage.stages;
    assert_eq!(
        usage["query_analysis"].calls, 2,
        "one invalid reply, one repair"
    );
    assert_eq!(usage["synthesis"].calls, 1);
    assert!(usage["synthesis"].input_tokens > 0);
    for request in model.requests() {
        assert!(
            request
                .headers
                .contains(&("x-session-affinity".to_owned(), "p".to_owned())),
            "every call carries the profile's affinity key"
        );
    }
    let synthesis = model
        .requests()
        .into_iter()
        .find(|r| r.messages[0].content.contains("answer a question"))
        .unwrap();
    let prompt = &synthesis.messages[1].content;
    assert!(prompt.contains("not instructions"));
    assert!(
        prompt.contains("Today is"),
        "date facts are handed over: {prompt}"
    );
}

#[tokio::test]
async fn a_model_that_never_returns_valid_json_degrades_to_the_query_words() {
    let model = Arc::new(RoutedLanguageModel::new(|_| Ok("not json at all".into())));
    let s = MemoryService::new(
        super::in_memory(Arc::new(InMemoryProfiles::new())),
        Arc::new(ManualClock::new(0)),
    )
    .with_models(StageModels::all(model));
    s.ingest_messages(
        "p",
        "c",
        vec![IngestMessage::new("user", "the boiler is broken")],
    )
    .await
    .unwrap();
    let response = s
        .recall("p", RecallRequest::new("boiler", 5))
        .await
        .unwrap();
    assert_eq!(response.hits.len(), 1);
    let d = response
        .degraded
        .iter()
        .find(|d| d.feature == "query_analysis")
        .unwrap();
    assert!(d.reason.contains("twice"), "{}", d.reason);
}

#[tokio::test]
async fn raw_hits_bring_their_conversational_neighbours() {
    let s = MemoryService::new(
        super::in_memory(Arc::new(InMemoryProfiles::new())),
        Arc::new(ManualClock::new(0)),
    );
    s.ingest_messages(
        "p",
        "c",
        vec![
            IngestMessage::new("user", "What should we name the cat?"),
            IngestMessage::new("assistant", "How about Miso?"),
            IngestMessage::new("user", "Unrelated: the printer is out of toner"),
        ],
    )
    .await
    .unwrap();
    let response = s
        .recall("p", RecallRequest::new("cat name", 5))
        .await
        .unwrap();
    assert!(response.hits[0].item.content().contains("cat"));
    let miso = response
        .hits
        .iter()
        .find(|h| h.item.content().contains("Miso"))
        .unwrap();
    assert_eq!(miso.ranks[0].channel, "context");
}

#[tokio::test]
async fn a_date_the_question_names_is_searched_as_the_dated_channel() {
    let s = service_with(Arc::new(InMemoryProfiles::new()), 64);
    let at = |day: i64| memory_core::Timestamp(day * DAY);
    // The same activity in two conversations 60 days apart.
    for (session, day, text) in [
        (
            "early",
            300,
            "We planted basil and tomatoes in the garden today",
        ),
        (
            "late",
            360,
            "We planted basil and peppers in the garden today",
        ),
    ] {
        s.ingest_messages(
            "p",
            session,
            vec![IngestMessage::new("user", text).at(at(day))],
        )
        .await
        .unwrap();
    }
    // Asked on day 374: "two weeks ago" is day 360, give or take four days.
    let asked = RecallRequest::new("What did we plant two weeks ago?", 5).as_of(at(374));
    let response = s.recall("p", asked).await.unwrap();
    let window = response.date_window.clone().unwrap();
    assert_eq!((window.from, window.to), (at(356), at(365)));
    assert!(
        response.terms.contains(&"ago".to_owned()),
        "date words stay in the text query by default: {:?}",
        response.terms
    );
    let first = &response.hits[0];
    assert!(
        first.item.content().contains("peppers"),
        "{:?}",
        response.hits
    );
    assert!(first.ranks.iter().any(|r| r.channel == "dated"));
    assert!(
        response
            .hits
            .iter()
            .all(|h| h.item.content().contains("peppers")
                || h.ranks.iter().all(|r| r.channel != "dated")),
        "only what is inside the window is dated"
    );

    // Left to the dated channel alone on demand.
    let leaving = s.clone().with_config(LongTermConfig {
        text_keeps_date_words: false,
        ..LongTermConfig::default()
    });
    let asked = RecallRequest::new("What did we plant two weeks ago?", 5).as_of(at(374));
    let left = leaving.recall("p", asked).await.unwrap();
    assert!(left.date_window.is_some());
    assert!(!left.terms.contains(&"ago".to_owned()), "{:?}", left.terms);

    // A question without a date has no window and no dated channel; weight 0 turns it off.
    let plain = s
        .recall(
            "p",
            RecallRequest::new("What did we plant?", 5).as_of(at(374)),
        )
        .await
        .unwrap();
    assert!(plain.date_window.is_none());
    let off = s.clone().with_config(LongTermConfig {
        weights: ChannelWeights {
            dated: 0.0,
            ..ChannelWeights::default()
        },
        ..LongTermConfig::default()
    });
    let asked = RecallRequest::new("What did we plant two weeks ago?", 5).as_of(at(374));
    let response = off.recall("p", asked).await.unwrap();
    assert!(
        response
            .hits
            .iter()
            .all(|h| h.ranks.iter().all(|r| r.channel != "dated"))
    );
}

#[tokio::test]
async fn fusion_orders_key_over_memory_text_over_raw_text() {
    use memory_core::ports::{TextFields, TextHit, TextIndex, TextIndexCapabilities, namespaces};
    use memory_testkit::in_memory::InMemoryJobQueue;
    use memory_testkit::mocks::{
        MockLongTermMemoryStore, MockMemoryProfiles, MockTextIndex, MockTextIndexes,
    };
    let memory = |id: &str| memory_core::ports::MemoryRecord {
        id: id.into(),
        kind: MemoryKind::Fact,
        content: format!("content of {id}"),
        key: None,
        questions: vec![],
        session_id: None,
        source_message_ids: vec![],
        source_lines: None,
        recorded_at: memory_core::Timestamp(0),
        valid_at: None,
        superseded_by: None,
        forgotten: None,
        metadata: Default::default(),
        expires_at: None,
        merged: None,
        confirmed_at: None,
        recalled_at: None,
    };
    let mut store = MockLongTermMemoryStore::new();
    let keyed = memory("keyed");
    store
        .expect_current_by_key()
        .returning(move |kind, _| Ok((kind == MemoryKind::Fact).then(|| keyed.clone())));
    let mut text = MockTextIndex::new();
    text.expect_backend_name().return_const("mock");
    text.expect_capabilities()
        .return_const(TextIndexCapabilities {
            stemming: true,
            stop_words: false,
            phrase: true,
            rarity_ranking: true,
            written_by_store: true,
            language: memory_core::TextLanguage::English,
        });
    text.expect_search().returning(|namespace, _| {
        let (id, score) = if namespace == namespaces::MEMORIES {
            ("texty", 3.0)
        } else {
            ("r1", 9.0)
        };
        Ok(vec![TextHit {
            id: id.into(),
            text: "text".into(),
            fields: TextFields::default(),
            score,
        }])
    });
    let text: Arc<dyn TextIndex> = Arc::new(text);
    let mut texts = MockTextIndexes::new();
    texts
        .expect_text_index()
        .returning(move |_| Ok(Arc::clone(&text)));
    store
        .expect_get_memory()
        .returning(move |id| Ok(Some(memory(id))));
    store.expect_raw_by_ids().returning(|ids| {
        Ok(ids
            .iter()
            .map(|id| memory_core::ports::RawMessage {
                id: id.clone(),
                session_id: "s".into(),
                role: "user".into(),
                content: "raw text".into(),
                created_at: memory_core::Timestamp(0),
                metadata: Default::default(),
            })
            .collect())
    });
    store
        .expect_raw_neighbors_each()
        .returning(|ids, _| Ok(vec![Vec::new(); ids.len()]));
    // The memories returned are recorded as recalled, once, at the recall's time.
    store
        .expect_mark_recalled()
        .times(1)
        .withf(|ids, at| !ids.is_empty() && *at == memory_core::Timestamp(0))
        .returning(|_, _| Ok(()));
    let store: Arc<dyn memory_core::ports::LongTermMemoryStore> = Arc::new(store);
    let mut profiles = MockMemoryProfiles::new();
    profiles.expect_open().returning(move |_| Ok(store.clone()));
    profiles.expect_exists().returning(|_| Ok(true));
    let backends = LongTermBackends::from_parts(
        Arc::new(profiles),
        Arc::new(texts),
        Arc::new(InMemoryProfiles::new()),
        Arc::new(InMemoryJobQueue::new()),
        Arc::new(memory_testkit::in_memory::InMemoryKeyValueStore::new()),
    );
    let s = MemoryService::new(backends, Arc::new(ManualClock::new(0)));
    let hits = s
        .recall("p", RecallRequest::new("anything", 5))
        .await
        .unwrap()
        .hits;
    let ids: Vec<&str> = hits.iter().map(|h| h.item.id()).collect();
    assert_eq!(ids, ["keyed", "texty", "r1"]);
    assert!(hits[0].score > hits[1].score && hits[1].score > hits[2].score);
    assert_eq!(hits[2].ranks[0].channel, "raw_fts");
}

#[tokio::test]
async fn messages_stored_without_vectors_are_embedded_when_seen_again() {
    let profiles = Arc::new(InMemoryProfiles::new());
    let without = MemoryService::new(
        super::in_memory(profiles.clone()),
        Arc::new(ManualClock::new(0)),
    );
    let messages = || {
        vec![
            IngestMessage::new("user", "The office moves to Porto in June"),
            IngestMessage::new("assistant", "Noted"),
        ]
    };
    let first = without
        .ingest_messages("p", "chat", messages())
        .await
        .unwrap();
    assert_eq!((first.new, first.vectorized), (2, 0));
    // Later (say the embedding call failed, or no embedder was configured): the same
    // conversation arrives again and what has no vector gets one.
    let with = service_with(profiles.clone(), 64);
    let again = with.ingest_messages("p", "chat", messages()).await.unwrap();
    assert_eq!((again.new, again.known, again.vectorized), (0, 2, 2));
    let third = with.ingest_messages("p", "chat", messages()).await.unwrap();
    assert_eq!(third.vectorized, 0, "nothing is embedded twice");
}

/// A huge limit is refused at once (it aborted the process with a 27 GB allocation); a huge
/// list page is capped.
#[tokio::test]
async fn huge_limits_are_refused_or_capped() {
    let s = MemoryService::new(
        super::in_memory(Arc::new(InMemoryProfiles::new())),
        Arc::new(ManualClock::new(0)),
    );
    s.remember(
        "p",
        fact("Deploys happen on Fridays.", None, MemoryKind::Fact),
    )
    .await
    .unwrap();
    let err = s
        .recall("p", RecallRequest::new("deploy", 100_000_000))
        .await
        .unwrap_err();
    assert!(
        matches!(err, memory_core::MemoryError::InvalidInput { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("1000"), "{err}");
    let page = s
        .list(
            "p",
            &memory_core::ports::MemoryFilter::default(),
            None,
            usize::MAX,
        )
        .await
        .unwrap();
    assert_eq!(page.memories.len(), 1);
}

/// Reading a profile that does not exist is `NotFound`, and leaves no profile behind.
#[tokio::test]
async fn reads_of_a_missing_profile_are_not_found_and_create_nothing() {
    let profiles = Arc::new(InMemoryProfiles::new());
    let s = MemoryService::new(
        super::in_memory(profiles.clone()),
        Arc::new(ManualClock::new(0)),
    );
    let not_found = |r: memory_core::Result<()>| {
        assert!(
            matches!(r, Err(memory_core::MemoryError::NotFound { .. })),
            "{r:?}"
        );
    };
    not_found(
        s.recall("nosuch", RecallRequest::new("x", 5))
            .await
            .map(|_| ()),
    );
    not_found(
        s.list(
            "nosuch",
            &memory_core::ports::MemoryFilter::default(),
            None,
            5,
        )
        .await
        .map(|_| ()),
    );
    not_found(s.forget("nosuch", "id", "why").await);
    not_found(s.purge("nosuch", "id", false).await.map(|_| ()));
    not_found(s.export("nosuch", false, &mut |_| Ok(())).await);
    assert!(s.list_profiles().await.unwrap().is_empty());
    assert!(profiles.list().await.unwrap().is_empty());
}

/// Purging the current version of a key makes its predecessor current again, with its
/// vector, and leaves no pointer to the erased id.
#[tokio::test]
async fn purging_the_current_version_restores_its_predecessor() {
    let profiles = Arc::new(InMemoryProfiles::new());
    let s = service_with(profiles.clone(), 64);
    let old = s
        .remember("p", fact("Lives in Porto", Some("home"), MemoryKind::Fact))
        .await
        .unwrap();
    let new = s
        .remember("p", fact("Lives in Lisbon", Some("home"), MemoryKind::Fact))
        .await
        .unwrap();
    assert!(!memory_vector(&profiles, &old.id).await);
    s.purge("p", &new.id, false).await.unwrap();
    let store = profiles.open("p").await.unwrap();
    let current = store
        .current_by_key(MemoryKind::Fact, "home")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(current.id, old.id);
    assert_eq!(current.superseded_by, None);
    assert!(
        memory_vector(&profiles, &old.id).await,
        "its vector is back"
    );
    let hits = s
        .recall("p", RecallRequest::new("where does the user live", 5))
        .await
        .unwrap()
        .hits;
    assert!(hits.iter().all(|h| match &h.item {
        RecallItem::Memory(m) => m.id != new.id,
        RecallItem::Raw { .. } => true,
    }));
}

use memory_core::ports::Embedder;

/// An embedder that takes its time, so concurrent writers interleave between a memory's
/// vector write and another writer's supersession of it.
struct SlowEmbedder(HashingEmbedder);

#[async_trait::async_trait]
impl Embedder for SlowEmbedder {
    fn model_id(&self) -> &str {
        self.0.model_id()
    }
    fn dimensions(&self) -> usize {
        self.0.dimensions()
    }
    async fn embed(&self, texts: &[String]) -> memory_core::Result<Vec<Vec<f32>>> {
        tokio::time::sleep(std::time::Duration::from_millis(3)).await;
        self.0.embed(texts).await
    }
}

/// Concurrent writers of one key (six "processes", three rounds each) end with exactly one
/// current version, which has a vector, and no superseded version keeps one (13 of 18 did).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_remembers_of_one_key_leave_vectors_only_on_the_current_version() {
    let profiles = Arc::new(InMemoryProfiles::new());
    let mut writers = Vec::new();
    for w in 0..6 {
        let profiles = profiles.clone();
        writers.push(tokio::spawn(async move {
            let s = MemoryService::new(
                super::in_memory(profiles),
                Arc::new(memory_core::ports::SystemClock),
            )
            .with_embedder(Arc::new(SlowEmbedder(HashingEmbedder::new(32))));
            for round in 0..3 {
                s.remember(
                    "p",
                    fact(
                        &format!("The office is in room {w}-{round}"),
                        Some("office"),
                        MemoryKind::Fact,
                    ),
                )
                .await
                .unwrap();
            }
        }));
    }
    for w in writers {
        w.await.unwrap();
    }
    let store = profiles.open("p").await.unwrap();
    let versions = store.versions(MemoryKind::Fact, "office").await.unwrap();
    assert_eq!(versions.len(), 18);
    let current: Vec<&memory_core::ports::MemoryRecord> = versions
        .iter()
        .filter(|m| m.superseded_by.is_none())
        .collect();
    assert_eq!(current.len(), 1, "{versions:#?}");
    for m in &versions {
        assert_eq!(
            memory_vector(&profiles, &m.id).await,
            m.superseded_by.is_none(),
            "{} (superseded by {:?})",
            m.id,
            m.superseded_by
        );
    }
}

/// Importing an export whose key is current into a profile where it is current too leaves
/// one current version (the newest) without a vector on the other; an export whose vectors
/// come from another model is refused before anything is written.
#[tokio::test]
async fn import_applies_supersession_and_refuses_foreign_vectors_before_writing() {
    let source = Arc::new(InMemoryProfiles::new());
    let exporter = MemoryService::new(
        super::in_memory(source.clone()),
        Arc::new(ManualClock::new(500 * DAY)),
    )
    .with_embedder(Arc::new(HashingEmbedder::new(64)));
    let newer = exporter
        .remember(
            "p",
            fact("The office is in Lisbon", Some("office"), MemoryKind::Fact),
        )
        .await
        .unwrap();
    let lines = export(&exporter, "p").await;
    let vector_lines = lines
        .iter()
        .filter(|l| l.contains("\"kind\":\"vector\""))
        .count();
    assert!(vector_lines > 0);

    let target = Arc::new(InMemoryProfiles::new());
    let s = service_with(target.clone(), 64);
    let older = s
        .remember(
            "p",
            fact("The office is in Porto", Some("office"), MemoryKind::Fact),
        )
        .await
        .unwrap();
    let report = s.import("p", &lines).await.unwrap();
    assert_eq!(report.superseded, 1);
    let store = target.open("p").await.unwrap();
    let current = store
        .current_by_key(MemoryKind::Fact, "office")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(current.id, newer.id, "the newest version stays current");
    assert!(memory_vector(&target, &newer.id).await);
    assert!(!memory_vector(&target, &older.id).await);

    // Another model's vectors: refused, and nothing of the file is written.
    let other = Arc::new(InMemoryProfiles::new());
    let s = service_with(other.clone(), 64);
    s.remember("q", fact("Lunch is at noon", None, MemoryKind::Fact))
        .await
        .unwrap();
    let foreign: Vec<String> = lines
        .iter()
        .map(|l| l.replace("\"model\":\"hashing-64\"", "\"model\":\"another-model\""))
        .collect();
    assert!(
        foreign.iter().any(|l| l.contains("another-model")),
        "{foreign:?}"
    );
    let err = s.import("q", &foreign).await.unwrap_err();
    assert!(err.to_string().contains("nothing was imported"), "{err}");
    let page = s
        .list("q", &memory_core::ports::MemoryFilter::default(), None, 10)
        .await
        .unwrap();
    assert_eq!(page.memories.len(), 1, "only the profile's own memory");
}

fn tagged(content: &str, team: &str) -> RememberRequest {
    RememberRequest {
        metadata: serde_json::from_value(json!({ "team": team })).unwrap(),
        ..fact(content, None, MemoryKind::Fact)
    }
}

#[tokio::test]
async fn a_metadata_filter_ranks_inside_every_channel_and_still_fills_the_limit() {
    let s = service_with(Arc::new(InMemoryProfiles::new()), 64);
    // 120 memories of other teams say "deadline" loudest, beyond every channel's depth of 50.
    for i in 0..120 {
        s.remember("p", tagged(&format!("deadline deadline {i}"), "other"))
            .await
            .unwrap();
    }
    let mut apollo = Vec::new();
    for i in 0..8 {
        let content = format!("Apollo note {i}: the deadline moved, budget approved, venue booked");
        apollo.push(
            s.remember("p", tagged(&content, "apollo"))
                .await
                .unwrap()
                .id,
        );
    }
    s.forget("p", &apollo[7], "wrong").await.unwrap();
    s.ingest_messages(
        "p",
        "c",
        vec![IngestMessage::new("user", "the deadline is tomorrow")],
    )
    .await
    .unwrap();

    let unfiltered = s
        .recall("p", RecallRequest::new("deadline", 5))
        .await
        .unwrap();
    assert!(
        unfiltered
            .hits
            .iter()
            .all(|h| !h.item.content().starts_with("Apollo")),
        "filtering after fusion would find nothing here"
    );
    let team = |t: &str| MetadataFilter::parse(&json!({ "team": t }).to_string()).unwrap();
    let filtered = s
        .recall(
            "p",
            RecallRequest::new("deadline", 5).filtered(team("apollo")),
        )
        .await
        .unwrap();
    assert_eq!(filtered.hits.len(), 5, "the limit is filled from the scope");
    for hit in &filtered.hits {
        let RecallItem::Memory(m) = &hit.item else {
            panic!("raw messages carry no metadata: {hit:?}");
        };
        assert!(apollo[..7].contains(&m.id), "{m:?}");
        let channels: Vec<&str> = hit.ranks.iter().map(|r| r.channel).collect();
        assert!(channels.contains(&"memory_fts"), "{channels:?}");
        assert!(channels.contains(&"direct_vector"), "{channels:?}");
    }
    let all = s
        .recall(
            "p",
            RecallRequest::new("deadline", 20).filtered(team("apollo")),
        )
        .await
        .unwrap();
    assert_eq!(
        all.hits.len(),
        7,
        "every current match, the forgotten one left out"
    );

    // A filter an empty object passes lets raw messages in.
    let not_other = MetadataFilter::parse(r#"{"$not": {"team": "other"}}"#).unwrap();
    let with_raw = s
        .recall("p", RecallRequest::new("deadline", 20).filtered(not_other))
        .await
        .unwrap();
    assert_eq!(with_raw.hits.len(), 8, "{:?}", with_raw.hits);
    assert!(
        with_raw
            .hits
            .iter()
            .any(|h| matches!(h.item, RecallItem::Raw { .. }))
    );
    // The key channel keeps to the scope too.
    s.remember(
        "p",
        RememberRequest {
            metadata: serde_json::from_value(json!({ "team": "other" })).unwrap(),
            ..fact("Prefers tea", Some("drink"), MemoryKind::Fact)
        },
    )
    .await
    .unwrap();
    let keyed = s
        .recall("p", RecallRequest::new("drink", 5).filtered(team("apollo")))
        .await
        .unwrap();
    assert!(
        keyed.hits.iter().all(|h| h.item.content() != "Prefers tea"),
        "{:?}",
        keyed.hits
    );
    let none = s
        .recall(
            "p",
            RecallRequest::new("deadline", 5).filtered(team("nobody")),
        )
        .await
        .unwrap();
    assert!(none.hits.is_empty());
}

#[tokio::test]
async fn rank_over_collected_candidates_is_what_recall_returns_under_any_setting() {
    let s = service_with(Arc::new(InMemoryProfiles::new()), 64);
    let at = |day: i64, n: i64| memory_core::Timestamp(day * DAY + n * 1_000);
    let sessions = [
        (
            "garden",
            300,
            [
                "We planted basil and tomatoes in the garden today",
                "Basil needs a lot of sun, keep it by the south wall",
                "The tomatoes were a gift from my neighbour Ana",
                "I should water the garden every morning in March",
            ],
        ),
        (
            "travel",
            330,
            [
                "I booked a flight to Lisbon for the conference",
                "The conference is about gardens and urban farming",
                "My sister will water the basil while I am away",
                "Remind me to pack the charger for the laptop",
            ],
        ),
        (
            "doctor",
            360,
            [
                "I went to the doctor on March 20th about my cough",
                "The doctor said it was bronchitis and to rest",
                "I have another appointment with the dentist next week",
                "Ana recommended a tea with honey for the cough",
            ],
        ),
    ];
    for (session, day, texts) in sessions {
        let messages = texts
            .iter()
            .enumerate()
            .map(|(n, text)| {
                let role = if n % 2 == 0 { "user" } else { "assistant" };
                IngestMessage::new(role, *text).at(at(day, n as i64))
            })
            .collect();
        s.ingest_messages("p", session, messages).await.unwrap();
    }
    s.remember(
        "p",
        fact(
            "Ana is the user's neighbour",
            Some("neighbour"),
            MemoryKind::Fact,
        ),
    )
    .await
    .unwrap();
    let gone = s
        .remember("p", fact("The user grows basil", None, MemoryKind::Fact))
        .await
        .unwrap();
    s.forget("p", &gone.id, "test").await.unwrap();

    let settings = [
        LongTermConfig::default(),
        LongTermConfig {
            rrf_k: 20.0,
            context_weight: 0.9,
            session_spread: 0.4,
            ..LongTermConfig::default()
        },
        LongTermConfig {
            weights: ChannelWeights {
                raw_fts: 2.5,
                raw_vector: 0.5,
                dated: 3.0,
                recency: 1.0,
                ..ChannelWeights::default()
            },
            recency_pool: 6,
            ..LongTermConfig::default()
        },
        LongTermConfig {
            context_weight: 0.0,
            ..LongTermConfig::default()
        },
    ];
    let asked = at(380, 0);
    for query in [
        "What did the doctor say in March?",
        "Who is Ana?",
        "basil garden water",
        "What did we plant two weeks ago?",
    ] {
        for limit in [3, 10] {
            let request = RecallRequest::new(query, limit).as_of(asked);
            let candidates = s.recall_candidates("p", &request).await.unwrap();
            for config in &settings {
                let ranked = rank(&candidates, config, limit).unwrap();
                let recalled: Vec<String> = s
                    .clone()
                    .with_config(config.clone())
                    .recall("p", request.clone())
                    .await
                    .unwrap()
                    .hits
                    .iter()
                    .map(|h| match &h.item {
                        RecallItem::Raw { id, .. } => format!("raw:{id}"),
                        RecallItem::Memory(m) => m.id.clone(),
                    })
                    .collect();
                assert!(!recalled.is_empty(), "{query}");
                assert_eq!(
                    ranked, recalled,
                    "{query} at limit {limit} under {config:?}"
                );
            }
        }
    }
}

/// A service over `profiles` without an embedder, whose ranking has no context expansion
/// (so the order before the rerank stage does not depend on the limit).
fn reranking_service(profiles: Arc<InMemoryProfiles>, depth: usize) -> MemoryService {
    let config = LongTermConfig {
        context_radius: 0,
        rerank_depth: depth,
        ..LongTermConfig::default()
    };
    MemoryService::new(
        super::in_memory(profiles),
        Arc::new(ManualClock::new(400 * DAY)),
    )
    .with_config(config)
}

async fn reranking_profile(profiles: Arc<InMemoryProfiles>) {
    let s = reranking_service(profiles, 30);
    let said = [
        "Maria said the printer is out of toner again",
        "Maria moved and now lives in Lisbon",
        "Where is the nearest bakery, Maria asked",
        "Maria lives near the river now, she says",
        "The team met Maria for lunch",
        "Maria does the accounts on Fridays",
        "Nobody knows where Maria parked",
    ];
    let messages = said
        .iter()
        .map(|t| IngestMessage::new("user", *t))
        .collect();
    s.ingest_messages("p", "c", messages).await.unwrap();
}

/// The rerank stage reads the best `rerank_depth` items with the query, orders them by its
/// scores (ties in fused order), keeps the limit, records its rank and score in each hit and
/// its cost apart in the usage report.
#[tokio::test]
async fn a_reranker_reorders_the_best_items_and_is_accounted_apart() {
    use memory_core::ports::Reranker;
    use memory_testkit::in_memory::WordOverlapReranker;
    let profiles = Arc::new(InMemoryProfiles::new());
    reranking_profile(profiles.clone()).await;
    let depth = 5;
    let query = "where does Maria live now";
    let fused = reranking_service(profiles.clone(), depth)
        .recall("p", RecallRequest::new(query, depth))
        .await
        .unwrap();
    assert_eq!(fused.hits.len(), depth);
    let reranker = Arc::new(WordOverlapReranker::new());
    let service = reranking_service(profiles.clone(), depth).with_reranker(reranker.clone());
    assert_eq!(service.reranker_model(), Some("word-overlap"));
    assert_eq!(service.embedder_model(), None);
    let reranked = service
        .recall("p", RecallRequest::new(query, 3))
        .await
        .unwrap();
    // What the reranker was shown: the fused top `depth`, in order.
    let shown: Vec<String> = fused
        .hits
        .iter()
        .map(|h| h.item.content().to_owned())
        .collect();
    assert_eq!(reranker.calls(), vec![shown.clone()]);
    let scores = reranker.score(query, &shown).await.unwrap();
    let mut expected: Vec<usize> = (0..depth).collect();
    expected.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    let expected: Vec<&str> = expected[..3]
        .iter()
        .map(|&i| fused.hits[i].item.id())
        .collect();
    let got: Vec<&str> = reranked.hits.iter().map(|h| h.item.id()).collect();
    assert_eq!(got, expected);
    for hit in &reranked.hits {
        let rerank = hit.ranks.last().unwrap();
        assert_eq!(rerank.channel, "rerank");
        assert_eq!(hit.score, rerank.score);
    }
    let usage = &reranked.usage.stages["rerank"];
    assert_eq!((usage.calls, usage.texts), (1, depth as u64));
    assert!(
        reranked.degraded.iter().all(|d| d.feature != "rerank"),
        "{:?}",
        reranked.degraded
    );

    // A reranker that likes the fused order's last best: the order is reversed.
    let mut reverse = memory_testkit::mocks::MockReranker::new();
    reverse.expect_model_id().return_const("reverse".to_owned());
    reverse
        .expect_score()
        .returning(|_, documents| Ok((0..documents.len()).map(|i| i as f32 / 10.0).collect()));
    let reversed = reranking_service(profiles, depth)
        .with_reranker(Arc::new(reverse))
        .recall("p", RecallRequest::new(query, 3))
        .await
        .unwrap();
    let got: Vec<&str> = reversed.hits.iter().map(|h| h.item.id()).collect();
    let last: Vec<&str> = fused
        .hits
        .iter()
        .rev()
        .take(3)
        .map(|h| h.item.id())
        .collect();
    assert_eq!(got, last);
}

/// A reranker that fails leaves the fused order, cut to the limit, and says why.
#[tokio::test]
async fn a_failing_reranker_keeps_the_fused_order_and_says_so() {
    use memory_testkit::mocks::MockReranker;
    let profiles = Arc::new(InMemoryProfiles::new());
    reranking_profile(profiles.clone()).await;
    let query = "where does Maria live now";
    let fused = reranking_service(profiles.clone(), 30)
        .recall("p", RecallRequest::new(query, 3))
        .await
        .unwrap();
    let mut reranker = MockReranker::new();
    reranker.expect_model_id().return_const("broken".to_owned());
    reranker
        .expect_score()
        .times(1)
        .returning(|_, _| Err(memory_core::MemoryError::transient("reranker", "down")));
    let ids = |r: &RecallResponse| {
        r.hits
            .iter()
            .map(|h| h.item.id().to_owned())
            .collect::<Vec<_>>()
    };
    // The fused order, and the reason the rerank stage gave.
    let with = |reranker: MockReranker| {
        let service = reranking_service(profiles.clone(), 30).with_reranker(Arc::new(reranker));
        async move {
            let response = service
                .recall("p", RecallRequest::new(query, 3))
                .await
                .unwrap();
            let reason = response
                .degraded
                .iter()
                .find(|d| d.feature == "rerank")
                .map(|d| d.reason.clone())
                .unwrap_or_default();
            (response, reason)
        }
    };
    let (degraded, reason) = with(reranker).await;
    assert_eq!(ids(&degraded), ids(&fused));
    assert!(reason.contains("down"), "{reason}");

    // A score that is not a number is a failure too, never a hit at the top.
    let mut reranker = MockReranker::new();
    reranker.expect_model_id().return_const("nan".to_owned());
    reranker.expect_score().returning(|_, documents| {
        let mut scores = vec![0.5_f32; documents.len()];
        scores[documents.len() - 1] = f32::NAN;
        Ok(scores)
    });
    let (degraded, reason) = with(reranker).await;
    assert_eq!(ids(&degraded), ids(&fused));
    assert!(reason.contains("1 not finite"), "{reason}");
}
