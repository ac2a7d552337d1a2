//! The profile digest: written by the synthesis model with its sources, kept current only
//! when enough changed, dropped when a memory it draws on is forgotten or purged, and shown
//! by the profile block when the memories do not fit.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use memory_core::ports::{JobFilter, JobQueue, MemoryKind, TokenCounter};
use memory_testkit::in_memory::{
    HashingEmbedder, InMemoryProfiles, ManualClock, ScriptedLanguageModel,
};

use super::*;

struct Rig {
    profiles: Arc<InMemoryProfiles>,
    clock: Arc<ManualClock>,
    llm: Arc<ScriptedLanguageModel>,
}

impl Rig {
    fn new() -> Self {
        Self {
            profiles: Arc::new(InMemoryProfiles::new()),
            clock: Arc::new(ManualClock::new(1_000)),
            llm: Arc::new(ScriptedLanguageModel::new(Vec::<String>::new())),
        }
    }

    fn service(&self) -> MemoryService {
        let clock: Arc<dyn memory_core::ports::Clock> = self.clock.clone();
        MemoryService::new(super::in_memory(Arc::clone(&self.profiles)), clock)
            .with_embedder(Arc::new(HashingEmbedder::new(64)))
            .with_models(StageModels {
                synthesis: Some(self.llm.clone()),
                ..StageModels::default()
            })
            .with_config(LongTermConfig {
                digest_after: 3,
                ..LongTermConfig::default()
            })
    }
}

async fn remember(s: &MemoryService, rig: &Rig, content: &str, kind: MemoryKind) -> String {
    rig.clock.advance(1_000);
    s.remember(
        "ada",
        RememberRequest {
            content: content.into(),
            kind: Some(kind),
            ..RememberRequest::default()
        },
    )
    .await
    .unwrap()
    .id
}

#[tokio::test]
async fn a_digest_is_written_with_its_sources_and_kept_until_enough_changes() {
    let rig = Rig::new();
    let s = rig.service();
    let tea = remember(
        &s,
        &rig,
        "Drinks green tea every morning.",
        MemoryKind::Fact,
    )
    .await;
    let city = remember(&s, &rig, "Lives in Lisbon.", MemoryKind::Fact).await;
    remember(&s, &rig, "Went hiking on Sunday.", MemoryKind::Event).await;

    let without = MemoryService::new(
        super::in_memory(Arc::clone(&rig.profiles)),
        rig.clock.clone(),
    );
    let none = without.refresh_digest("ada", true).await.unwrap();
    assert!(
        !none.written && none.reason.contains("no synthesis model"),
        "{none:?}"
    );

    rig.llm
        .push_answer(r#"{"summary": "A tea drinker living in Lisbon.", "sources": [1, 2, 9]}"#);
    let report = s.refresh_digest("ada", false).await.unwrap();
    assert!(report.written, "{report:?}");
    assert_eq!(report.reason, "no digest yet");
    let digest = s.digest("ada").await.unwrap().unwrap();
    assert_eq!(digest.text, "A tea drinker living in Lisbon.");
    assert_eq!(digest.read, 2, "events are left out");
    let mut sources = digest.sources.clone();
    sources.sort();
    let mut expected = vec![tea.clone(), city.clone()];
    expected.sort();
    assert_eq!(sources, expected, "numbers out of range are dropped");
    let asked = &rig.llm.requests()[0].messages[1].content;
    assert!(
        asked.contains("Lives in Lisbon.") && !asked.contains("hiking"),
        "{asked}"
    );
    let jobs = rig
        .profiles
        .jobs()
        .list(
            &JobFilter {
                kind: Some(DIGEST_KIND.to_owned()),
                ..JobFilter::default()
            },
            None,
            10,
        )
        .await
        .unwrap();
    assert_eq!(jobs.jobs.len(), 1);

    let current = s.refresh_digest("ada", false).await.unwrap();
    assert!(
        !current.written && current.reason.starts_with("current"),
        "{current:?}"
    );
    for n in 0..3 {
        remember(&s, &rig, &format!("New fact number {n}."), MemoryKind::Fact).await;
    }
    rig.llm
        .push_answer(r#"{"summary": "Newer.", "sources": [1]}"#);
    let again = s.refresh_digest("ada", false).await.unwrap();
    assert!(
        again.written && again.reason.contains("3 or more"),
        "{again:?}"
    );
}

#[tokio::test]
async fn forgetting_or_purging_a_source_drops_the_digest() {
    let rig = Rig::new();
    let s = rig.service();
    let tea = remember(&s, &rig, "Drinks green tea.", MemoryKind::Fact).await;
    let other = remember(&s, &rig, "Has a cat.", MemoryKind::Fact).await;
    rig.llm
        .push_answer(r#"{"summary": "Drinks tea.", "sources": [2]}"#);
    s.refresh_digest("ada", true).await.unwrap();
    let cited = s.digest("ada").await.unwrap().unwrap().sources;
    let uncited = if cited == [tea.clone()] {
        other.clone()
    } else {
        tea.clone()
    };
    s.forget("ada", &uncited, "not needed").await.unwrap();
    assert!(
        s.digest("ada").await.unwrap().is_some(),
        "an uncited memory changes nothing"
    );
    s.forget("ada", &cited[0], "wrong").await.unwrap();
    assert_eq!(s.digest("ada").await.unwrap(), None);

    rig.llm
        .push_answer(r#"{"summary": "Again.", "sources": [1]}"#);
    remember(&s, &rig, "Plays chess.", MemoryKind::Fact).await;
    s.refresh_digest("ada", true).await.unwrap();
    let source = s.digest("ada").await.unwrap().unwrap().sources[0].clone();
    s.purge("ada", &source, false).await.unwrap();
    assert_eq!(s.digest("ada").await.unwrap(), None);
    assert!(s.delete_profile("ada").await.unwrap());
}

#[tokio::test]
async fn the_block_shows_the_digest_only_when_the_memories_do_not_fit() {
    let rig = Rig::new();
    let s = rig.service();
    for n in 0..30 {
        remember(
            &s,
            &rig,
            &format!("A detail about the user, number {n}, fairly long to take room."),
            MemoryKind::Fact,
        )
        .await;
    }
    rig.llm
        .push_answer(r#"{"summary": "Thirty details about the user.", "sources": [1, 2]}"#);
    s.refresh_digest("ada", true).await.unwrap();
    let counter = memory_core::HeuristicTokenCounter;
    let tight = crate::profile_link::choose_profile_block(&s, "ada", Some(80), &counter)
        .await
        .unwrap();
    let text = tight.text.unwrap();
    assert!(
        text.starts_with("Summary:\nThirty details about the user."),
        "{text}"
    );
    assert!(text.contains("Facts:\n- A detail"), "{text}");
    assert!(counter.count(&text) <= 80);
    assert!(tight.digest.is_some());
    let roomy = crate::profile_link::choose_profile_block(&s, "ada", Some(5_000), &counter)
        .await
        .unwrap();
    assert!(roomy.digest.is_none());
    assert!(!roomy.text.unwrap().contains("Summary:"));
}
