//! Extraction, verification, classification and durable jobs on scripted models.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use memory_core::ports::{
    ChatRequest, ChatResponse, LanguageModel, MemoryFilter, MemoryKind, MemoryProfiles,
    TextIndexes, TokenUsage, VectorIndexes,
};
use memory_core::{CivilDate, MemoryError, Timestamp};
use memory_testkit::in_memory::{
    HashingEmbedder, InMemoryProfiles, ManualClock, RoutedLanguageModel,
};
use serde_json::{Value, json};

use super::*;

fn day(d: u32) -> Timestamp {
    CivilDate {
        year: 2024,
        month: 3,
        day: d,
    }
    .to_timestamp()
}

fn conversation(n: usize) -> Vec<IngestMessage> {
    let mut out = vec![
        IngestMessage::new("user", "I moved to Lisbon yesterday.").at(day(10)),
        IngestMessage::new("assistant", "Congratulations! How is the flat?").at(day(10)),
        IngestMessage::new(
            "user",
            "Rent is 1,450 euros. Please always answer in Portuguese from now on.",
        )
        .at(day(10)),
        IngestMessage::new("user", "Remind me to register at the town hall.").at(day(10)),
    ];
    while out.len() < n {
        out.push(
            IngestMessage::new("user", format!("filler message number {}", out.len())).at(day(10)),
        );
    }
    out.truncate(n);
    out
}

fn system(request: &ChatRequest) -> &str {
    &request.messages[0].content
}

fn user(request: &ChatRequest) -> &str {
    &request.messages[1].content
}

/// Answers like a well-behaved small model.
fn good_model() -> Arc<RoutedLanguageModel> {
    Arc::new(RoutedLanguageModel::new(|r| {
        let (system, user) = (system(r), user(r));
        if system.contains("extract durable memories") {
            let mut memories = vec![];
            if user.contains("moved to Lisbon") {
                memories.push(json!({"content": "Ada moved to Lisbon on 2024-03-09.", "lines": [0], "date": "2024-03-09"}));
                memories.push(json!({"content": "Ada owns a yacht.", "lines": [1]}));
                memories.push(json!({"content": "Always answer Ada in Portuguese.", "lines": [2]}));
                memories.push(json!({"content": "Register at the town hall.", "lines": [3]}));
            }
            return Ok(json!({"memories": memories}).to_string());
        }
        if system.contains("concrete details") {
            let memories = if user.contains("[2]") {
                vec![json!({"content": "Ada's rent is 1,450 euros a month.", "lines": [2, 99]})]
            } else {
                vec![]
            };
            return Ok(json!({"memories": memories}).to_string());
        }
        if system.contains("verify memories") {
            let memories: Vec<&str> = user.split("Memories:\n").nth(1).unwrap().lines().collect();
            let results: Vec<Value> = memories
                .iter()
                .enumerate()
                .map(|(i, m)| {
                    if m.contains("yacht") {
                        json!({"index": i, "verdict": "dropped", "failed_checks": ["supported"]})
                    } else if m.contains("1,450") {
                        json!({"index": i, "verdict": "corrected", "content": "Ada's rent in Lisbon is 1,450 euros a month."})
                    } else {
                        json!({"index": i, "verdict": "passed"})
                    }
                })
                .collect();
            return Ok(json!({"results": results}).to_string());
        }
        if system.contains("classify memories") {
            let memories: Vec<&str> = user.lines().skip(1).collect();
            let results: Vec<Value> = memories
                .iter()
                .enumerate()
                .map(|(i, m)| {
                    let (kind, key) = if m.contains("moved") {
                        ("event", Value::Null)
                    } else if m.contains("Portuguese") {
                        ("instruction", json!("reply language"))
                    } else if m.contains("Register") {
                        ("task", Value::Null)
                    } else {
                        ("fact", json!("Ada Rent"))
                    };
                    json!({"index": i, "kind": kind, "key": key,
                           "questions": ["q1?", "q2?", "q3?"]})
                })
                .collect();
            return Ok(json!({"results": results}).to_string());
        }
        Err(format!("unexpected prompt {system}"))
    }))
}

fn service(profiles: Arc<InMemoryProfiles>, model: Arc<dyn LanguageModel>) -> MemoryService {
    MemoryService::new(
        super::in_memory(profiles),
        Arc::new(ManualClock::new(day(20).0)),
    )
    .with_embedder(Arc::new(HashingEmbedder::new(64)))
    .with_models(StageModels::all(model))
}

#[tokio::test]
async fn extraction_verifies_classifies_and_stores_with_provenance() {
    let profiles = Arc::new(InMemoryProfiles::new());
    let model = good_model();
    let s = service(profiles.clone(), model.clone());
    let job = s
        .ingest_and_extract("ada", "chat-1", conversation(10))
        .await
        .unwrap();
    assert_eq!(job.status, JobStatus::Done, "{:?}", job.error);
    let r = &job.extraction;
    assert_eq!(
        (r.chunks, r.detail_windows),
        (1, 2),
        "10 messages get the detail pass"
    );
    assert_eq!(r.candidates, 5);
    assert_eq!((r.passed, r.corrected, r.dropped), (3, 1, 1), "{r:?}");
    assert_eq!(r.stored, 4);
    assert_eq!(job.new_messages, 10);
    assert!(
        job.messages.is_empty() && job.drafts.is_empty(),
        "a finished job keeps counts only"
    );

    let all = s
        .list("ada", &MemoryFilter::default(), None, 50)
        .await
        .unwrap()
        .memories;
    let by = |needle: &str| {
        all.iter()
            .find(|m| m.content.contains(needle))
            .unwrap()
            .clone()
    };
    assert!(
        all.iter().all(|m| !m.content.contains("yacht")),
        "the unsupported claim was dropped"
    );
    let moved = by("moved to Lisbon");
    assert_eq!(moved.kind, MemoryKind::Event);
    assert_eq!(
        moved.valid_at,
        Some(day(9)),
        "the stated date is when it was true"
    );
    assert_eq!(moved.recorded_at, day(20));
    assert_eq!(moved.source_lines, Some([0, 0]));
    assert_eq!(moved.source_message_ids, [job_message_id(&s, 0)]);
    assert_eq!(moved.questions.len(), 3);
    let rent = by("1,450");
    assert_eq!(
        rent.content, "Ada's rent in Lisbon is 1,450 euros a month.",
        "corrected"
    );
    assert_eq!(rent.key.as_deref(), Some("ada.rent"));
    assert_eq!(
        rent.source_lines,
        Some([2, 2]),
        "an out-of-window citation is ignored"
    );
    assert_eq!(by("Portuguese").kind, MemoryKind::Instruction);
    let task = by("town hall");
    assert_eq!(task.kind, MemoryKind::Task);
    assert_eq!(task.key, None);
    let index = profiles.vector_index("ada").await.unwrap();
    assert!(
        index
            .get(MEMORY_NAMESPACE, std::slice::from_ref(&task.id))
            .await
            .unwrap()
            .is_empty(),
        "tasks are not vectorized"
    );
    let vectors = index
        .get(MEMORY_NAMESPACE, std::slice::from_ref(&rent.id))
        .await
        .unwrap();
    assert_eq!(vectors.len(), 1);
    assert_eq!(
        vectors[0].fields,
        memory_core::ports::VectorFields {
            session: rent.session_id.clone(),
            kind: Some("fact".into()),
            time: Some(rent.recorded_at),
        },
        "a memory's vector carries its kind, session and time for filtered searches"
    );
    let facts = memory_core::ports::VectorFilter {
        kind: Some("fact".into()),
        ..Default::default()
    };
    let all = memory_core::ports::VectorFilter::default();
    let counted = index.count(MEMORY_NAMESPACE, &facts).await.unwrap();
    assert!(counted >= 1 && counted < index.count(MEMORY_NAMESPACE, &all).await.unwrap());

    // The transcript resolved the relative date against the message time.
    let extraction = model
        .requests()
        .into_iter()
        .find(|r| system(r).contains("durable"))
        .unwrap();
    assert!(
        user(&extraction).contains("yesterday [2024-03-09]"),
        "{}",
        user(&extraction)
    );
    for request in model.requests() {
        assert!(
            request
                .headers
                .contains(&("x-session-affinity".into(), "ada".into()))
        );
    }
    for stage in [
        "extraction",
        "extraction_detail",
        "verification",
        "classification",
        "embedding",
    ] {
        assert!(
            job.usage.stages[stage].calls >= 1,
            "{stage} accounted: {:?}",
            job.usage
        );
    }

    // Re-ingesting the conversation stores nothing new.
    let again = s
        .ingest_and_extract("ada", "chat-1", conversation(10))
        .await
        .unwrap();
    assert_eq!(
        (
            again.new_messages,
            again.known_messages,
            again.extraction.stored
        ),
        (0, 10, 0)
    );
}

fn job_message_id(s: &MemoryService, i: usize) -> String {
    s.raw_messages("chat-1", conversation(10)).unwrap()[i]
        .id
        .clone()
}

#[tokio::test]
async fn newer_keyed_memories_supersede_older_ones_across_ingests() {
    let profiles = Arc::new(InMemoryProfiles::new());
    let s = service(profiles.clone(), good_model());
    s.ingest_and_extract("ada", "chat-1", conversation(4))
        .await
        .unwrap();
    let first = s
        .list(
            "ada",
            &MemoryFilter {
                key: Some("ada.rent".into()),
                ..MemoryFilter::default()
            },
            None,
            10,
        )
        .await
        .unwrap()
        .memories;
    assert!(
        first.is_empty(),
        "4 messages: no detail pass, so no rent memory"
    );
    s.ingest_and_extract("ada", "chat-1", conversation(9))
        .await
        .unwrap();
    s.remember(
        "ada",
        RememberRequest {
            content: "Ada's rent is now 1,600 euros.".into(),
            session_id: None,
            kind: Some(MemoryKind::Fact),
            key: Some("ada.rent".into()),
            metadata: Default::default(),
            expires_at: None,
        },
    )
    .await
    .unwrap();
    let store = profiles.open("ada").await.unwrap();
    let chain = store.versions(MemoryKind::Fact, "ada.rent").await.unwrap();
    assert_eq!(chain.len(), 2);
    assert_eq!(
        chain[0].superseded_by.as_deref(),
        Some(chain[1].id.as_str())
    );
    assert!(chain[1].content.contains("1,600"));
}

#[tokio::test]
async fn chunks_overlap_by_two_messages_and_run_at_most_four_at_once() {
    struct Counting {
        in_flight: AtomicUsize,
        peak: AtomicUsize,
        seen: std::sync::Mutex<Vec<String>>,
    }
    #[async_trait]
    impl LanguageModel for Counting {
        async fn complete(&self, request: ChatRequest) -> memory_core::Result<ChatResponse> {
            let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            self.peak.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            self.in_flight.fetch_sub(1, Ordering::SeqCst);
            if request.messages[0].content.contains("durable") {
                self.seen
                    .lock()
                    .unwrap()
                    .push(request.messages[1].content.clone());
            }
            Ok(ChatResponse::new(
                json!({"memories": []}).to_string(),
                "counting",
                TokenUsage::default(),
            ))
        }
    }
    let model = Arc::new(Counting {
        in_flight: 0.into(),
        peak: 0.into(),
        seen: Default::default(),
    });
    let s = service(Arc::new(InMemoryProfiles::new()), model.clone());
    let long: Vec<IngestMessage> = (0..40)
        .map(|i| IngestMessage::new("user", format!("message {i}: {}", "x".repeat(1_000))))
        .collect();
    let job = s.ingest_and_extract("p", "c", long).await.unwrap();
    assert_eq!(job.status, JobStatus::Done);
    assert!(job.extraction.chunks >= 4, "{:?}", job.extraction);
    assert!(
        model.peak.load(Ordering::SeqCst) <= 4,
        "never more than four calls at once"
    );
    assert!(
        model.peak.load(Ordering::SeqCst) >= 2,
        "chunks do run concurrently"
    );
    let mut seen = model.seen.lock().unwrap().clone();
    seen.sort_by_key(|t| t[1..t.find(']').unwrap()].parse::<usize>().unwrap());
    for pair in seen.windows(2) {
        let last_two: Vec<&str> = pair[0].lines().rev().take(2).collect();
        let first_two: Vec<&str> = pair[1].lines().take(2).collect();
        assert_eq!(
            last_two.into_iter().rev().collect::<Vec<_>>(),
            first_two,
            "two messages of overlap"
        );
    }
    for chunk in &seen {
        assert!(
            chunk.len() <= 10_000 + 1_100,
            "about 10K characters per chunk: {}",
            chunk.len()
        );
    }
}

#[tokio::test]
async fn invalid_json_is_repaired_once_or_reported_and_never_silently_succeeds() {
    let attempts = Arc::new(AtomicUsize::new(0));
    let counter = attempts.clone();
    // The first extraction reply is prose, the repair is valid JSON.
    let repaired = Arc::new(RoutedLanguageModel::new(move |r| {
        if system(r).contains("durable") {
            if counter.fetch_add(1, Ordering::SeqCst) == 0 {
                return Ok("Here are the memories: Ada moved.".into());
            }
            return Ok(
                json!({"memories": [{"content": "Ada moved to Lisbon.", "lines": [0]}]})
                    .to_string(),
            );
        }
        if system(r).contains("verify") {
            return Ok(json!({"results": [{"index": 0, "verdict": "passed"}]}).to_string());
        }
        Ok(
            json!({"results": [{"index": 0, "kind": "event", "questions": ["a?", "b?", "c?"]}]})
                .to_string(),
        )
    }));
    let s = service(Arc::new(InMemoryProfiles::new()), repaired);
    let job = s
        .ingest_and_extract("p", "c", conversation(2))
        .await
        .unwrap();
    assert_eq!(job.status, JobStatus::Done);
    assert_eq!(
        (job.extraction.repaired_outputs, job.extraction.stored),
        (1, 1)
    );

    // Never valid: the job fails, says why, and the raw messages are still stored and searchable.
    let broken = Arc::new(RoutedLanguageModel::new(|_| Ok("no json".into())));
    let profiles = Arc::new(InMemoryProfiles::new());
    let s = service(profiles.clone(), broken);
    let job = s
        .ingest_and_extract("p", "c", conversation(2))
        .await
        .unwrap();
    assert_eq!(job.status, JobStatus::Failed);
    assert_eq!(job.failed_stage, Some(JobStatus::Extracting));
    assert!(
        job.error.as_deref().unwrap().contains("schema twice"),
        "{:?}",
        job.error
    );
    let text = profiles.text_index("p").await.unwrap();
    let query = memory_core::ports::TextQuery::new("Lisbon", 5);
    let hits = text
        .search(memory_core::ports::namespaces::RAW, &query)
        .await
        .unwrap();
    assert_eq!(hits.len(), 1);
}

#[tokio::test]
async fn a_crashed_job_resumes_from_its_checkpoint_without_redoing_earlier_stages() {
    let profiles = Arc::new(InMemoryProfiles::new());
    // First process: extraction works, verification is down.
    let flaky = Arc::new(RoutedLanguageModel::new(|r| {
        if system(r).contains("verify") {
            return Err("verification model unavailable".into());
        }
        good_model().complete_blocking(r)
    }));
    let first = service(profiles.clone(), flaky);
    let job = first
        .ingest_and_extract("ada", "chat-1", conversation(4))
        .await
        .unwrap();
    assert_eq!(job.status, JobStatus::Failed);
    assert_eq!(job.failed_stage, Some(JobStatus::Verifying));
    assert_eq!(
        job.candidates.len(),
        4,
        "the extraction checkpoint survived"
    );
    assert!(
        first
            .list("ada", &MemoryFilter::default(), None, 10)
            .await
            .unwrap()
            .memories
            .is_empty()
    );

    // A queued job that never ran (the process died right after acknowledging it).
    let queued = first
        .enqueue_ingest("ada", "chat-2", vec![IngestMessage::new("user", "hello")])
        .await
        .unwrap();
    assert_eq!(
        first.job("ada", &queued.id).await.unwrap().status,
        JobStatus::Queued
    );

    // Restart with a working model.
    let model = good_model();
    let second = service(profiles.clone(), model.clone());
    let resumed = second.resume_jobs("ada", true).await.unwrap();
    assert_eq!(resumed.len(), 2);
    assert!(
        resumed.iter().all(|j| j.status == JobStatus::Done),
        "{resumed:?}"
    );
    let extraction_calls = model
        .requests()
        .iter()
        .filter(|r| system(r).contains("durable") && user(r).contains("Lisbon"))
        .count();
    assert_eq!(extraction_calls, 0, "extraction was not repeated");
    let memories = second
        .list("ada", &MemoryFilter::default(), None, 10)
        .await
        .unwrap()
        .memories;
    assert_eq!(memories.len(), 3, "{memories:?}");
    let jobs = second.jobs("ada").await.unwrap();
    assert!(jobs.iter().all(|j| j.status == JobStatus::Done));
    assert!(matches!(
        second.job("ada", "missing").await,
        Err(MemoryError::NotFound { .. })
    ));
}

#[tokio::test]
async fn without_an_llm_a_job_stores_and_vectorizes_raw_messages_and_says_so() {
    let s = MemoryService::new(
        super::in_memory(Arc::new(InMemoryProfiles::new())),
        Arc::new(ManualClock::new(0)),
    )
    .with_embedder(Arc::new(HashingEmbedder::new(32)));
    let job = s
        .ingest_and_extract("p", "c", conversation(3))
        .await
        .unwrap();
    assert_eq!(job.status, JobStatus::Done);
    assert_eq!(job.vectorized, 3);
    assert!(job.degraded.iter().any(|d| d.feature == "extraction"));
    assert!(matches!(
        s.enqueue_ingest("p", "c", vec![IngestMessage::new("user", "  ")])
            .await,
        Err(MemoryError::InvalidInput { .. })
    ));
    assert!(matches!(
        s.enqueue_ingest("p", "c", vec![IngestMessage::new("narrator", "x")])
            .await,
        Err(MemoryError::InvalidInput { .. })
    ));
}

/// Lets a routed model answer synchronously inside another route.
trait CompleteBlocking {
    fn complete_blocking(&self, request: &ChatRequest) -> Result<String, String>;
}

impl CompleteBlocking for Arc<RoutedLanguageModel> {
    fn complete_blocking(&self, request: &ChatRequest) -> Result<String, String> {
        futures::executor::block_on(self.complete(request.clone()))
            .map(|r| r.content)
            .map_err(|e| e.to_string())
    }
}

#[tokio::test]
async fn remember_is_classified_like_an_extracted_memory_and_explicit_values_win() {
    let s = service(Arc::new(InMemoryProfiles::new()), good_model());
    let stored = s
        .remember_with_report(
            "ada",
            RememberRequest {
                content: "Always answer in Portuguese".into(),
                session_id: None,
                kind: None,
                key: None,
                metadata: Default::default(),
                expires_at: None,
            },
        )
        .await
        .unwrap();
    assert_eq!(stored.memory.kind, MemoryKind::Instruction);
    assert_eq!(stored.memory.key.as_deref(), Some("reply.language"));
    assert_eq!(stored.memory.questions.len(), 3);
    assert_eq!(stored.usage.stages["classification"].calls, 1);
    let explicit = s
        .remember(
            "ada",
            RememberRequest {
                content: "Always answer in Portuguese, formally".into(),
                session_id: None,
                kind: Some(MemoryKind::Fact),
                key: Some("tone".into()),
                metadata: Default::default(),
                expires_at: None,
            },
        )
        .await
        .unwrap();
    assert_eq!(
        (explicit.kind, explicit.key.as_deref()),
        (MemoryKind::Fact, Some("tone"))
    );
    let plain = MemoryService::new(
        super::in_memory(Arc::new(InMemoryProfiles::new())),
        Arc::new(ManualClock::new(0)),
    );
    let typed = plain
        .remember_with_report(
            "ada",
            RememberRequest {
                content: "Likes tea".into(),
                session_id: None,
                kind: None,
                key: None,
                metadata: Default::default(),
                expires_at: None,
            },
        )
        .await
        .unwrap();
    assert_eq!(typed.memory.kind, MemoryKind::Fact);
    assert!(typed.degraded.iter().any(|d| d.feature == "classification"));
}

fn flaky_verifier() -> Arc<RoutedLanguageModel> {
    Arc::new(RoutedLanguageModel::new(|r| {
        if system(r).contains("verify") {
            return Err("verification model unavailable".into());
        }
        good_model().complete_blocking(r)
    }))
}

#[tokio::test]
async fn a_second_failed_retry_stays_failed_and_a_purge_cancels_jobs_holding_erased_data() {
    let profiles = Arc::new(InMemoryProfiles::new());
    let s = service(profiles.clone(), flaky_verifier());
    let job = s
        .ingest_and_extract("ada", "chat-1", conversation(4))
        .await
        .unwrap();
    assert_eq!(job.failed_stage, Some(JobStatus::Verifying));
    let again = s.run_job("ada", &job.id).await.unwrap();
    assert_eq!(
        again.status,
        JobStatus::Failed,
        "never Done with every candidate dropped"
    );
    assert_eq!(again.candidates.len(), 4);
    assert_eq!(
        s.job("ada", &job.id).await.unwrap().attempts,
        2,
        "the queue's record counts both failed runs"
    );

    // A memory sourced from the job's first message is purged with its sources.
    let source = s.raw_messages("chat-1", conversation(4)).unwrap()[0]
        .id
        .clone();
    let mut memory = s
        .remember(
            "ada",
            RememberRequest {
                content: "Ada moved to Lisbon.".into(),
                session_id: Some("chat-1".into()),
                kind: Some(MemoryKind::Event),
                key: None,
                metadata: Default::default(),
                expires_at: None,
            },
        )
        .await
        .unwrap();
    let store = profiles.open("ada").await.unwrap();
    store.purge(&memory.id).await.unwrap();
    memory.source_message_ids = vec![source];
    store.insert_memory(memory.clone()).await.unwrap();
    s.purge("ada", &memory.id, true).await.unwrap();
    let cancelled = s.job("ada", &job.id).await.unwrap();
    assert!(
        cancelled.cancelled && cancelled.messages.is_empty() && cancelled.candidates.is_empty()
    );
    let working = service(profiles.clone(), good_model());
    assert!(
        working.resume_jobs("ada", true).await.unwrap().is_empty(),
        "a cancelled job never resumes"
    );
    assert!(
        working
            .list("ada", &MemoryFilter::default(), None, 10)
            .await
            .unwrap()
            .memories
            .is_empty()
    );
}

#[tokio::test]
async fn supersession_is_repaired_after_a_crash_between_insert_and_supersede() {
    let profiles = Arc::new(InMemoryProfiles::new());
    let s = service(profiles.clone(), good_model());
    let old = s
        .remember(
            "ada",
            RememberRequest {
                content: "Lives in Porto".into(),
                session_id: None,
                kind: Some(MemoryKind::Fact),
                key: Some("home".into()),
                metadata: Default::default(),
                expires_at: None,
            },
        )
        .await
        .unwrap();
    // The crash: the new version was inserted, its supersede never ran.
    let store = profiles.open("ada").await.unwrap();
    let mut new = old.clone();
    new.id = "new-version".into();
    new.content = "Lives in Lisbon".into();
    new.recorded_at = Timestamp(old.recorded_at.0 + 1);
    store.insert_memory(new.clone()).await.unwrap();
    // The resumed stage finds the record stored and repairs the chain.
    let (stored, superseded, _) = s
        .core()
        .store_memories("ada", &s.core().meter("ada"), vec![new.clone()])
        .await
        .unwrap();
    assert_eq!((stored, superseded), (0, 1));
    let chain = store.versions(MemoryKind::Fact, "home").await.unwrap();
    assert_eq!(chain[0].superseded_by.as_deref(), Some("new-version"));
    assert_eq!(chain[1].superseded_by, None);
    let index = profiles.vector_index("ada").await.unwrap();
    assert!(
        index
            .get(MEMORY_NAMESPACE, std::slice::from_ref(&old.id))
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn the_same_statement_from_other_messages_is_a_new_memory() {
    let profiles = Arc::new(InMemoryProfiles::new());
    let s = service(profiles.clone(), good_model());
    let first = s
        .ingest_and_extract("ada", "chat-1", conversation(4))
        .await
        .unwrap();
    let later = vec![
        IngestMessage::new("user", "As I said: I moved to Lisbon yesterday, again.").at(day(12)),
    ];
    let second = s.ingest_and_extract("ada", "chat-1", later).await.unwrap();
    assert_eq!(second.status, JobStatus::Done);
    assert_eq!(
        second.extraction.stored, 3,
        "said again by another message: new versions (the yacht is dropped again)"
    );
    let common: Vec<&String> = first
        .memory_ids
        .iter()
        .filter(|id| second.memory_ids.contains(id))
        .collect();
    assert!(common.is_empty(), "ids depend on the source messages");
}

/// A model that answers like `good_model`, slowly.
struct SlowModel(std::time::Duration);

#[async_trait]
impl LanguageModel for SlowModel {
    async fn complete(&self, request: ChatRequest) -> memory_core::Result<ChatResponse> {
        tokio::time::sleep(self.0).await;
        good_model().complete(request).await
    }
}

/// A stage longer than the lease keeps the job: the running worker renews its lease, so no
/// other worker can take the job while it runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heartbeats_keep_a_long_stage_leased() {
    use memory_core::ports::{Clock, JobQueue, JobState, SystemClock};
    let profiles = Arc::new(InMemoryProfiles::new());
    let config = LongTermConfig {
        job_lease_millis: 150,
        ..LongTermConfig::default()
    };
    let s = MemoryService::new(super::in_memory(profiles.clone()), Arc::new(SystemClock))
        .with_models(StageModels::all(Arc::new(SlowModel(
            std::time::Duration::from_millis(200),
        ))))
        .with_config(config);
    let job = s
        .enqueue_ingest("ada", "chat", conversation(2))
        .await
        .unwrap();
    let runner = {
        let s = s.clone();
        let id = job.id.clone();
        tokio::spawn(async move { s.run_job("ada", &id).await })
    };
    let queue = profiles.jobs();
    for _ in 0..6 {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let now = SystemClock.now();
        let stolen = queue.claim_id(&job.id, "thief", 150, now).await.unwrap();
        assert!(
            stolen.is_none(),
            "a running job with a live lease was claimed"
        );
    }
    let done = runner.await.unwrap().unwrap();
    assert_eq!(done.status, JobStatus::Done, "{:?}", done.error);
    assert_eq!(
        queue.get(&job.id).await.unwrap().unwrap().state,
        JobState::Done
    );
}

/// Every LLM call of ingest and recall carries its stage's output limit.
#[tokio::test]
async fn every_stage_bounds_its_output() {
    let model = good_model();
    let s = service(Arc::new(InMemoryProfiles::new()), model.clone());
    s.ingest_and_extract("ada", "chat-1", conversation(10))
        .await
        .unwrap();
    s.recall("ada", RecallRequest::new("where does ada live?", 5))
        .await
        .unwrap();
    let requests = model.requests();
    assert!(
        requests.len() >= 4,
        "extraction, verification, classification, query analysis"
    );
    for request in &requests {
        let limit = request.max_tokens.expect("every call is bounded");
        assert!((256..=8_192).contains(&limit), "{limit}");
    }
}

/// A failed LLM stage takes away only its own output: the raw messages are still vectorized
/// (a recall channel of their own), the job fails with the reason, and recall lists what is
/// missing until a retry succeeds.
#[tokio::test]
async fn a_failed_llm_stage_still_vectorizes_raw_messages_and_recall_says_what_is_missing() {
    let profiles = Arc::new(InMemoryProfiles::new());
    let down = Arc::new(RoutedLanguageModel::new(
        |_| Err("model server down".into()),
    ));
    let job = service(profiles.clone(), down)
        .ingest_and_extract("ada", "chat-1", conversation(4))
        .await
        .unwrap();
    assert_eq!(job.status, JobStatus::Failed);
    assert_eq!(job.failed_stage, Some(JobStatus::Extracting));
    assert!(job.raw_vectorized);
    assert_eq!(job.vectorized, 4, "every raw message has its vector");
    assert!(
        job.degraded
            .iter()
            .any(|d| d.feature == "extraction" && d.reason.contains("model server down")),
        "{:?}",
        job.degraded
    );

    // Recall (no LLM needed) finds the raw message through its vector, and says why no
    // memories came from it.
    let reader = MemoryService::new(
        super::in_memory(profiles.clone()),
        Arc::new(ManualClock::new(day(20).0)),
    )
    .with_embedder(Arc::new(HashingEmbedder::new(64)));
    let recalled = reader
        .recall("ada", RecallRequest::new("Lisbon", 5))
        .await
        .unwrap();
    assert!(
        recalled
            .hits
            .iter()
            .any(|h| h.ranks.iter().any(|r| r.channel == "raw_vector")),
        "the raw vector channel ran"
    );
    let missing = recalled
        .degraded
        .iter()
        .find(|d| d.feature == "extraction")
        .expect("recall names the failed stage");
    assert!(
        missing
            .reason
            .contains("1 ingest job(s) failed at extraction")
            && missing.reason.contains("model server down"),
        "{}",
        missing.reason
    );

    // Retried with a working model: memories, and no more degradation.
    let resumed = service(profiles.clone(), good_model())
        .resume_jobs("ada", true)
        .await
        .unwrap();
    assert_eq!(resumed[0].status, JobStatus::Done, "{:?}", resumed[0].error);
    assert!(resumed[0].degraded.is_empty(), "{:?}", resumed[0].degraded);
    assert!(resumed[0].extraction.stored > 0);
    let recalled = reader
        .recall("ada", RecallRequest::new("Lisbon", 5))
        .await
        .unwrap();
    assert!(
        recalled.degraded.iter().all(|d| d.feature != "extraction"),
        "{:?}",
        recalled.degraded
    );
}

/// Some calls failing is not success: the job ends `done_with_errors`, with the reason.
#[tokio::test]
async fn a_run_where_some_calls_failed_ends_done_with_errors() {
    let model = Arc::new(RoutedLanguageModel::new(|r| {
        if system(r).contains("classify memories") {
            return Err("classifier timed out".into());
        }
        good_model().complete_blocking(r)
    }));
    let job = service(Arc::new(InMemoryProfiles::new()), model)
        .ingest_and_extract("ada", "chat-1", conversation(4))
        .await
        .unwrap();
    assert_eq!(job.status, JobStatus::DoneWithErrors);
    assert!(job.status.has_errors() && job.status.is_finished());
    let error = job.error.unwrap();
    assert!(
        error.contains("LLM call(s) failed") && error.contains("classifier timed out"),
        "{error}"
    );
    assert!(job.extraction.stored > 0, "what succeeded was stored");
}

/// Counts the texts it embeds, and fails every call after the first `fail_after` ones.
struct CountingEmbedder {
    inner: HashingEmbedder,
    calls: AtomicUsize,
    texts: AtomicUsize,
    fail_after: usize,
}

#[async_trait]
impl memory_core::ports::Embedder for CountingEmbedder {
    fn model_id(&self) -> &str {
        memory_core::ports::Embedder::model_id(&self.inner)
    }
    fn dimensions(&self) -> usize {
        memory_core::ports::Embedder::dimensions(&self.inner)
    }
    async fn embed(&self, texts: &[String]) -> memory_core::Result<Vec<Vec<f32>>> {
        if self.calls.fetch_add(1, Ordering::SeqCst) >= self.fail_after {
            return Err(MemoryError::transient("embedder", "killed"));
        }
        self.texts.fetch_add(texts.len(), Ordering::SeqCst);
        memory_core::ports::Embedder::embed(&self.inner, texts).await
    }
}

/// A job stopped halfway through vectorizing resumes where it stopped: the vectors written
/// are its checkpoint, and only the rest is embedded (a resume re-embedded all 1,000).
#[tokio::test]
async fn a_resumed_job_embeds_only_what_has_no_vector() {
    let profiles = Arc::new(InMemoryProfiles::new());
    let config = LongTermConfig {
        embed_batch: 10,
        // The run ends failed at once (no retries in place, no run back in the queue).
        stage_retry_waits: Vec::new(),
        transient_job_runs: 1,
        ..LongTermConfig::default()
    };
    let service = |embedder: Arc<CountingEmbedder>| {
        MemoryService::new(
            super::in_memory(profiles.clone()),
            Arc::new(ManualClock::new(day(20).0)),
        )
        .with_embedder(embedder)
        .with_config(config.clone())
    };
    let dying = Arc::new(CountingEmbedder {
        inner: HashingEmbedder::new(32),
        calls: AtomicUsize::new(0),
        texts: AtomicUsize::new(0),
        fail_after: 2,
    });
    let messages: Vec<IngestMessage> = (0..50)
        .map(|i| IngestMessage::new("user", format!("distinct message number {i}")).at(day(10)))
        .collect();
    let job = service(dying.clone())
        .ingest_and_extract("p", "c", messages)
        .await
        .unwrap();
    assert_eq!(job.status, JobStatus::Failed);
    assert_eq!(job.failed_stage, Some(JobStatus::Vectorizing));
    assert_eq!(dying.texts.load(Ordering::SeqCst), 20);

    let fresh = Arc::new(CountingEmbedder {
        inner: HashingEmbedder::new(32),
        calls: AtomicUsize::new(0),
        texts: AtomicUsize::new(0),
        fail_after: usize::MAX,
    });
    let resumed = service(fresh.clone()).resume_jobs("p", true).await.unwrap();
    assert_eq!(resumed[0].status, JobStatus::Done, "{:?}", resumed[0].error);
    assert_eq!(
        fresh.texts.load(Ordering::SeqCst),
        30,
        "only the 30 messages without a vector were embedded"
    );
}

/// Fails its first `fail_first` calls as an unavailable backend would, then embeds.
struct FlakyEmbedder {
    inner: HashingEmbedder,
    calls: AtomicUsize,
    fail_first: usize,
}

#[async_trait]
impl memory_core::ports::Embedder for FlakyEmbedder {
    fn model_id(&self) -> &str {
        memory_core::ports::Embedder::model_id(&self.inner)
    }
    fn dimensions(&self) -> usize {
        memory_core::ports::Embedder::dimensions(&self.inner)
    }
    async fn embed(&self, texts: &[String]) -> memory_core::Result<Vec<Vec<f32>>> {
        if self.calls.fetch_add(1, Ordering::SeqCst) < self.fail_first {
            return Err(MemoryError::transient("embedder", "restarting"));
        }
        memory_core::ports::Embedder::embed(&self.inner, texts).await
    }
}

fn flaky_service(
    profiles: Arc<InMemoryProfiles>,
    fail_first: usize,
    transient_job_runs: u32,
) -> (MemoryService, Arc<FlakyEmbedder>) {
    let embedder = Arc::new(FlakyEmbedder {
        inner: HashingEmbedder::new(32),
        calls: AtomicUsize::new(0),
        fail_first,
    });
    let service = MemoryService::new(
        super::in_memory(profiles),
        Arc::new(ManualClock::new(day(20).0)),
    )
    .with_embedder(embedder.clone())
    .with_config(LongTermConfig {
        stage_retry_waits: vec![std::time::Duration::from_millis(1); 3],
        transient_job_runs,
        ..LongTermConfig::default()
    });
    (service, embedder)
}

/// A stage that meets a backend unavailable for a moment is retried in place from its
/// checkpoint: the job ends done, with nothing degraded and no failed run counted.
#[tokio::test]
async fn a_stage_meeting_an_unavailable_backend_is_retried_in_place() {
    let (service, embedder) = flaky_service(Arc::new(InMemoryProfiles::new()), 2, 5);
    let job = service
        .ingest_and_extract("p", "c", conversation(2))
        .await
        .unwrap();
    assert_eq!(job.status, JobStatus::Done, "{:?}", job.error);
    assert!(
        !job.degraded.iter().any(|d| d.feature == "vectors"),
        "{:?}",
        job.degraded
    );
    assert_eq!(job.attempts, 0);
    assert!(embedder.calls.load(Ordering::SeqCst) >= 3);
}

/// A backend still unavailable after the retries in place sends the job back to the queue
/// at its checkpoint (an attempt counted, not failed, the error returned); once its runs
/// ended that way `transient_job_runs` times it is failed like any other error.
#[tokio::test]
async fn a_backend_unavailable_for_long_requeues_the_job_then_fails_it() {
    let profiles = Arc::new(InMemoryProfiles::new());
    let (service, _) = flaky_service(profiles.clone(), usize::MAX, 2);
    let error = service
        .ingest_and_extract("p", "c", conversation(2))
        .await
        .unwrap_err();
    assert!(error.is_transient(), "{error}");
    let jobs = service.jobs("p").await.unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!(
        jobs[0].status,
        JobStatus::Vectorizing,
        "back at its checkpoint"
    );
    assert_eq!(jobs[0].attempts, 1);
    assert!(jobs[0].error.is_none());

    let ended = service.resume_jobs("p", false).await.unwrap();
    assert_eq!(ended[0].status, JobStatus::Failed);
    assert_eq!(ended[0].failed_stage, Some(JobStatus::Vectorizing));

    let (healthy, _) = flaky_service(profiles, 0, 2);
    let resumed = healthy.resume_jobs("p", true).await.unwrap();
    assert_eq!(resumed[0].status, JobStatus::Done, "{:?}", resumed[0].error);
}

/// A graceful stop gives the job in hand back to the queue at its next stage boundary (no
/// attempt counted, the checkpoint kept), claims no other, and another worker finishes it
/// without redoing the stage that was done.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_worker_gives_its_job_back_at_the_next_stage() {
    use memory_core::ports::{JobQueue, JobState, SystemClock};
    let profiles = Arc::new(InMemoryProfiles::new());
    let slow = |ms| {
        MemoryService::new(super::in_memory(profiles.clone()), Arc::new(SystemClock)).with_models(
            StageModels::all(Arc::new(SlowModel(std::time::Duration::from_millis(ms)))),
        )
    };
    let stopping = slow(300);
    let first = stopping
        .enqueue_ingest("ada", "chat", conversation(2))
        .await
        .unwrap();
    let second = stopping
        .enqueue_ingest("ada", "chat-2", conversation(2))
        .await
        .unwrap();
    let runner = {
        let s = stopping.clone();
        tokio::spawn(async move { s.resume_jobs("ada", false).await })
    };
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    stopping.stop_jobs();
    let ran = runner.await.unwrap().unwrap();
    assert_eq!(ran.len(), 1, "no other job is claimed after the stop");
    let given_back = &ran[0];
    assert!(!given_back.status.is_finished(), "{:?}", given_back.status);
    let queue = profiles.jobs();
    let record = queue.get(&given_back.id).await.unwrap().unwrap();
    assert_eq!(record.state, JobState::Queued, "back in the queue");
    assert_eq!(record.attempts, 0, "the release counts no failed run");
    assert_eq!(
        record.stage,
        given_back.status.as_str(),
        "the checkpoint is kept"
    );
    assert!(stopping.resume_jobs("ada", false).await.unwrap().is_empty());

    let next = slow(0);
    let done = next.resume_jobs("ada", false).await.unwrap();
    let ids: Vec<&str> = done.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(ids.len(), 2);
    assert!(ids.contains(&first.id.as_str()) && ids.contains(&second.id.as_str()));
    assert!(done.iter().all(|j| j.status == JobStatus::Done), "{done:?}");
}

/// Messages ingested with metadata keep it; each memory extracted from them carries what its
/// source messages share, and a filtered recall finds both.
#[tokio::test]
async fn memories_carry_the_metadata_their_messages_share() {
    let profiles = Arc::new(InMemoryProfiles::new());
    let s = service(profiles.clone(), good_model());
    let tagged = |value: serde_json::Value| -> memory_core::Metadata {
        serde_json::from_value(value).unwrap()
    };
    let messages: Vec<IngestMessage> = conversation(10)
        .into_iter()
        .enumerate()
        .map(|(i, m)| {
            let channel = if i % 2 == 0 { "web" } else { "app" };
            m.with_metadata(tagged(json!({"user": "ada", "channel": channel})))
        })
        .collect();
    let job = s
        .ingest_and_extract("ada", "chat-1", messages)
        .await
        .unwrap();
    assert_eq!(job.status, JobStatus::Done, "{:?}", job.error);
    let all = s
        .list("ada", &MemoryFilter::default(), None, 50)
        .await
        .unwrap()
        .memories;
    assert!(!all.is_empty());
    for m in &all {
        assert_eq!(
            m.metadata.get("user"),
            tagged(json!({"user": "ada"})).get("user"),
            "{m:?}"
        );
    }
    let profile = profiles.open("ada").await.unwrap();
    let (raw, _) = profile.raw_page(None, 20).await.unwrap();
    assert!(
        raw.iter().all(|m| m.metadata.get("user").is_some()),
        "{raw:?}"
    );
    let someone_else = memory_core::MetadataFilter::parse(r#"{"user": "bob"}"#).unwrap();
    let none = s
        .recall(
            "ada",
            RecallRequest::new("Lisbon", 10).filtered(someone_else),
        )
        .await
        .unwrap();
    assert!(none.hits.is_empty(), "{:?}", none.hits);
    let web = memory_core::MetadataFilter::parse(r#"{"channel": "web"}"#).unwrap();
    let found = s
        .recall("ada", RecallRequest::new("Lisbon", 10).filtered(web))
        .await
        .unwrap();
    assert!(!found.hits.is_empty());
    for hit in &found.hits {
        match &hit.item {
            RecallItem::Raw { id, .. } => {
                let m = &profile.raw_by_ids(std::slice::from_ref(id)).await.unwrap()[0];
                assert_eq!(
                    m.metadata.get("channel"),
                    tagged(json!({"channel": "web"})).get("channel")
                );
            }
            RecallItem::Memory(m) => {
                assert_eq!(
                    m.metadata.get("channel"),
                    tagged(json!({"channel": "web"})).get("channel")
                );
            }
        }
    }
}
