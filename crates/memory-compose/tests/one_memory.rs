//! The two tiers as one memory, through the composition: an agent loop whose scripted model
//! uses the session tools, on the embedded default and on PostgreSQL with Redis; two
//! deployments (two servers) on one PostgreSQL; a process that stops between a compaction
//! and its job.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;

use memory_compose::Deployment;
use memory_core::{NewSession, Role, SessionId, UiMessage};
use memory_engine::compaction::{CompactorOptions, SummarizingCompactor};
use memory_engine::long_term::MemoryService;
use memory_engine::{CompactionSettings, SessionManager};
use memory_testkit::in_memory::ScriptedLanguageModel;
use serde_json::{Value, json};

/// Blocks of the test deployments: notes and the profile block; sessions bound to `alice`.
const BLOCKS: &str = "[sessions]\nprofile = \"alice\"\n\n\
    [[blocks]]\nlabel = \"notes\"\nkind = \"writable\"\nmax_tokens = 200\n\n\
    [[blocks]]\nlabel = \"profile\"\nkind = \"profile\"\nmax_tokens = 300\n\n\
    [memory]\nembedder = \"none\"\n";

/// One step of the scripted model: a turn of the conversation, or a tool call.
enum Step {
    Say(&'static str, Role, &'static str),
    Call(&'static str, Value),
}

/// The sessions of a deployment with a summarizer whose model is scripted (the composition
/// only builds one from `[llm]`).
async fn compose(dir: &Path) -> (Deployment, SessionManager, MemoryService) {
    let deployment = Deployment::open(dir).unwrap();
    let (sessions, memory, _) = deployment.services().await.unwrap();
    let model = Arc::new(ScriptedLanguageModel::new(
        (0..20).map(|_| "The user talked about their home and their diet."),
    ));
    let options = CompactorOptions {
        protect_head: 0,
        tail_token_budget: 1,
        min_tail_messages: 2,
        ..CompactorOptions::default()
    };
    let compactor = SummarizingCompactor::new(model, options);
    let sessions = sessions.with_compaction(CompactionSettings::new(Arc::new(compactor)));
    (deployment, sessions, memory)
}

/// Runs the script on `session`; the outputs of its tool calls, in order.
async fn run(sessions: &SessionManager, session: &SessionId, steps: &[Step]) -> Vec<String> {
    let handle = sessions.session(session).await.unwrap();
    let mut outputs = Vec::new();
    for step in steps {
        match step {
            Step::Say(id, role, text) => {
                handle
                    .append(UiMessage::text_message(*id, *role, *text))
                    .await
                    .unwrap();
            }
            Step::Call(name, arguments) => {
                outputs.push(handle.execute_tool(name, arguments).await.unwrap());
            }
        }
    }
    outputs
}

const SESSION_ONE: [Step; 5] = [
    Step::Say("u1", Role::User, "I live in Porto, by the river."),
    Step::Say("a1", Role::Assistant, "Porto is beautiful."),
    Step::Say("u2", Role::User, "I am vegetarian, so no fish please."),
    Step::Say("a2", Role::Assistant, "Understood, vegetarian it is."),
    Step::Say("u3", Role::User, "What should I cook tonight?"),
];

/// The agent loop the issue describes, on whatever backends `dir`'s configuration names.
async fn agent_loop(dir: &Path) {
    let (deployment, sessions, memory) = compose(dir).await;
    let one = sessions.create(NewSession::default()).await.unwrap().id;
    run(&sessions, &one, &SESSION_ONE).await;
    let calls = run(
        &sessions,
        &one,
        &[Step::Call(
            "remember",
            json!({"content": "The user is vegetarian.", "kind": "fact", "key": "user.diet"}),
        )],
    )
    .await;
    assert!(
        calls[0].starts_with("Remembered (fact, key user.diet)"),
        "{calls:?}"
    );
    let compacted = sessions
        .session(&one)
        .await
        .unwrap()
        .compact(None)
        .await
        .unwrap();
    assert!(compacted.is_some(), "the range was compacted");
    let jobs = memory.jobs("alice").await.unwrap();
    assert_eq!(jobs.len(), 1, "compaction queued one job");
    for job in memory.resume_jobs("alice", false).await.unwrap() {
        assert!(job.status.is_finished(), "{job:?}");
    }

    let two = sessions.create(NewSession::default()).await.unwrap().id;
    let second = sessions.session(&two).await.unwrap();
    let before = second.freeze_system_prompt().await.unwrap();
    let recalled = run(
        &sessions,
        &two,
        &[Step::Call(
            "recall",
            json!({"query": "Which city does the user live in?"}),
        )],
    )
    .await;
    assert!(recalled[0].contains("Porto"), "{recalled:?}");
    assert!(
        recalled[0].contains(&format!("session=\"{one}\"")),
        "{recalled:?}"
    );
    assert!(recalled[0].contains("messages=\"u1\""), "{recalled:?}");
    run(
        &sessions,
        &two,
        &[Step::Call(
            "remember",
            json!({"content": "Suggest recipes from Porto.", "kind": "instruction", "key": "cooking"}),
        )],
    )
    .await;
    assert_eq!(second.freeze_system_prompt().await.unwrap(), before);
    assert!(!before.contains("Suggest recipes from Porto."));
    let after = second.refresh_system_prompt().await.unwrap();
    assert!(
        after.contains("- cooking: Suggest recipes from Porto."),
        "{after}"
    );
    assert!(
        after.contains("- user.diet: The user is vegetarian."),
        "{after}"
    );

    // An unbound session ships nothing and has no memory tools.
    let plain = sessions.create(NewSession::default()).await.unwrap().id;
    sessions.bind(&plain, None).await.unwrap();
    run(&sessions, &plain, &SESSION_ONE).await;
    sessions
        .session(&plain)
        .await
        .unwrap()
        .compact(None)
        .await
        .unwrap();
    let (_, shipped) = sessions.end(&plain, None).await.unwrap();
    assert!(shipped.is_none());
    assert_eq!(memory.jobs("alice").await.unwrap().len(), 1);
    let tools = sessions
        .session(&plain)
        .await
        .unwrap()
        .tools()
        .await
        .unwrap();
    assert!(tools.iter().all(|t| t.name != "recall"));
    deployment.close().await;
}

#[tokio::test]
async fn an_agent_loop_on_the_embedded_default() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("memory.toml"), BLOCKS).unwrap();
    agent_loop(dir.path()).await;
}

/// The test command's servers, or `None` (skipped, saying so) when none are configured.
fn servers() -> Option<(String, String)> {
    match (
        std::env::var("MEMORY_POSTGRES_URL"),
        std::env::var("MEMORY_REDIS_URL"),
    ) {
        (Ok(pg), Ok(redis)) => Some((pg, redis)),
        _ => {
            assert!(
                std::env::var("MEMORY_REQUIRE_POSTGRES").is_err()
                    && std::env::var("MEMORY_REQUIRE_REDIS").is_err(),
                "the test command requires PostgreSQL and Redis"
            );
            eprintln!("skipped: MEMORY_POSTGRES_URL or MEMORY_REDIS_URL is not set");
            None
        }
    }
}

/// Sessions and key-value on Redis, every long-term role on PostgreSQL.
fn postgres_and_redis(schema: &str, prefix: &str) -> String {
    format!(
        "{BLOCKS}\n[storage]\nsessions = \"redis\"\nkv = \"redis\"\nrecords = \"postgres\"\n\
         text = \"postgres\"\nvectors = \"postgres\"\njobs = \"postgres\"\n\n\
         [storage.postgres]\nschema = \"{schema}\"\n\n[storage.redis]\nkey_prefix = \"{prefix}\"\n"
    )
}

async fn clean_up(pg: &str, schema: &str, redis: &str, prefix: &str) {
    memory_postgres::PostgresDatabase::connect(
        memory_postgres::PostgresConfig::new(pg).schema(schema),
    )
    .await
    .unwrap()
    .drop_schema()
    .await
    .unwrap();
    memory_redis::RedisDatabase::connect(memory_redis::RedisConfig::new(redis).key_prefix(prefix))
        .await
        .unwrap()
        .drop_all()
        .await
        .unwrap();
}

fn names() -> (String, String) {
    let id = &uuid::Uuid::new_v4().simple().to_string()[..12];
    (
        format!("test_one_memory_{id}"),
        format!("memorytest:one:{id}:"),
    )
}

#[tokio::test]
async fn an_agent_loop_on_postgres_and_redis() {
    let Some((pg, redis)) = servers() else {
        return;
    };
    let (schema, prefix) = names();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("memory.toml"),
        postgres_and_redis(&schema, &prefix),
    )
    .unwrap();
    agent_loop(dir.path()).await;
    clean_up(&pg, &schema, &redis, &prefix).await;
}

/// Two deployments over one PostgreSQL (and Redis), as two servers: a compaction on one is
/// recalled through the other, and the same range compacted on both at once is one job.
#[tokio::test]
async fn two_servers_share_one_memory_and_ship_a_range_once() {
    let Some((pg, redis)) = servers() else {
        return;
    };
    let (schema, prefix) = names();
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for dir in [&a, &b] {
        std::fs::write(
            dir.path().join("memory.toml"),
            postgres_and_redis(&schema, &prefix),
        )
        .unwrap();
    }
    let (first, one_sessions, one_memory) = compose(a.path()).await;
    let (second, two_sessions, two_memory) = compose(b.path()).await;
    let id = one_sessions.create(NewSession::default()).await.unwrap().id;
    run(&one_sessions, &id, &SESSION_ONE).await;
    // Both servers compact the session at the same moment: whichever interleaving, the
    // range is one job (the same unshipped messages give the same job id, and a server
    // that sees the other's overlay or shipped record has nothing left to ship).
    let (left, right) = (
        one_sessions.session(&id).await.unwrap(),
        two_sessions.session(&id).await.unwrap(),
    );
    let (l, r) = futures::join!(left.compact(None), right.compact(None));
    let (l, r) = (l.unwrap(), r.unwrap());
    assert!(l.is_some() || r.is_some(), "a range was compacted");
    let jobs = two_memory.jobs("alice").await.unwrap();
    assert_eq!(jobs.len(), 1, "the same range is one job: {jobs:?}");
    two_memory.resume_jobs("alice", false).await.unwrap();
    let other = two_sessions.create(NewSession::default()).await.unwrap().id;
    let recalled = run(
        &two_sessions,
        &other,
        &[Step::Call("recall", json!({"query": "Porto river"}))],
    )
    .await;
    assert!(recalled[0].contains("Porto"), "{recalled:?}");
    assert!(recalled[0].contains("messages=\"u1\""), "{recalled:?}");
    assert_eq!(one_memory.jobs("alice").await.unwrap().len(), 1);
    first.close().await;
    second.close().await;
    clean_up(&pg, &schema, &redis, &prefix).await;
}

/// A process that stops after a compaction queued its job, before the job ran, loses
/// nothing: the next process finds the job in the queue and runs it, and shipping the same
/// range again queues nothing more.
#[tokio::test]
async fn a_job_queued_by_a_process_that_stopped_runs_in_the_next() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("memory.toml"), BLOCKS).unwrap();
    let id = {
        let (deployment, sessions, _) = compose(dir.path()).await;
        let id = sessions.create(NewSession::default()).await.unwrap().id;
        run(&sessions, &id, &SESSION_ONE).await;
        sessions
            .session(&id)
            .await
            .unwrap()
            .compact(None)
            .await
            .unwrap()
            .unwrap();
        deployment.close().await;
        id
    };
    let (deployment, sessions, memory) = compose(dir.path()).await;
    let queued = memory.jobs("alice").await.unwrap();
    assert_eq!(queued.len(), 1);
    assert!(!queued[0].status.is_finished());
    let ran = memory.resume_jobs("alice", false).await.unwrap();
    assert_eq!(ran.len(), 1);
    assert!(ran[0].status.is_finished(), "{:?}", ran[0]);
    let history = sessions
        .session(&id)
        .await
        .unwrap()
        .raw_history(None)
        .await
        .unwrap();
    let link = sessions.long_term().unwrap();
    let again = link
        .ship_messages("alice", &id, &history[..3])
        .await
        .unwrap();
    assert!(again.job.is_none(), "{again:?}");
    deployment.close().await;
}
