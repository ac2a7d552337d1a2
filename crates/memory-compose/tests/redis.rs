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

/// A deployment whose session tier and key-value store are on Redis under a fresh prefix.
fn deployment(dir: &std::path::Path, prefix: &str) -> Deployment {
    std::fs::write(
        dir.join("memory.toml"),
        format!(
            "[storage]\nsessions = \"redis\"\nkv = \"redis\"\n\n[storage.redis]\nkey_prefix = \"{prefix}\"\n\n\
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
