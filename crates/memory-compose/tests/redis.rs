//! `[storage] sessions = "redis"`: the session tier on a real Redis (`scripts/setup-redis.sh`;
//! the test command requires it), paired with the embedded SQLite text index that the engine
//! keeps in step.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use memory_compose::Deployment;
use memory_config::{Backend, Role};
use memory_core::{Role as Speaker, SearchQuery, SessionId, UiMessage};
use memory_redis::{RedisConfig, RedisDatabase};
use memory_sqlite::{SqliteConfig, SqliteDatabase, SqliteTextIndex};
use memory_testkit::contract;

/// The test server's URL, or `None` (skipped, saying so) when none is configured.
fn redis_url() -> Option<String> {
    let Ok(url) = std::env::var("MEMORY_REDIS_URL") else {
        assert!(
            std::env::var("MEMORY_REQUIRE_REDIS").is_err(),
            "MEMORY_REQUIRE_REDIS is set but MEMORY_REDIS_URL is not (run scripts/setup-redis.sh)"
        );
        eprintln!("skipped: MEMORY_REDIS_URL is not set");
        return None;
    };
    Some(url)
}

/// A deployment whose session tier and key-value store are on Redis under a fresh prefix,
/// with a per-session block, a shared block and a block of stored skills.
fn deployment(dir: &std::path::Path, prefix: &str) -> Deployment {
    std::fs::write(
        dir.join("memory.toml"),
        format!(
            "[[blocks]]\nlabel = \"notes\"\nkind = \"writable\"\nmax_tokens = 200\n\n\
             [[blocks]]\nlabel = \"team\"\nkind = \"writable\"\nmax_tokens = 200\nscope = \"shared\"\n\n\
             [[blocks]]\nlabel = \"playbooks\"\nkind = \"skill\"\n\n\
             [storage]\nsessions = \"redis\"\nkv = \"redis\"\n\n[storage.redis]\nkey_prefix = \"{prefix}\"\n\n\
             [memory]\nembedder = \"none\"\n"
        ),
    )
    .unwrap();
    Deployment::open(dir).unwrap()
}

/// The message-store contract, search included, through the deployment's own store: the
/// Redis tree with the SQLite `messages` index the engine writes beside it.
#[tokio::test]
async fn redis_sessions_with_the_embedded_text_index_pass_the_contract() {
    let Some(url) = redis_url() else {
        return;
    };
    let prefix = format!("memorytest:compose:{}:", uuid::Uuid::new_v4().simple());
    let dir = tempfile::tempdir().unwrap();
    let deployment = deployment(dir.path(), &prefix);
    assert_eq!(deployment.storage().backend(Role::Sessions), Backend::Redis);
    assert_eq!(deployment.storage().backend(Role::Records), Backend::Sqlite);
    let manager = deployment.session_manager().await.unwrap();
    let index = SqliteTextIndex::new(
        SqliteDatabase::open(SqliteConfig::new(dir.path().join("memory.db")))
            .await
            .unwrap(),
    );
    contract::message_store::run_all(manager.store().as_ref(), Some(&index), 10_000).await;

    let db = RedisDatabase::connect(RedisConfig::new(url).key_prefix(prefix))
        .await
        .unwrap();
    // The deployment reports what the server said about its persistence.
    let warnings = deployment.durability_warnings();
    match db.durability() {
        memory_redis::Durability::EveryWrite => assert!(warnings.is_empty(), "{warnings:?}"),
        _ => assert!(warnings.iter().any(|w| w.contains("Redis")), "{warnings:?}"),
    }
    db.drop_all().await.unwrap();
}

/// Sessions, their messages and blocks live on Redis; search finds them through the SQLite
/// index; deleting a session removes every key it owns.
#[tokio::test]
async fn a_session_on_redis_is_searchable_and_leaves_no_key_when_deleted() {
    let Some(url) = redis_url() else {
        return;
    };
    let prefix = format!("memorytest:compose:{}:", uuid::Uuid::new_v4().simple());
    let dir = tempfile::tempdir().unwrap();
    let manager = deployment(dir.path(), &prefix)
        .session_manager()
        .await
        .unwrap();
    let mut ids = Vec::new();
    for (i, text) in ["the heron nests by the river", "the kingfisher dives"]
        .iter()
        .enumerate()
    {
        let info = manager.create(Default::default()).await.unwrap();
        manager
            .append(
                &info.id,
                UiMessage::text_message(format!("m{i}"), Speaker::User, *text),
                Default::default(),
            )
            .await
            .unwrap();
        ids.push(info.id);
    }
    let hits = manager.search(&SearchQuery::new("heron")).await.unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].session_id, ids[0]);

    let db = RedisDatabase::connect(RedisConfig::new(url).key_prefix(prefix))
        .await
        .unwrap();
    let owned = |keys: &[String], id: &SessionId| {
        keys.iter()
            .filter(|k| k.contains(id.as_str()))
            .cloned()
            .collect::<Vec<_>>()
    };
    let before = db.all_keys().await.unwrap();
    assert!(
        owned(&before, &ids[0]).len() >= 6,
        "the session's tree and record: {before:?}"
    );
    manager.delete(&ids[0]).await.unwrap();
    let after = db.all_keys().await.unwrap();
    assert!(
        owned(&after, &ids[0]).is_empty(),
        "keys of the deleted session remain: {after:?}"
    );
    assert_eq!(owned(&after, &ids[1]), owned(&before, &ids[1]));
    assert!(
        manager
            .search(&SearchQuery::new("heron"))
            .await
            .unwrap()
            .is_empty()
    );
    db.drop_all().await.unwrap();
}

/// Two servers (two deployments, each with its own connection and its own session handles)
/// on one Redis: what one writes, refreshes or loads is what the other reads next. No
/// in-process copy goes stale, and concurrent changes of the loaded skills both land.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_on_one_redis_see_one_session() {
    let Some(url) = redis_url() else {
        return;
    };
    let prefix = format!("memorytest:coherence:{}:", uuid::Uuid::new_v4().simple());
    let dir = tempfile::tempdir().unwrap();
    let a = deployment(dir.path(), &prefix)
        .session_manager()
        .await
        .unwrap();
    let b = deployment(dir.path(), &prefix)
        .session_manager()
        .await
        .unwrap();
    let id = a.create(Default::default()).await.unwrap().id;
    let (sa, sb) = (a.session(&id).await.unwrap(), b.session(&id).await.unwrap());

    let frozen = sa.freeze_system_prompt().await.unwrap();
    assert_eq!(
        sb.freeze_system_prompt().await.unwrap(),
        frozen,
        "one frozen prompt"
    );
    sb.context()
        .replace("notes", "Prefers green tea")
        .await
        .unwrap();
    assert_eq!(
        sa.context().get("notes").await.unwrap().content,
        "Prefers green tea",
        "a read after another server's write sees it"
    );
    assert_eq!(
        sa.freeze_system_prompt().await.unwrap(),
        frozen,
        "writes never change the frozen prompt"
    );
    let refreshed = sb.refresh_system_prompt().await.unwrap();
    assert!(refreshed.contains("Prefers green tea"));
    assert_eq!(
        sa.freeze_system_prompt().await.unwrap(),
        refreshed,
        "another server's refresh is the frozen prompt everywhere"
    );

    for (key, body) in [("alpha", "First playbook"), ("beta", "Second playbook")] {
        sa.context()
            .set_entry("playbooks", body, Some(key), None)
            .await
            .unwrap();
    }
    let keys: Vec<String> = sa
        .context()
        .blocks()
        .await
        .unwrap()
        .into_iter()
        .filter(|b| b.label == "playbooks")
        .map(|b| b.content)
        .collect();
    assert!(
        keys[0].contains("alpha") && keys[0].contains("beta"),
        "{keys:?}"
    );
    for _ in 0..10 {
        let (ca, cb) = (sa.context().clone(), sb.context().clone());
        let (x, y) = tokio::join!(
            tokio::spawn(async move { ca.load_skill("playbooks", "alpha").await.unwrap() }),
            tokio::spawn(async move { cb.load_skill("playbooks", "beta").await.unwrap() }),
        );
        assert!(x.unwrap().is_some() && y.unwrap().is_some());
        assert_eq!(
            sa.context().loaded_skills().await.unwrap(),
            ["playbooks:alpha", "playbooks:beta"],
            "both loads land"
        );
        sa.context()
            .unload_skill("playbooks", "alpha")
            .await
            .unwrap();
        sb.context()
            .unload_skill("playbooks", "beta")
            .await
            .unwrap();
        assert!(sb.context().loaded_skills().await.unwrap().is_empty());
    }

    let db = RedisDatabase::connect(RedisConfig::new(url).key_prefix(prefix))
        .await
        .unwrap();
    db.drop_all().await.unwrap();
}
