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
