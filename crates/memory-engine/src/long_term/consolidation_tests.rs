//! Consolidation: LLM-free plans, merges written as one job with provenance kept, nothing
//! deleted, forget and purge reaching what a survivor absorbed, the LLM's confirmation, and
//! the run after enough new memories.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use memory_core::Timestamp;
use memory_core::ports::{
    Clock, JobFilter, JobQueue, MemoryFilter, MemoryKind, MemoryProfiles, MemoryRecord,
};
use memory_testkit::in_memory::{
    HashingEmbedder, InMemoryProfiles, ManualClock, ScriptedLanguageModel,
};

use super::*;

struct Rig {
    profiles: Arc<InMemoryProfiles>,
    clock: Arc<ManualClock>,
}

impl Rig {
    fn new() -> Self {
        Self {
            profiles: Arc::new(InMemoryProfiles::new()),
            clock: Arc::new(ManualClock::new(1_000)),
        }
    }

    fn service(&self) -> MemoryService {
        let clock: Arc<dyn memory_core::ports::Clock> = self.clock.clone();
        MemoryService::new(super::in_memory(Arc::clone(&self.profiles)), clock)
            .with_embedder(Arc::new(HashingEmbedder::new(512)))
    }
}

async fn remember(s: &MemoryService, rig: &Rig, content: &str) -> MemoryRecord {
    rig.clock.advance(1_000);
    s.remember(
        "ada",
        RememberRequest {
            content: content.into(),
            kind: Some(MemoryKind::Fact),
            ..RememberRequest::default()
        },
    )
    .await
    .unwrap()
}

async fn current(s: &MemoryService) -> Vec<String> {
    s.list("ada", &MemoryFilter::default(), None, 100)
        .await
        .unwrap()
        .memories
        .into_iter()
        .map(|m| m.content)
        .collect()
}

const TEA: [&str; 3] = [
    "The user likes green tea.",
    "the user likes green tea very much",
    "The user likes GREEN tea!",
];

const OTHERS: [&str; 4] = [
    "The user likes black coffee.",
    "The user does not like green tea.",
    "The user's sister likes green tea.",
    "The user walks the dog every morning.",
];

#[tokio::test]
async fn a_dry_run_plans_the_paraphrases_and_writes_nothing() {
    let rig = Rig::new();
    let s = rig.service();
    for text in TEA.iter().chain(&OTHERS) {
        remember(&s, &rig, text).await;
    }
    let report = s.consolidate("ada", true).await.unwrap();
    assert!(report.dry_run);
    assert_eq!(report.job_id, None);
    assert_eq!(report.considered, 7);
    assert_eq!(report.merges.len(), 1, "{report:#?}");
    let merge = &report.merges[0];
    let mut group: Vec<&str> = std::iter::once(&merge.survivor)
        .chain(&merge.absorbed)
        .map(|m| m.content.as_str())
        .collect();
    group.sort_unstable();
    let mut expected = TEA.to_vec();
    expected.sort_unstable();
    assert_eq!(
        group, expected,
        "the negation, the sister and the coffee stay apart"
    );
    assert_eq!(report.absorbed, 2);
    assert!(
        merge.reason.starts_with("consolidation:"),
        "{}",
        merge.reason
    );
    assert!(
        report
            .degraded
            .iter()
            .any(|d| d.feature == "consolidation_confirmation"),
        "no LLM is said"
    );
    assert_eq!(current(&s).await.len(), 7, "a dry run writes nothing");
}

#[tokio::test]
async fn a_run_merges_into_the_newest_keeps_provenance_and_deletes_nothing() {
    let rig = Rig::new();
    let s = rig.service();
    let store = rig.profiles.open("ada").await.unwrap();
    // Stored straight (no vectors): the same words, told apart only by case and punctuation.
    let same_words = [
        "The user likes green tea.",
        "the user likes green tea",
        "THE USER LIKES GREEN TEA!",
    ];
    for (n, text) in same_words.iter().enumerate() {
        rig.clock.advance(1_000);
        let mut m = MemoryRecord::new(format!("m{n}"), MemoryKind::Fact, *text, rig.clock.now());
        m.source_message_ids = vec![format!("r{n}"), "shared".into()];
        store.insert_memory(m).await.unwrap();
    }
    let report = s.consolidate("ada", false).await.unwrap();
    assert!(!report.dry_run);
    let job = report.job_id.clone().unwrap();
    assert_eq!(report.merges.len(), 1);
    assert_eq!(
        report.merges[0].survivor.id, "m2",
        "the most recently said stays"
    );
    let survivor = store.get_memory("m2").await.unwrap().unwrap();
    assert_eq!(survivor.source_message_ids, ["r2", "shared", "r1", "r0"]);
    for id in ["m0", "m1"] {
        let absorbed = store.get_memory(id).await.unwrap().unwrap();
        assert_eq!(absorbed.superseded_by.as_deref(), Some("m2"));
        let note = absorbed.merged.unwrap();
        assert_eq!(note.reason, report.merges[0].reason);
        assert_eq!(note.at, rig.clock.now());
    }
    assert_eq!(current(&s).await, [same_words[2]]);
    let merged: Vec<String> = s
        .merged_into("ada", "m2")
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.id)
        .collect();
    assert_eq!(merged, ["m0", "m1"]);
    let jobs = rig
        .profiles
        .jobs()
        .list(
            &JobFilter {
                kind: Some(CONSOLIDATE_KIND.to_owned()),
                ..JobFilter::default()
            },
            None,
            10,
        )
        .await
        .unwrap();
    assert_eq!(jobs.jobs.len(), 1);
    assert_eq!(jobs.jobs[0].id, job);
    assert_eq!(jobs.jobs[0].body["absorbed"], 2);
    assert!(s.jobs("ada").await.unwrap().is_empty(), "not an ingest job");

    // A second run finds nothing more to merge.
    let again = s.consolidate("ada", false).await.unwrap();
    assert!(again.merges.is_empty(), "{again:#?}");
}

#[tokio::test]
async fn forget_and_purge_of_a_survivor_reach_what_it_absorbed() {
    let rig = Rig::new();
    let s = rig.service();
    for text in TEA {
        remember(&s, &rig, text).await;
    }
    let report = s.consolidate("ada", false).await.unwrap();
    let survivor = report.merges[0].survivor.id.clone();
    let absorbed: Vec<String> = report.merges[0]
        .absorbed
        .iter()
        .map(|m| m.id.clone())
        .collect();
    s.forget("ada", &survivor, "user asked").await.unwrap();
    let all = s
        .list(
            "ada",
            &MemoryFilter {
                include_forgotten: true,
                include_superseded: true,
                ..MemoryFilter::default()
            },
            None,
            100,
        )
        .await
        .unwrap()
        .memories;
    assert_eq!(all.len(), 3, "forgetting deletes nothing");
    for m in &all {
        assert_eq!(
            m.forgotten.as_ref().unwrap().reason,
            "user asked",
            "{}",
            m.id
        );
    }
    let vectors = s.backends().vector_index("ada").await.unwrap();
    let ids: Vec<String> = all.iter().map(|m| m.id.clone()).collect();
    assert!(
        vectors
            .get(MEMORY_NAMESPACE, &ids)
            .await
            .unwrap()
            .is_empty()
    );

    let purged = s.purge("ada", &survivor, false).await.unwrap();
    assert!(purged.memory);
    assert_eq!(purged.absorbed, 2);
    let store = rig.profiles.open("ada").await.unwrap();
    for id in absorbed.iter().chain([&survivor]) {
        assert_eq!(store.get_memory(id).await.unwrap(), None, "{id} erased");
    }
}

#[tokio::test]
async fn the_llm_confirms_some_groups_and_rejects_others() {
    let rig = Rig::new();
    let llm = Arc::new(ScriptedLanguageModel::new([
        r#"{"groups": [{"group": 1, "same": false, "reason": "one is stronger"}, {"group": 2, "same": true, "reason": "same preference"}]}"#,
    ]));
    let s = rig.service().with_models(StageModels {
        verification: Some(llm.clone()),
        ..StageModels::default()
    });
    for text in [
        "The user walks the dog every morning.",
        "the user walks the dog every morning",
    ]
    .iter()
    .chain(&TEA[..2])
    {
        remember(&s, &rig, text).await;
    }
    let report = s.consolidate("ada", false).await.unwrap();
    assert_eq!(report.merges.len(), 1, "{report:#?}");
    assert_eq!(report.rejected.len(), 1);
    assert!(
        report.merges[0]
            .reason
            .contains("confirmed by the LLM: same preference")
    );
    assert!(report.merges[0].survivor.content.contains("tea"));
    assert!(report.rejected[0].survivor.content.contains("dog"));
    assert_eq!(current(&s).await.len(), 3);
    let asked = &llm.requests()[0].messages[1].content;
    assert!(
        asked.contains("Group 1:") && asked.contains("Group 2:"),
        "{asked}"
    );
    assert_eq!(report.usage.total().calls, 1);
}

#[tokio::test]
async fn a_failed_confirmation_merges_nothing_and_says_so() {
    let rig = Rig::new();
    let llm = Arc::new(ScriptedLanguageModel::new(Vec::<String>::new()));
    let s = rig.service().with_models(StageModels {
        verification: Some(llm),
        ..StageModels::default()
    });
    for text in TEA {
        remember(&s, &rig, text).await;
    }
    let report = s.consolidate("ada", false).await.unwrap();
    assert!(report.merges.is_empty());
    assert!(
        report
            .degraded
            .iter()
            .any(|d| d.feature == "consolidation_confirmation" && d.reason.starts_with("failed")),
        "{report:#?}"
    );
    assert_eq!(current(&s).await.len(), 3);
}

#[tokio::test]
async fn a_run_is_due_after_enough_new_memories() {
    let rig = Rig::new();
    let s = rig.service().with_config(LongTermConfig {
        consolidate_after: 3,
        ..LongTermConfig::default()
    });
    remember(&s, &rig, TEA[0]).await;
    remember(&s, &rig, TEA[1]).await;
    assert_eq!(s.consolidate_if_due("ada").await.unwrap(), None);
    remember(&s, &rig, TEA[2]).await;
    let report = s.consolidate_if_due("ada").await.unwrap().unwrap();
    assert_eq!(report.absorbed, 2);
    rig.clock.advance(1_000);
    remember(&s, &rig, OTHERS[0]).await;
    assert_eq!(
        s.consolidate_if_due("ada").await.unwrap(),
        None,
        "counted from the last run"
    );
    let never = rig.service().with_config(LongTermConfig {
        consolidate_after: 0,
        ..LongTermConfig::default()
    });
    for text in OTHERS {
        remember(&never, &rig, text).await;
    }
    assert_eq!(never.consolidate_if_due("ada").await.unwrap(), None);
}

#[tokio::test]
async fn events_of_different_days_and_a_stale_plan_are_not_merged() {
    let rig = Rig::new();
    let s = rig.service();
    let store = rig.profiles.open("ada").await.unwrap();
    for (id, day) in [("monday", 0), ("tuesday", 1)] {
        let mut m = MemoryRecord::new(id, MemoryKind::Event, "Went to the gym.", Timestamp(1_000));
        m.valid_at = Some(Timestamp(day * 86_400_000));
        store.insert_memory(m).await.unwrap();
    }
    let report = s.consolidate("ada", true).await.unwrap();
    assert!(report.merges.is_empty(), "{report:#?}");
    assert_eq!(
        s.consolidate("nobody", true).await.unwrap_err().to_string(),
        memory_core::MemoryError::not_found("profile", "nobody").to_string()
    );
}

#[tokio::test]
async fn contradictions_are_flagged_by_the_llm_and_leave_with_their_memories() {
    let rig = Rig::new();
    let llm = Arc::new(ScriptedLanguageModel::new([
        r#"{"pairs": [{"pair": 1, "contradicts": true, "reason": "one home at a time"}]}"#,
    ]));
    let s = rig.service().with_models(StageModels {
        verification: Some(llm.clone()),
        ..StageModels::default()
    });
    let lisbon = remember(&s, &rig, "The user lives in Lisbon.").await;
    let berlin = remember(&s, &rig, "The user lives in Berlin.").await;
    remember(&s, &rig, "The user likes green tea.").await;
    remember(&s, &rig, "The user's sister does not live in Lisbon.").await;
    let report = s.consolidate("ada", false).await.unwrap();
    assert!(report.merges.is_empty(), "{report:#?}");
    assert_eq!(report.contradictions.len(), 1, "{report:#?}");
    let flagged = &report.contradictions[0];
    assert_eq!(flagged.first.id, lisbon.id, "the older first");
    assert_eq!(flagged.second.id, berlin.id);
    assert_eq!(flagged.reason, "one home at a time");
    let asked = &llm.requests()[0].messages[1].content;
    assert!(
        asked.contains("Pair 1:") && !asked.contains("Pair 2:"),
        "only the pair about one thing and one person is asked: {asked}"
    );
    let listed = s.contradictions("ada").await.unwrap();
    assert_eq!(listed, report.contradictions);
    assert_eq!(listed[0].first.content, "The user lives in Lisbon.");

    // Nothing new: the next run asks nothing (the script is empty) and keeps the flag.
    rig.clock.advance(1_000);
    let again = s.consolidate("ada", false).await.unwrap();
    assert!(again.contradictions.is_empty());
    assert!(
        again.degraded.iter().all(|d| d.feature != "contradictions"),
        "{again:#?}"
    );
    assert_eq!(llm.requests().len(), 1);
    assert_eq!(s.contradictions("ada").await.unwrap().len(), 1);

    // Forgetting one of the two drops the flag, reason and all.
    s.forget("ada", &berlin.id, "moved").await.unwrap();
    assert!(s.contradictions("ada").await.unwrap().is_empty());
    assert_eq!(
        s.backends().outbox.get("contradictions/ada").await.unwrap(),
        None
    );
}

#[tokio::test]
async fn without_an_llm_contradictions_are_not_looked_for_and_the_report_says_so() {
    let rig = Rig::new();
    let s = rig.service();
    remember(&s, &rig, "The user lives in Lisbon.").await;
    remember(&s, &rig, "The user lives in Berlin.").await;
    let report = s.consolidate("ada", false).await.unwrap();
    assert!(report.contradictions.is_empty());
    assert!(
        report
            .degraded
            .iter()
            .any(|d| d.feature == "contradictions" && d.reason.contains("no LLM")),
        "{report:#?}"
    );
    assert!(s.contradictions("ada").await.unwrap().is_empty());
}

/// `store`-written and engine-written text indexes alike: a merged memory's wording still
/// finds what it said, and recall (and `rank` over its candidates) returns the survivor in
/// its place, once; forgetting the survivor takes both out.
async fn a_merged_wording_leads_recall_to_its_survivor(s: &MemoryService, clock: &ManualClock) {
    let mut remembered = Vec::new();
    for content in [
        "The user drinks matcha every morning.",
        "The user likes green tea.",
        "The user walks the dog in the park.",
    ] {
        clock.advance(1_000);
        let request = RememberRequest {
            content: content.into(),
            kind: Some(MemoryKind::Fact),
            ..RememberRequest::default()
        };
        remembered.push(s.remember("ada", request).await.unwrap().id);
    }
    let (absorbed, survivor) = (&remembered[0], &remembered[1]);
    let found = |query: &'static str| async move {
        let hits = s
            .recall("ada", RecallRequest::new(query, 10))
            .await
            .unwrap()
            .hits;
        let ids: Vec<String> = hits.iter().map(|h| h.item.id().to_owned()).collect();
        let candidates = s
            .recall_candidates("ada", &RecallRequest::new(query, 10))
            .await
            .unwrap();
        assert_eq!(rank(&candidates, s.config(), 10).unwrap(), ids, "{query}");
        ids
    };
    assert_eq!(found("matcha").await.first(), Some(absorbed));

    let store = s.backends().existing_store("ada").await.unwrap();
    store
        .merge(&memory_core::ports::MemoryMerge {
            survivor: survivor.clone(),
            absorbed: vec![absorbed.clone()],
            note: memory_core::ports::MergeNote {
                reason: "the same drink".into(),
                at: clock.now(),
            },
        })
        .await
        .unwrap();
    for query in ["matcha", "matcha green tea", "green tea"] {
        let ids = found(query).await;
        assert_eq!(ids.first(), Some(survivor), "{query}: {ids:?}");
        assert_eq!(
            ids.iter().filter(|id| *id == survivor).count(),
            1,
            "{ids:?}"
        );
        assert!(!ids.contains(absorbed), "{query}: {ids:?}");
    }
    // Rebuilt from the records, an engine-written index keeps the merged wording.
    s.backends().reindex("ada").await.unwrap();
    assert_eq!(found("matcha").await.first(), Some(survivor));
    // So is a vector index rebuilt with the embedder.
    s.reembed("ada").await.unwrap();
    let vectors = s.backends().vector_index("ada").await.unwrap();
    let kept = vectors
        .get(MEMORY_NAMESPACE, std::slice::from_ref(absorbed))
        .await
        .unwrap();
    assert_eq!(kept.len(), 1, "a merged memory keeps its vector");

    s.forget("ada", survivor, "user asked").await.unwrap();
    let ids = found("matcha").await;
    assert!(
        !ids.contains(survivor) && !ids.contains(absorbed),
        "{ids:?}"
    );
}

#[tokio::test]
async fn a_merged_wording_leads_recall_to_its_survivor_on_a_store_written_index() {
    let rig = Rig::new();
    a_merged_wording_leads_recall_to_its_survivor(&rig.service(), &rig.clock).await;
}

#[tokio::test]
async fn a_merged_wording_leads_recall_to_its_survivor_on_an_engine_written_index() {
    let profiles = Arc::new(InMemoryProfiles::new());
    let clock = Arc::new(ManualClock::new(1_000));
    let backends = LongTermBackends::from_parts(
        profiles.clone(),
        Arc::new(memory_testkit::in_memory::InMemoryTextIndexes::new()),
        profiles.clone(),
        profiles.jobs(),
        Arc::new(memory_testkit::in_memory::InMemoryKeyValueStore::new()),
    );
    let s = MemoryService::new(backends, clock.clone())
        .with_embedder(Arc::new(HashingEmbedder::new(512)));
    a_merged_wording_leads_recall_to_its_survivor(&s, &clock).await;
}
