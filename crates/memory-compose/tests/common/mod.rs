//! Helpers shared by the composition tests.
#![allow(dead_code, clippy::unwrap_used, clippy::panic)]

/// The `[storage] blobs = "s3"` section for the test command's S3-compatible server under
/// `prefix`, or `None` (the caller skips, saying so) when no server is configured and none
/// is required. The keys come from the variables the section names, never from the file.
pub fn s3_blobs_section(prefix: &str) -> Option<String> {
    let Ok(endpoint) = std::env::var("MEMORY_S3_ENDPOINT") else {
        assert!(
            std::env::var("MEMORY_REQUIRE_S3").is_err(),
            "MEMORY_REQUIRE_S3 is set but MEMORY_S3_ENDPOINT is not (run scripts/setup-s3.sh)"
        );
        eprintln!("skipped: MEMORY_S3_ENDPOINT is not set");
        return None;
    };
    let bucket = std::env::var("MEMORY_S3_BUCKET").unwrap_or_else(|_| "memory-test".into());
    Some(format!(
        "[storage]\nblobs = \"s3\"\n\n[storage.s3]\nbucket = \"{bucket}\"\nprefix = \"{prefix}\"\n\
         endpoint = \"{endpoint}\"\nregion = \"auto\"\naccess_key_env = \"MEMORY_S3_ACCESS_KEY_ID\"\n\
         secret_key_env = \"MEMORY_S3_SECRET_ACCESS_KEY\"\n"
    ))
}

/// Runs `check` on a deployment with every role on the test command's PostgreSQL, in a
/// schema of its own named after `prefix` (with `extra` appended to its memory.toml), then
/// drops the schema; skips (saying so) when no server is configured and none is required.
pub async fn on_postgres<F>(prefix: &str, extra: &str, check: F)
where
    F: AsyncFnOnce(&memory_compose::Deployment),
{
    let Ok(url) = std::env::var("MEMORY_POSTGRES_URL") else {
        assert!(
            std::env::var("MEMORY_REQUIRE_POSTGRES").is_err(),
            "MEMORY_REQUIRE_POSTGRES is set but MEMORY_POSTGRES_URL is not"
        );
        eprintln!("skipped: MEMORY_POSTGRES_URL is not set");
        return;
    };
    let schema = format!(
        "{prefix}_{}",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("memory.toml"),
        memory_config::all_on_postgres(&schema) + extra,
    )
    .unwrap();
    let deployment = memory_compose::Deployment::open(dir.path()).unwrap();
    check(&deployment).await;
    deployment.close().await;
    let db = memory_postgres::PostgresDatabase::connect(
        memory_postgres::PostgresConfig::new(url).schema(schema),
    )
    .await
    .unwrap();
    db.drop_schema().await.unwrap();
    db.close().await;
}
