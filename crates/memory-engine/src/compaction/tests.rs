#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use memory_core::ports::{CompactionEvent, CompactionObserver, MessageStore, TokenCounter};
use memory_core::{HeuristicTokenCounter, Parent, Result, Role, SessionId, UiMessage};
use memory_testkit::in_memory::{InMemoryMessageStore, ScriptedLanguageModel};
use serde_json::json;

use super::*;
use crate::{CompactionSettings, CompactionStatus, Session};

fn user(id: &str, text: &str) -> UiMessage {
    UiMessage::text_message(id, Role::User, text)
}

fn tool(id: &str, state: &str, output: serde_json::Value) -> UiMessage {
    serde_json::from_value(json!({"id": id, "role": "assistant", "parts": [
        {"type": "tool-read_file", "toolCallId": format!("c-{id}"), "state": state, "input": {"path": "src/lib.rs"}, "output": output}
    ]}))
    .unwrap()
}

fn ids(messages: &[UiMessage]) -> Vec<String> {
    messages.iter().map(|m| m.id.clone()).collect()
}

async fn session_with(
    llm: Arc<ScriptedLanguageModel>,
    options: CompactorOptions,
    threshold: Option<usize>,
) -> (Session, Arc<InMemoryMessageStore>) {
    let store = Arc::new(InMemoryMessageStore::new());
    let mut settings = CompactionSettings::new(Arc::new(SummarizingCompactor::new(llm, options)));
    settings.threshold = threshold;
    let (indexed, search) = crate::MessageSearch::pair(
        store.clone(),
        Arc::new(memory_testkit::in_memory::InMemoryTextIndex::new()),
        Arc::new(memory_testkit::in_memory::InMemoryKeyValueStore::new()),
        Arc::new(memory_testkit::in_memory::InMemorySessionRegistry::new()),
    );
    let session = Session::new(indexed, SessionId::new("s").unwrap())
        .with_compaction(Arc::new(settings))
        .with_search(search);
    (session, store)
}

async fn chain(session: &Session, n: usize) {
    for i in 0..n {
        session
            .append(user(
                &format!("m{i}"),
                &format!("message number {i} about the parser"),
            ))
            .await
            .unwrap();
    }
}

fn small_tail() -> CompactorOptions {
    CompactorOptions {
        protect_head: 1,
        tail_token_budget: 10,
        min_tail_messages: 2,
        model: None,
        affinity_header: Some("x-session-affinity".into()),
    }
}

#[tokio::test]
async fn overlays_replace_ranges_at_read_time_and_keep_originals() {
    let llm = Arc::new(ScriptedLanguageModel::new(["first summary"]));
    let (session, _) = session_with(llm.clone(), small_tail(), None).await;
    chain(&session, 8).await;
    let result = session.compact(None).await.unwrap().unwrap();
    assert_eq!(
        (
            result.from_message_id.as_str(),
            result.to_message_id.as_str()
        ),
        ("m1", "m5")
    );
    let visible = session.history(None).await.unwrap();
    assert_eq!(visible.len(), 4);
    assert_eq!(visible[0].id, "m0");
    assert!(visible[1].id.starts_with("compaction_"));
    assert_eq!(visible[1].role, Role::Assistant);
    assert_eq!(visible[1].text(), "first summary");
    assert_eq!(ids(&visible[2..]), ["m6", "m7"]);
    assert_eq!(
        session.raw_history(None).await.unwrap().len(),
        8,
        "originals stay"
    );
    assert_eq!(
        session
            .search("parser", memory_core::SearchMode::AllWords, Some(100))
            .await
            .unwrap()
            .len(),
        8,
        "and stay searchable"
    );
    // The summary call is bounded (twice the summary budget, at least 256 tokens).
    assert!(llm.requests()[0].max_tokens.is_some_and(|m| m >= 256));
    // The prompt was built from the history being compacted, with JSON-free plain text here.
    let prompt = &llm.requests()[0].messages[1].content;
    assert!(prompt.contains("CONVERSATION TO SUMMARIZE") && prompt.contains("message number 3"));
    assert!(
        !prompt.contains("message number 0"),
        "the protected head is not summarized"
    );
    // An echoed overlay message is refused at the storage boundary.
    let echo = visible[1].clone();
    assert!(session.append(echo).await.is_err());
}

#[tokio::test]
async fn iterative_compaction_widens_from_the_earliest_overlay_and_supersedes() {
    let llm = Arc::new(ScriptedLanguageModel::new(["summary one", "summary two"]));
    let (session, _) = session_with(llm.clone(), small_tail(), None).await;
    chain(&session, 8).await;
    session.compact(None).await.unwrap().unwrap();
    chain_more(&session, 8, 12).await;
    let second = session.compact(None).await.unwrap().unwrap();
    assert_eq!(
        second.from_message_id, "m1",
        "widened to the earliest visible overlay"
    );
    let visible = session.history(None).await.unwrap();
    assert_eq!(visible[1].text(), "summary two");
    assert_eq!(ids(&visible[2..]), ["m10", "m11"]);
    // The previous summary came from the history, in an iterative-update prompt.
    let prompt = &llm.requests()[1].messages[1].content;
    assert!(
        prompt.contains("PREVIOUS SUMMARY:\nsummary one"),
        "{prompt}"
    );
    let listed = session.compactions().await.unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(
        listed[0].1.as_deref(),
        Some(listed[1].0.id.as_str()),
        "the first is listed as superseded"
    );
    assert_eq!(listed[1].1, None);
}

async fn chain_more(session: &Session, from: usize, to: usize) {
    for i in from..to {
        session
            .append(user(&format!("m{i}"), &format!("more text {i}")))
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn overlays_are_branch_local_and_the_newest_wins_on_ties() {
    let store = Arc::new(InMemoryMessageStore::new());
    let session = Session::new(store.clone(), SessionId::new("b").unwrap());
    for id in ["r", "a1", "a2", "a3"] {
        session.append(user(id, id)).await.unwrap();
    }
    session
        .append_to(user("b1", "b1"), Parent::message("r"))
        .await
        .unwrap();
    session.append(user("b2", "b2")).await.unwrap();
    session
        .add_compaction("branch A", "a1", "a2")
        .await
        .unwrap();
    session
        .add_compaction("branch B", "b1", "b2")
        .await
        .unwrap();
    let a = session.history(Some("a3")).await.unwrap();
    assert_eq!(
        a.iter().map(UiMessage::text).collect::<Vec<_>>(),
        ["r", "branch A", "a3"]
    );
    let b = session.history(Some("b2")).await.unwrap();
    assert_eq!(
        b.iter().map(UiMessage::text).collect::<Vec<_>>(),
        ["r", "branch B"]
    );
    // Same start, same millisecond: insertion order decides (the newer wins).
    session
        .add_compaction("branch A newer", "a1", "a2")
        .await
        .unwrap();
    let a = session.history(Some("a3")).await.unwrap();
    assert_eq!(a[1].text(), "branch A newer");
    // An overlay whose end is not on the path does not apply.
    session.add_compaction("cross", "r", "b2").await.unwrap();
    assert_eq!(
        session.history(Some("a3")).await.unwrap()[1].text(),
        "branch A newer"
    );
}

/// A history's tail read from the leaf upward is the tail of the whole history, overlays
/// applied or not, on both branches, for every window size: windows whose top edge an
/// overlay crosses widen until it does not. `total` counts the stored messages of the path.
#[tokio::test]
async fn the_history_tail_is_the_tail_of_the_history() {
    let store = Arc::new(InMemoryMessageStore::new());
    let session = Session::new(store.clone(), SessionId::new("t").unwrap());
    for i in 0..60 {
        session
            .append(user(&format!("m{i}"), &format!("m{i}")))
            .await
            .unwrap();
    }
    session
        .append_to(user("b1", "b1"), Parent::message("m5"))
        .await
        .unwrap();
    session.add_compaction("early", "m2", "m7").await.unwrap();
    session.add_compaction("wide", "m10", "m50").await.unwrap();
    session.add_compaction("inner", "m20", "m52").await.unwrap();
    session.add_compaction("late", "m53", "m55").await.unwrap();
    session
        .add_compaction("late, newer", "m53", "m56")
        .await
        .unwrap();
    // An overlay whose first message was deleted since never applies, at any window.
    session.add_compaction("stale", "m57", "m58").await.unwrap();
    assert_eq!(
        store
            .delete(&SessionId::new("t").unwrap(), &["m57".into()])
            .await
            .unwrap(),
        1
    );
    for leaf in ["m59", "m51", "b1"] {
        let whole = session.history(Some(leaf)).await.unwrap();
        let raw = session.raw_history(Some(leaf)).await.unwrap();
        for limit in 0..=raw.len() + 2 {
            let tail = session
                .history_tail(Some(leaf), limit, false)
                .await
                .unwrap();
            assert_eq!(tail.total, raw.len());
            assert_eq!(
                tail.messages,
                whole[whole.len().saturating_sub(limit)..],
                "{leaf} {limit}"
            );
            assert_eq!(tail.truncated, limit < whole.len());
            let raw_tail = session.history_tail(Some(leaf), limit, true).await.unwrap();
            assert_eq!(raw_tail.total, raw.len());
            assert_eq!(raw_tail.messages, raw[raw.len().saturating_sub(limit)..]);
            assert_eq!(raw_tail.truncated, limit < raw.len());
        }
    }
    assert!(session.history_tail(Some("nope"), 5, false).await.is_err());
}

#[tokio::test]
async fn incomplete_tool_calls_are_never_summarized_and_outputs_render_as_json() {
    let llm = Arc::new(ScriptedLanguageModel::new(["s"]));
    let (session, _) = session_with(llm.clone(), small_tail(), None).await;
    session.append(user("m0", "start")).await.unwrap();
    session
        .append(tool(
            "t1",
            "output-available",
            json!({"lines": 120, "path": "src/lib.rs"}),
        ))
        .await
        .unwrap();
    session.append(user("m2", "next")).await.unwrap();
    session
        .append(tool("t3", "input-available", serde_json::Value::Null))
        .await
        .unwrap();
    for i in 4..9 {
        session
            .append(user(&format!("m{i}"), "later"))
            .await
            .unwrap();
    }
    let result = session.compact(None).await.unwrap().unwrap();
    assert_eq!(
        result.to_message_id, "m2",
        "the cut stops before the call still waiting for output"
    );
    let prompt = &llm.requests()[0].messages[1].content;
    assert!(
        prompt.contains(r#"Output: {"lines":120,"path":"src/lib.rs"}"#),
        "{prompt}"
    );
    assert!(!prompt.contains("[object Object]"));
}

#[test]
fn cuts_never_separate_a_call_from_its_result_message() {
    // Model-message layout: a call in one message, its result in the next.
    let call: UiMessage = serde_json::from_value(json!({"id": "c", "role": "assistant", "parts": [{"type": "tool-x", "toolCallId": "k", "state": "input-available", "input": {}}]})).unwrap();
    let result: UiMessage = serde_json::from_value(json!({"id": "r", "role": "assistant", "parts": [{"type": "tool-x", "toolCallId": "k", "state": "output-available", "output": 1}]})).unwrap();
    let messages = vec![
        user("a", "a"),
        call,
        result,
        user("b", "b"),
        user("c2", "c"),
    ];
    // A cut between the call and its result moves before the call.
    assert_eq!(align_end(&messages, 1, 2), 1);
    assert_eq!(align_end(&messages, 0, 3), 3);
    assert_eq!(
        align_start(&messages, 2),
        3,
        "a head ending in a call takes its result too"
    );
    assert_eq!(
        tail_cut(4, 1, 100, 2, |_| 5),
        1,
        "everything after the head fits the budget"
    );
    assert_eq!(
        tail_cut(4, 0, 10, 1, |i| [5, 5, 5, 50][i]),
        3,
        "the newest message is always kept"
    );
}

#[tokio::test]
async fn summarizer_failures_reach_the_caller_and_never_fail_the_append() {
    let llm = Arc::new(ScriptedLanguageModel::default());
    llm.push_failure("rate limited");
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let store = Arc::new(InMemoryMessageStore::new());
    let sink = seen.clone();
    let mut settings = CompactionSettings::new(Arc::new(SummarizingCompactor::new(
        llm.clone(),
        small_tail(),
    )))
    .on_error(move |e| sink.lock().unwrap().push(e.to_string()));
    settings.threshold = Some(20);
    let session = Session::new(store.clone(), SessionId::new("s").unwrap())
        .with_compaction(Arc::new(settings));
    let mut reports = Vec::new();
    for i in 0..8 {
        reports.push(
            session
                .append(user(
                    &format!("m{i}"),
                    "a fairly long message about many things",
                ))
                .await
                .unwrap(),
        );
    }
    assert!(reports.iter().all(|r| r.inserted()));
    let first_failure = reports.iter().find_map(|r| match &r.compaction {
        CompactionStatus::Failed { reason } => Some(reason.clone()),
        _ => None,
    });
    assert!(first_failure.unwrap().contains("rate limited"));
    assert!(
        seen.lock().unwrap()[0].contains("rate limited"),
        "the error handler saw it"
    );
    assert_eq!(
        store
            .history(&SessionId::new("s").unwrap(), None)
            .await
            .unwrap()
            .len(),
        8
    );
    // Called directly, the error is returned.
    llm.push_failure("down");
    assert!(
        session
            .compact(None)
            .await
            .unwrap_err()
            .to_string()
            .contains("down")
    );
}

#[tokio::test]
async fn auto_compaction_runs_above_the_threshold_only() {
    let llm = Arc::new(ScriptedLanguageModel::new(["compact summary"]));
    let (session, _) = session_with(llm.clone(), small_tail(), Some(60)).await;
    let first = session.append(user("m0", "short")).await.unwrap();
    assert!(matches!(
        first.compaction,
        CompactionStatus::WithinThreshold { .. }
    ));
    let mut compacted = None;
    for i in 1..12 {
        let r = session
            .append(user(
                &format!("m{i}"),
                "words words words words words words",
            ))
            .await
            .unwrap();
        if let CompactionStatus::Compacted {
            tokens_before,
            tokens_after,
            ..
        } = r.compaction
        {
            compacted = Some((tokens_before, tokens_after));
            break;
        }
    }
    let (before, after) = compacted.expect("compacted once over the threshold");
    assert!(before > 60 && after < before, "{before} -> {after}");
    let duplicate = session.append(user("m0", "again")).await.unwrap();
    assert_eq!(duplicate.compaction, CompactionStatus::NotChecked);
}

#[tokio::test]
async fn the_estimate_counts_tool_schemas() {
    use crate::context::{BlockConfig, ContextBlocks};
    use memory_core::ports::BlockProvider;
    let store = Arc::new(InMemoryMessageStore::new());
    let plain = Session::new(store.clone(), SessionId::new("e").unwrap());
    let writable = Arc::new(memory_testkit::in_memory::InMemoryBlock::new(Some(
        String::new(),
    )));
    let blocks = ContextBlocks::new(vec![BlockConfig::new(
        "memory",
        BlockProvider::Writable(writable),
    )])
    .unwrap();
    let with_tools = plain.clone().with_context(Arc::new(blocks));
    let base = plain.estimate_tokens().await.unwrap();
    let tools = with_tools.estimate_tokens().await.unwrap();
    let schema = serde_json::to_string(&with_tools.tools().await.unwrap()).unwrap();
    assert!(
        tools >= base + HeuristicTokenCounter.count(&schema),
        "{base} {tools}"
    );
}

struct Recorder(Mutex<Vec<CompactionEvent>>);

#[async_trait]
impl CompactionObserver for Recorder {
    async fn on_compacted(&self, event: &CompactionEvent) -> Result<()> {
        self.0.lock().unwrap().push(event.clone());
        Ok(())
    }
}

#[tokio::test]
async fn the_observer_receives_every_compacted_range() {
    let recorder = Arc::new(Recorder(Mutex::new(Vec::new())));
    let store = Arc::new(InMemoryMessageStore::new());
    let llm = Arc::new(ScriptedLanguageModel::new(["sum"]));
    let settings = CompactionSettings::new(Arc::new(SummarizingCompactor::new(llm, small_tail())))
        .observer(recorder.clone());
    let session =
        Session::new(store, SessionId::new("o").unwrap()).with_compaction(Arc::new(settings));
    chain(&session, 8).await;
    session.compact(None).await.unwrap().unwrap();
    let events = recorder.0.lock().unwrap().clone();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].message_ids, ["m1", "m2", "m3", "m4", "m5"]);
    assert_eq!(events[0].summary, "sum");
}

#[test]
fn truncation_keeps_shape_and_leaves_recent_messages_alone() {
    let big = json!({"path": "a.rs", "totalLines": 900, "content": "x".repeat(20_000), "items": (0..200).collect::<Vec<_>>()});
    let small = truncate_tool_output(&big, 500);
    assert_eq!(small["path"], "a.rs");
    assert_eq!(small["totalLines"], 900);
    assert!(small["content"].as_str().unwrap().contains("[truncated"));
    assert!(small.to_string().len() < 1_500);
    let nested = json!([[["x".repeat(3_000)]], [["y".repeat(3_000)]]]);
    let t = truncate_tool_output(&nested, 100);
    assert_ne!(t, json!([""]));
    assert!(t.to_string().len() <= 200, "{t}");
    assert_eq!(truncate_tool_output(&json!("short"), 500), json!("short"));
    let history: Vec<UiMessage> = (0..6)
        .map(|i| {
            tool(
                &format!("t{i}"),
                "output-available",
                json!("z".repeat(2_000)),
            )
        })
        .collect();
    let out = truncate_older_messages(&history, TruncateOptions::default());
    assert!(
        out[0].parts[0]
            .as_tool()
            .unwrap()
            .output
            .as_ref()
            .unwrap()
            .as_str()
            .unwrap()
            .len()
            < 600
    );
    assert_eq!(out[2..], history[2..], "the last 4 are untouched");
    assert_eq!(
        history[0].parts[0].as_tool().unwrap().output,
        Some(json!("z".repeat(2_000))),
        "input not mutated"
    );
}

#[test]
fn row_size_enforcement_truncates_outputs_then_text_and_records_it() {
    let mut m = tool(
        "t",
        "output-available",
        json!({"content": "x".repeat(50_000)}),
    );
    m.parts.push(memory_core::Part::text("y".repeat(30_000)));
    let fitted = enforce_row_size(&m, 10_000);
    assert!(serde_json::to_vec(&fitted).unwrap().len() <= 10_000);
    let meta = fitted.metadata.unwrap();
    assert_eq!(meta["compactedToolOutputs"], json!(["c-t"]));
    assert_eq!(meta["compactedTextParts"], json!([1]));
    let small = user("u", "fits");
    assert_eq!(enforce_row_size(&small, 10_000), small);
}

#[test]
fn the_calibrating_counter_tracks_reported_usage() {
    let counter = CalibratingTokenCounter::new(Arc::new(HeuristicTokenCounter), "gpt");
    let text = "a".repeat(4_000); // heuristic: 1000
    assert_eq!(counter.count(&text), 1_000);
    counter.add_usage("gpt", 1_000, 2_000);
    assert_eq!(counter.count(&text), 2_000);
    counter.add_usage("gpt", 1_000, 1_000);
    assert_eq!(
        counter.count(&text),
        1_700,
        "an exponential average, weight 0.3"
    );
    counter.add_usage("other", 0, 5);
    assert_eq!(counter.ratio("other"), 1.0, "zero estimates are ignored");
}

mod properties {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, .. ProptestConfig::default() })]
        /// Random trees, random overlays, random reads: the visible history is the raw path with
        /// contiguous ranges replaced in order, originals are never lost, and an overlay off the
        /// read branch never shows.
        #[test]
        fn overlays_never_lose_originals_or_cross_branches(
            parents in proptest::collection::vec(0usize..100, 1..30),
            overlays in proptest::collection::vec((0usize..30, 0usize..30), 0..6),
            leaf in 0usize..30,
        ) {
            let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
            rt.block_on(async {
                let store = Arc::new(InMemoryMessageStore::new());
                let session = Session::new(store.clone(), SessionId::new("p").unwrap());
                session.append_to(user("n0", "root"), Parent::Root).await.unwrap();
                for (i, p) in parents.iter().enumerate() {
                    let parent = format!("n{}", p % (i + 1));
                    session.append_to(user(&format!("n{}", i + 1), "x"), Parent::Message(parent)).await.unwrap();
                }
                let n = parents.len() + 1;
                for (k, (a, b)) in overlays.iter().enumerate() {
                    let (a, b) = (a % n, b % n);
                    session.add_compaction(&format!("s{k}"), &format!("n{a}"), &format!("n{b}")).await.unwrap();
                }
                let leaf = format!("n{}", leaf % n);
                let raw = session.raw_history(Some(&leaf)).await.unwrap();
                let visible = session.history(Some(&leaf)).await.unwrap();
                // Walk the visible list against the raw path.
                let records = store.compactions(&SessionId::new("p").unwrap()).await.unwrap();
                let mut i = 0;
                for m in &visible {
                    if let Some(id) = m.id.strip_prefix("compaction_") {
                        let r = records.iter().find(|r| r.id == id).unwrap();
                        prop_assert_eq!(&raw[i].id, &r.from_message_id);
                        let end = raw.iter().position(|x| x.id == r.to_message_id).unwrap();
                        prop_assert!(end >= i);
                        i = end + 1;
                    } else {
                        prop_assert_eq!(&raw[i].id, &m.id);
                        i += 1;
                    }
                }
                prop_assert_eq!(i, raw.len());
                // No original is lost: every message is still stored.
                for k in 0..n {
                    let id = format!("n{k}");
                    let stored = store.get(&SessionId::new("p").unwrap(), &id).await.unwrap();
                    prop_assert!(stored.is_some(), "{} lost", id);
                }
                Ok(())
            })?;
        }
    }
}

#[tokio::test]
async fn oversized_messages_are_fitted_to_the_store_row_limit() {
    use memory_core::ports::StoreCapabilities;
    use memory_core::{AppendOutcome, NewMessage};
    let mut store = memory_testkit::mocks::MockMessageStore::new();
    store.expect_capabilities().return_const(StoreCapabilities {
        max_message_bytes: Some(10_000),
    });
    store
        .expect_append()
        .withf(|_, batch: &Vec<NewMessage>| {
            let m = &batch[0].message;
            serde_json::to_vec(m).unwrap().len() <= 10_000
                && m.metadata
                    .as_ref()
                    .is_some_and(|meta| meta["compactedToolOutputs"] == json!(["c-big"]))
        })
        .times(1)
        .returning(|_, _| Ok(vec![AppendOutcome::Inserted { parent_id: None }]));
    let session = Session::new(Arc::new(store), SessionId::new("r").unwrap());
    let big = tool(
        "big",
        "output-available",
        json!({"content": "x".repeat(100_000)}),
    );
    assert!(session.append(big).await.unwrap().inserted());
}

#[tokio::test]
async fn the_estimate_never_exceeds_the_threshold_by_more_than_one_turn() {
    let llm = Arc::new(ScriptedLanguageModel::default());
    for _ in 0..100 {
        llm.push_answer("## Goal\nKeep going.");
    }
    let options = CompactorOptions {
        tail_token_budget: 1_500,
        ..CompactorOptions::default()
    };
    let (session, _) = session_with(llm, options, Some(4_000)).await;
    let mut largest_turn = 0;
    let mut max_estimate = 0;
    for i in 0..300 {
        let before = session.estimate_tokens().await.unwrap();
        session
            .append(user(
                &format!("u{i}"),
                &"plan the next step carefully ".repeat(5),
            ))
            .await
            .unwrap();
        session
            .append(tool(
                &format!("a{i}"),
                "output-available",
                json!({"content": "line of code\n".repeat(30)}),
            ))
            .await
            .unwrap();
        let after = session.estimate_tokens().await.unwrap();
        largest_turn = largest_turn.max(after.saturating_sub(before));
        max_estimate = max_estimate.max(after);
    }
    assert!(
        max_estimate <= 4_000 + largest_turn,
        "{max_estimate} > 4000 + {largest_turn}"
    );
}

/// Every summarizer call carries the session-affinity header with the session id, like the
/// long-term tier's calls carry the profile.
#[tokio::test]
async fn compaction_calls_carry_the_affinity_header() {
    let llm = Arc::new(ScriptedLanguageModel::new(["a summary"]));
    let (session, _) = session_with(llm.clone(), small_tail(), None).await;
    chain(&session, 8).await;
    session.compact(None).await.unwrap().unwrap();
    let requests = llm.requests();
    assert_eq!(requests.len(), 1);
    assert!(
        requests[0]
            .headers
            .contains(&("x-session-affinity".to_owned(), "s".to_owned())),
        "{:?}",
        requests[0].headers
    );
}

/// A summary cut off at the output limit is a clear failure: nothing is compacted, the
/// history stays whole.
#[tokio::test]
async fn a_summary_cut_off_at_the_output_limit_is_refused() {
    let llm = Arc::new(ScriptedLanguageModel::default());
    llm.push_cut_off("## Goal\nShip the parser. ## Progress\nThe first");
    let (session, _) = session_with(llm.clone(), small_tail(), None).await;
    chain(&session, 8).await;
    let err = session.compact(None).await.unwrap_err();
    assert!(err.to_string().contains("output limit"), "{err}");
    assert_eq!(session.history(None).await.unwrap().len(), 8);
    assert!(session.compactions().await.unwrap().is_empty());
}
