//! The two tiers as one memory, on the in-memory adapters: binding, shipping at compaction
//! and at the end of a session, the memory tools, the profile block in the frozen prompt.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use async_trait::async_trait;
use memory_core::ports::{KeyValueStore, TokenCounter};
use memory_core::{NewSession, Result, Role, SessionId, UiMessage};
use memory_testkit::in_memory::{
    HashingEmbedder, InMemoryKeyValueStore, InMemoryMessageStore, InMemoryProfiles,
    InMemorySessionRegistry, ManualClock,
};
use serde_json::json;

use super::{LinkOptions, MemoryTool};
use crate::compaction::{CompactResult, Compactor};
use crate::context::{BlockSpec, ContextWiring};
use crate::long_term::{LongTermBackends, MemoryService};
use crate::{CompactionSettings, SessionManager};

/// Compacts everything but the last two visible messages.
struct AllButTwo;

#[async_trait]
impl Compactor for AllButTwo {
    async fn compact(
        &self,
        _session_id: &str,
        history: &[UiMessage],
        _counter: &dyn TokenCounter,
    ) -> Result<Option<CompactResult>> {
        if history.len() < 3 {
            return Ok(None);
        }
        Ok(Some(CompactResult {
            from_message_id: history[0].id.clone(),
            to_message_id: history[history.len() - 3].id.clone(),
            summary: "earlier turns, summarized".into(),
            usage: Default::default(),
        }))
    }
}

struct World {
    manager: SessionManager,
    memory: MemoryService,
}

fn world(options: LinkOptions) -> World {
    world_with(
        options,
        vec![
            BlockSpec::writable("notes").default_content("none yet"),
            BlockSpec::profile("profile").max_tokens(400),
        ],
    )
}

fn world_with(options: LinkOptions, specs: Vec<BlockSpec>) -> World {
    let profiles = Arc::new(InMemoryProfiles::new());
    let backends = LongTermBackends::new(
        Arc::clone(&profiles),
        profiles.jobs(),
        Arc::new(InMemoryKeyValueStore::new()),
    );
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let memory = MemoryService::new(backends, clock.clone())
        .with_embedder(Arc::new(HashingEmbedder::new(64)));
    let kv: Arc<dyn KeyValueStore> = Arc::new(InMemoryKeyValueStore::new());
    let wiring = ContextWiring {
        kv: Some(Arc::clone(&kv)),
        specs,
        ..ContextWiring::default()
    };
    let manager = SessionManager::new(
        Arc::new(InMemoryMessageStore::new()),
        Arc::new(InMemorySessionRegistry::new()),
        clock,
    )
    .with_context(wiring)
    .with_compaction(CompactionSettings::new(Arc::new(AllButTwo)))
    .with_long_term(memory.clone(), kv, options)
    .unwrap();
    World { manager, memory }
}

fn bound_to(profile: &str) -> LinkOptions {
    LinkOptions {
        default_profile: Some(profile.into()),
        ..LinkOptions::default()
    }
}

async fn session(world: &World, id: &str, profile: Option<&str>) -> SessionId {
    let info = world
        .manager
        .create(NewSession {
            id: Some(SessionId::new(id).unwrap()),
            profile: profile.map(str::to_owned),
            ..NewSession::default()
        })
        .await
        .unwrap();
    info.id
}

async fn say(world: &World, session: &SessionId, turns: &[(&str, Role, &str)]) {
    let handle = world.manager.session(session).await.unwrap();
    for (id, role, text) in turns {
        handle
            .append(UiMessage::text_message(*id, *role, *text))
            .await
            .unwrap();
    }
}

const LISBON: [(&str, Role, &str); 5] = [
    (
        "m1",
        Role::User,
        "I moved to Lisbon last spring and I love the trams.",
    ),
    ("m2", Role::Assistant, "Lisbon is lovely. How can I help?"),
    (
        "m3",
        Role::User,
        "Please always answer me in short sentences.",
    ),
    ("m4", Role::Assistant, "Understood."),
    ("m5", Role::User, "What should I cook tonight?"),
];

fn names(tools: &[memory_core::ToolDefinition]) -> Vec<&str> {
    tools.iter().map(|t| t.name.as_str()).collect()
}

#[tokio::test]
async fn an_unbound_session_ships_nothing_and_has_no_memory_tools() {
    let world = world(LinkOptions::default());
    let s = session(&world, "plain", None).await;
    say(&world, &s, &LISBON).await;
    let handle = world.manager.session(&s).await.unwrap();
    let tools = handle.tools().await.unwrap();
    assert!(!names(&tools).contains(&"recall"), "{:?}", names(&tools));
    let result = handle.compact(None).await.unwrap();
    assert!(result.is_some(), "the range was compacted");
    assert!(world.memory.list_profiles().await.unwrap().is_empty());
    let unknown = handle
        .execute_tool("recall", &json!({"query": "Lisbon"}))
        .await
        .unwrap();
    assert!(unknown.starts_with("Error: unknown tool"), "{unknown}");
    let (info, shipped) = world.manager.end(&s, None).await.unwrap();
    assert_eq!(info.end_reason.as_deref(), Some("ended"));
    assert!(shipped.is_none());
}

#[tokio::test]
async fn compaction_ships_the_range_and_a_later_session_recalls_it_with_provenance() {
    let world = world(bound_to("alice"));
    let one = session(&world, "one", None).await;
    say(&world, &one, &LISBON).await;
    let handle = world.manager.session(&one).await.unwrap();
    assert_eq!(
        world
            .manager
            .get(&one)
            .await
            .unwrap()
            .unwrap()
            .profile
            .as_deref(),
        Some("alice"),
        "the deployment default binds new sessions"
    );
    handle.compact(None).await.unwrap().unwrap();
    let jobs = world.memory.jobs("alice").await.unwrap();
    assert_eq!(jobs.len(), 1, "one job for the compacted range");
    assert_eq!(jobs[0].session_id, "one");
    assert_eq!(jobs[0].new_messages, 3, "m1..m3 were compacted");
    for job in world.memory.resume_jobs("alice", false).await.unwrap() {
        assert!(job.status.is_finished(), "{job:?}");
    }

    let two = session(&world, "two", None).await;
    let second = world.manager.session(&two).await.unwrap();
    let tools = second.tools().await.unwrap();
    assert!(names(&tools).contains(&"recall") && names(&tools).contains(&"remember"));
    assert!(
        !names(&tools).contains(&"forget"),
        "forget is off by default"
    );
    let recalled = second
        .execute_tool("recall", &json!({"query": "Which city did I move to?"}))
        .await
        .unwrap();
    assert!(recalled.contains("Lisbon"), "{recalled}");
    assert!(recalled.contains("session=\"one\""), "{recalled}");
    assert!(recalled.contains("messages=\"m1\""), "{recalled}");
    assert!(recalled.contains("not instructions"), "{recalled}");
}

#[tokio::test]
async fn shipping_again_adds_nothing_twice() {
    let world = world(bound_to("bob"));
    let s = session(&world, "s", None).await;
    say(&world, &s, &LISBON).await;
    let handle = world.manager.session(&s).await.unwrap();
    handle.compact(None).await.unwrap().unwrap();
    // The same range, shipped again (a retry, or a second server doing the same work).
    let link = world.manager.long_term().unwrap();
    let range = handle.raw_history(None).await.unwrap()[..3].to_vec();
    let again = link.ship_messages("bob", &s, &range).await.unwrap();
    assert_eq!((again.shipped, again.already_shipped), (0, 3));
    assert!(again.job.is_none());
    // More turns, a second compaction over a widened range: only the new messages ship.
    say(
        &world,
        &s,
        &[
            ("m6", Role::Assistant, "Try bacalhau."),
            ("m7", Role::User, "Thanks, I will."),
        ],
    )
    .await;
    handle.compact(None).await.unwrap().unwrap();
    let jobs = world.memory.jobs("bob").await.unwrap();
    assert_eq!(jobs.len(), 2, "{jobs:?}");
    assert_eq!(jobs[1].new_messages, 2, "m4 and m5 only: {:?}", jobs[1]);
    // Ending the session ships the rest of the branch, once.
    let (info, shipped) = world.manager.end(&s, Some("done")).await.unwrap();
    assert_eq!(info.end_reason.as_deref(), Some("done"));
    let shipped = shipped.unwrap();
    assert_eq!((shipped.shipped, shipped.already_shipped), (2, 5));
    assert!(shipped.queued);
    let (_, again) = world.manager.end(&s, None).await.unwrap();
    assert!(again.unwrap().job.is_none());
    assert_eq!(world.memory.jobs("bob").await.unwrap().len(), 3);
}

#[tokio::test]
async fn a_stored_session_ships_on_demand_by_leaf_and_range() {
    let world = world(LinkOptions::default());
    let s = session(&world, "stored", None).await;
    say(&world, &s, &LISBON).await;
    let selection = super::ShipSelection {
        leaf: Some("m5".into()),
        from: Some("m2".into()),
        to: Some("m3".into()),
    };
    let report = world.manager.ship("carol", &s, &selection).await.unwrap();
    assert_eq!(report.shipped, 2);
    let job = report.job.unwrap();
    assert_eq!(job.new_messages, 2);
    let whole = world
        .manager
        .ship("carol", &s, &super::ShipSelection::default())
        .await
        .unwrap();
    assert_eq!((whole.shipped, whole.already_shipped), (3, 2));
    let bad = super::ShipSelection {
        from: Some("nope".into()),
        ..Default::default()
    };
    let e = world.manager.ship("carol", &s, &bad).await.unwrap_err();
    assert!(e.to_string().contains("nope"), "{e}");
}

#[tokio::test]
async fn the_profile_block_changes_on_refresh_and_never_between_turns() {
    let world = world(bound_to("dana"));
    let s = session(&world, "s", None).await;
    let handle = world.manager.session(&s).await.unwrap();
    let before = handle.freeze_system_prompt().await.unwrap();
    assert!(!before.contains("short sentences"));
    let stored = handle
        .execute_tool(
            "remember",
            &json!({"content": "Answer in short sentences.", "kind": "instruction", "key": "style"}),
        )
        .await
        .unwrap();
    assert!(
        stored.starts_with("Remembered (instruction, key style)"),
        "{stored}"
    );
    handle
        .execute_tool(
            "remember",
            &json!({"content": "Lives in Lisbon.", "kind": "fact", "key": "user.city"}),
        )
        .await
        .unwrap();
    assert_eq!(handle.freeze_system_prompt().await.unwrap(), before);
    let after = handle.refresh_system_prompt().await.unwrap();
    assert!(
        after.contains("Instructions:\n- style: Answer in short sentences."),
        "{after}"
    );
    assert!(
        after.contains("Facts:\n- user.city: Lives in Lisbon."),
        "{after}"
    );
    // Deterministic: rendering again gives the same bytes.
    assert_eq!(handle.refresh_system_prompt().await.unwrap(), after);
    // The block is read-only to the model.
    let refused = handle
        .execute_tool("set_context", &json!({"label": "profile", "content": "x"}))
        .await
        .unwrap();
    assert!(refused.starts_with("Error"), "{refused}");
}

#[tokio::test]
async fn the_profile_block_stays_within_its_budget() {
    let world = world(bound_to("erin"));
    for n in 0..50 {
        world
            .memory
            .remember(
                "erin",
                crate::long_term::RememberRequest {
                    content: format!("Fact number {n} about the user, a fairly long sentence."),
                    session_id: None,
                    kind: Some(memory_core::ports::MemoryKind::Fact),
                    key: Some(format!("fact.{n:02}")),
                    metadata: Default::default(),
                    expires_at: None,
                },
            )
            .await
            .unwrap();
    }
    let counter = memory_core::HeuristicTokenCounter;
    let text = super::render_profile(&world.memory, "erin", Some(200), &counter)
        .await
        .unwrap()
        .unwrap();
    assert!(counter.count(&text) <= 200, "{}", counter.count(&text));
    assert!(text.starts_with("Facts:\n- fact.00:"), "{text}");
    assert!(!text.contains("fact.49"), "the budget cut the tail");
    assert_eq!(
        super::render_profile(&world.memory, "nobody", Some(200), &counter)
            .await
            .unwrap(),
        None
    );
}

#[tokio::test]
async fn binding_is_explicit_and_deleting_a_session_cuts_provenance_only() {
    let options = LinkOptions {
        tools: vec![MemoryTool::Recall, MemoryTool::Remember, MemoryTool::Forget],
        ..LinkOptions::default()
    };
    let world = world(options);
    let s = session(&world, "s", Some("frank")).await;
    say(&world, &s, &LISBON).await;
    world.manager.end(&s, None).await.unwrap();
    world.memory.resume_jobs("frank", false).await.unwrap();
    let other = session(&world, "other", None).await;
    let handle = world.manager.session(&other).await.unwrap();
    assert!(!names(&handle.tools().await.unwrap()).contains(&"recall"));
    world.manager.bind(&other, Some("frank")).await.unwrap();
    let tools = handle.tools().await.unwrap();
    assert!(names(&tools).contains(&"forget"), "{:?}", names(&tools));
    let recalled = handle
        .execute_tool("recall", &json!({"query": "Lisbon trams"}))
        .await
        .unwrap();
    assert!(recalled.contains("messages=\"m1\""), "{recalled}");
    world.manager.delete(&s).await.unwrap();
    let after = handle
        .execute_tool("recall", &json!({"query": "Lisbon trams"}))
        .await
        .unwrap();
    assert!(
        after.contains("Lisbon"),
        "the profile keeps what it learned: {after}"
    );
    assert!(after.contains("session=\"s\""), "{after}");
    assert!(
        !after.contains("messages="),
        "the link to deleted messages is cut: {after}"
    );
    let unbound = world.manager.bind(&other, None).await.unwrap();
    assert_eq!(unbound.profile, None);
    assert!(!names(&handle.tools().await.unwrap()).contains(&"recall"));
    assert!(world.manager.bind(&other, Some("bad name")).await.is_err());
}

#[tokio::test]
async fn a_fork_ships_only_what_its_source_did_not() {
    let world = world(bound_to("gina"));
    let s = session(&world, "src", None).await;
    say(&world, &s, &LISBON).await;
    world.manager.end(&s, None).await.unwrap();
    let fork = world.manager.fork(&s, "m3", None).await.unwrap();
    assert_eq!(fork.profile.as_deref(), Some("gina"));
    say(
        &world,
        &fork.id,
        &[("f1", Role::User, "A new branch of the talk.")],
    )
    .await;
    let (_, shipped) = world.manager.end(&fork.id, None).await.unwrap();
    let shipped = shipped.unwrap();
    assert_eq!(
        (shipped.shipped, shipped.already_shipped),
        (1, 3),
        "{shipped:?}"
    );
    // An unbound source forks unbound, even with a default profile.
    let plain = session(&world, "plain", None).await;
    world.manager.bind(&plain, None).await.unwrap();
    say(&world, &plain, &LISBON).await;
    let forked = world.manager.fork(&plain, "m2", None).await.unwrap();
    assert_eq!(forked.profile, None);
}

/// A world with `specs` and `options` in which "gus" remembers his diet; the frozen prompts
/// of a session bound to him and of an unbound one.
async fn prompts_of_gus(options: LinkOptions, specs: Vec<BlockSpec>) -> (String, String) {
    let world = world_with(options, specs);
    world
        .memory
        .remember(
            "gus",
            crate::long_term::RememberRequest {
                content: "Is vegetarian, no mushrooms.".into(),
                kind: Some(memory_core::ports::MemoryKind::Fact),
                key: Some("diet".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let mut prompts = Vec::new();
    for (id, profile) in [("bound", Some("gus")), ("unbound", None)] {
        let s = session(&world, id, profile).await;
        let handle = world.manager.session(&s).await.unwrap();
        prompts.push(handle.freeze_system_prompt().await.unwrap());
    }
    let unbound = prompts.pop().unwrap();
    (prompts.pop().unwrap(), unbound)
}

#[tokio::test]
async fn a_bound_session_shows_its_profile_with_no_block_declared() {
    // Nothing declared: the default block shows the bound profile, and nothing for an
    // unbound session.
    let (bound, unbound) =
        prompts_of_gus(LinkOptions::default(), vec![BlockSpec::writable("notes")]).await;
    assert!(
        bound.contains("Facts:\n- diet: Is vegetarian, no mushrooms."),
        "{bound}"
    );
    assert!(bound.contains("PROFILE (What you remember"), "{bound}");
    assert!(!unbound.contains("vegetarian"), "{unbound}");

    // Turned off: no block shows it.
    let off = LinkOptions {
        profile_block: None,
        ..LinkOptions::default()
    };
    let (bound, _) = prompts_of_gus(off, vec![BlockSpec::writable("notes")]).await;
    assert!(!bound.contains("vegetarian"), "{bound}");

    // Declared: that block is the only one, with its label and budget.
    let declared = vec![BlockSpec::profile("about_the_user").max_tokens(300)];
    let (bound, _) = prompts_of_gus(LinkOptions::default(), declared).await;
    assert_eq!(bound.matches("vegetarian").count(), 1, "{bound}");
    assert!(bound.contains("ABOUT_THE_USER"), "{bound}");

    // The label taken by a block of the deployment's own: the default one is renamed.
    let (bound, _) =
        prompts_of_gus(LinkOptions::default(), vec![BlockSpec::writable("profile")]).await;
    assert!(bound.contains("MEMORY_PROFILE"), "{bound}");
    assert!(bound.contains("vegetarian"), "{bound}");
}

/// The block ranks facts and tasks by score, not list order: what recall returned lately and
/// what was said lately come first; an older fact nobody used gives way when the budget is
/// short; a second service over the same stores (a fresh process) chooses the same.
#[tokio::test]
async fn the_profile_block_chooses_by_score_the_same_in_every_process() {
    let profiles = Arc::new(InMemoryProfiles::new());
    let kv = Arc::new(InMemoryKeyValueStore::new());
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let service = || {
        let backends = LongTermBackends::new(Arc::clone(&profiles), profiles.jobs(), kv.clone());
        MemoryService::new(backends, clock.clone())
            .with_embedder(Arc::new(HashingEmbedder::new(64)))
    };
    let memory = service();
    let day = 86_400_000;
    let fact = |content: &str, key: &str| crate::long_term::RememberRequest {
        content: content.into(),
        kind: Some(memory_core::ports::MemoryKind::Fact),
        key: Some(key.into()),
        ..crate::long_term::RememberRequest::default()
    };
    for n in 0..20 {
        memory
            .remember(
                "gil",
                fact(
                    &format!("An old detail number {n} of little use."),
                    &format!("old.{n:02}"),
                ),
            )
            .await
            .unwrap();
    }
    clock.advance(90 * day);
    memory
        .remember("gil", fact("Works at the observatory in La Palma.", "work"))
        .await
        .unwrap();
    memory
        .remember(
            "gil",
            crate::long_term::RememberRequest {
                content: "Renew the telescope time application.".into(),
                kind: Some(memory_core::ports::MemoryKind::Task),
                ..crate::long_term::RememberRequest::default()
            },
        )
        .await
        .unwrap();
    // Recall uses one of the old details: it comes back into the block.
    clock.advance(day);
    let used = memory
        .recall(
            "gil",
            crate::long_term::RecallRequest::new("old detail number 7", 1),
        )
        .await
        .unwrap();
    let used_id = used.hits[0].item.id().to_owned();
    let counter = memory_core::HeuristicTokenCounter;
    let choice = super::choose_profile_block(&memory, "gil", Some(60), &counter)
        .await
        .unwrap();
    let text = choice.text.clone().unwrap();
    assert!(counter.count(&text) <= 60, "{text}");
    assert!(text.contains("work: Works at the observatory"), "{text}");
    assert!(
        text.contains("Open tasks:\n- Renew the telescope"),
        "{text}"
    );
    assert!(text.contains("old.07"), "the recalled one: {text}");
    assert!(
        text.matches("- old.").count() < 5,
        "the unused old ones give way: {text}"
    );
    let top: Vec<&str> = choice.candidates[..3]
        .iter()
        .map(|c| c.memory.id.as_str())
        .collect();
    assert!(top.contains(&used_id.as_str()), "{top:?}");
    let best = &choice.candidates[0];
    assert!(best.chosen && best.score.said > 0.9, "{best:?}");
    let recalled = choice
        .candidates
        .iter()
        .find(|c| c.memory.id == used_id)
        .unwrap();
    assert!(recalled.score.used > 0.99, "{recalled:?}");
    assert!(
        choice
            .candidates
            .windows(2)
            .all(|w| w[0].score.score >= w[1].score.score)
    );

    let again = super::choose_profile_block(&service(), "gil", Some(60), &counter)
        .await
        .unwrap();
    assert_eq!(
        again, choice,
        "a fresh service over the same stores chooses the same"
    );
}
