//! Backup and restore of an embedded deployment through an S3-compatible bucket, beside a
//! plain upload and download of the same bytes through the same SDK (the floor), and the
//! skill index at 1,000 skills beside a raw listing. Needs a server:
//!
//! ```sh
//! MEMORY_S3_ENDPOINT=$(./scripts/setup-s3.sh) MEMORY_S3_ACCESS_KEY_ID=memorytest \
//!   MEMORY_S3_SECRET_ACCESS_KEY=memorytest-secret cargo bench -p memory-compose --bench backup
//! ```
//!
//! `BENCH_BYTES` sizes the deployment (default 1 GiB of SQLite). Everything runs under an
//! object prefix of its own, deleted at the end; results print as Markdown rows.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Instant;

use memory_compose::Deployment;
use memory_core::ports::{BlobStoreExt, SkillStore};
use memory_core::{NewMessage, Parent, Role, UiMessage};

fn var(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.into())
}

/// About `bytes` of prose-like text from a fixed vocabulary (deterministic).
fn text(seed: usize, bytes: usize) -> String {
    const WORDS: [&str; 16] = [
        "lighthouse",
        "keeper",
        "storm",
        "harbour",
        "ledger",
        "lantern",
        "tide",
        "north",
        "supply",
        "boat",
        "weather",
        "signal",
        "rocks",
        "night",
        "oil",
        "watch",
    ];
    let mut out = String::with_capacity(bytes + 16);
    let mut x = seed.wrapping_mul(2_654_435_761) | 1;
    while out.len() < bytes {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.push_str(WORDS[x % WORDS.len()]);
        out.push(' ');
    }
    out
}

async fn timed<T>(work: impl std::future::Future<Output = T>) -> (T, f64) {
    let started = Instant::now();
    let out = work.await;
    (out, started.elapsed().as_secs_f64())
}

#[tokio::main]
async fn main() {
    let Ok(endpoint) = std::env::var("MEMORY_S3_ENDPOINT") else {
        eprintln!("set MEMORY_S3_ENDPOINT (scripts/setup-s3.sh starts a server)");
        return;
    };
    let target: u64 = var("BENCH_BYTES", &(1u64 << 30).to_string())
        .parse()
        .unwrap();
    let bucket = var("MEMORY_S3_BUCKET", "memory-test");
    let prefix = format!("memorybench/{}/", uuid::Uuid::new_v4().simple());
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("memory.toml"),
        format!(
            "[[blocks]]\nlabel = \"playbooks\"\nkind = \"skill\"\n\n[memory]\nembedder = \"none\"\n\n\
             [storage]\nblobs = \"s3\"\n\n[storage.s3]\nbucket = \"{bucket}\"\nprefix = \"{prefix}\"\n\
             endpoint = \"{endpoint}\"\nregion = \"auto\"\naccess_key_env = \"MEMORY_S3_ACCESS_KEY_ID\"\n\
             secret_key_env = \"MEMORY_S3_SECRET_ACCESS_KEY\"\n"
        ),
    )
    .unwrap();
    let deployment = Deployment::open(dir.path()).unwrap();
    let manager = deployment.session_manager().await.unwrap();
    let store = manager.store().clone();

    // A deployment of `target` bytes: sessions of 1,000 messages of 8 KiB.
    let database = dir.path().join("memory.db");
    let (_, fill_secs) = timed(async {
        let mut s = 0usize;
        while std::fs::metadata(&database).map(|m| m.len()).unwrap_or(0) < target {
            let id = manager.create(Default::default()).await.unwrap().id;
            for batch in 0..10 {
                let messages = (0..100)
                    .map(|i| {
                        let n = batch * 100 + i;
                        NewMessage::with_parent(
                            UiMessage::text_message(
                                format!("m{n}"),
                                Role::User,
                                text(s * 1_000 + n, 8 * 1024),
                            ),
                            Parent::LatestLeaf,
                        )
                    })
                    .collect();
                store.append(&id, messages).await.unwrap();
            }
            s += 1;
        }
    })
    .await;
    let size = std::fs::metadata(&database).unwrap().len();
    eprintln!("filled {size} bytes in {fill_secs:.0} s");

    let (backup, backup_secs) = timed(deployment.backup(None)).await;
    let backup = backup.unwrap();
    let uploaded: u64 = backup.files.iter().map(|f| f.size).sum();

    // The floor: the same bytes (a snapshot made untimed) uploaded through the same SDK.
    let blobs = deployment.blob_store().await.unwrap();
    let copy = dir.path().join("plain-copy.db");
    memory_sqlite::snapshot(&database, &copy).await.unwrap();
    let (_, upload_secs) = timed(async {
        let mut upload = blobs.upload("plain/copy.db").await.unwrap();
        let bytes = tokio::fs::read(&copy).await.unwrap();
        for chunk in bytes.chunks(8 * 1024 * 1024) {
            upload.write(chunk.to_vec()).await.unwrap();
        }
        upload.finish().await.unwrap();
    })
    .await;

    let restored = tempfile::tempdir().unwrap();
    let (_, restore_secs) = timed(deployment.restore(Some(&backup.id), restored.path())).await;
    let (_, download_secs) = timed(async {
        let mut download = blobs.download("plain/copy.db").await.unwrap().unwrap();
        let mut out = Vec::with_capacity(download.size() as usize);
        while let Some(chunk) = download.next_chunk().await.unwrap() {
            out.extend(chunk);
        }
        tokio::fs::write(dir.path().join("plain-download.db"), out)
            .await
            .unwrap();
    })
    .await;

    // Archive and bring back a 10,000-message session.
    let cold = manager.create(Default::default()).await.unwrap().id;
    for batch in 0..10 {
        let messages = (0..1_000)
            .map(|i| {
                let n = batch * 1_000 + i;
                NewMessage::with_parent(
                    UiMessage::text_message(format!("c{n}"), Role::User, text(n, 1_024)),
                    Parent::LatestLeaf,
                )
            })
            .collect();
        store.append(&cold, messages).await.unwrap();
    }
    let (report, archive_secs) = timed(manager.archive(&cold)).await;
    let archived_bytes = report.unwrap().bytes;
    let (back, rehydrate_secs) = timed(async {
        let session = manager.session(&cold).await.unwrap();
        session.history(None).await.unwrap().len()
    })
    .await;
    assert_eq!(back, 10_000);

    // The skill index at 1,000 skills.
    let bucket_handle = memory_s3::S3Bucket::connect(
        memory_s3::S3Config::new(&bucket)
            .endpoint(&endpoint)
            .region("auto")
            .prefix(&prefix)
            .static_credentials(
                var("MEMORY_S3_ACCESS_KEY_ID", "memorytest"),
                var("MEMORY_S3_SECRET_ACCESS_KEY", "memorytest-secret"),
            ),
    )
    .await
    .unwrap();
    let skills = memory_s3::S3SkillStore::new(bucket_handle, "bench");
    let (_, put_secs) = timed(async {
        for i in 0..1_000 {
            skills
                .put(
                    &format!("skill-{i:04}"),
                    &text(i, 2_048),
                    Some(format!("Playbook number {i}")),
                )
                .await
                .unwrap();
        }
    })
    .await;
    let mut list_ms = Vec::new();
    for _ in 0..20 {
        let (listed, secs) = timed(skills.list()).await;
        assert_eq!(listed.unwrap().len(), 1_000);
        list_ms.push(secs * 1_000.0);
    }
    let mut raw_ms = Vec::new();
    for _ in 0..20 {
        let (page, secs) = timed(blobs.list("skills/bench/", None, 1_000)).await;
        assert!(page.unwrap().blobs.len() >= 1_000);
        raw_ms.push(secs * 1_000.0);
    }
    let p50 = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let mb = |bytes: u64, secs: f64| bytes as f64 / secs / 1_048_576.0;

    println!("| operation ({size} bytes of SQLite) | seconds | MiB/s |");
    println!("|---|---:|---:|");
    println!(
        "| backup (VACUUM INTO + streamed upload + SHA-256) | {backup_secs:.2} | {:.1} |",
        mb(uploaded, backup_secs)
    );
    println!(
        "| plain upload of the same bytes, same SDK (the floor) | {upload_secs:.2} | {:.1} |",
        mb(uploaded, upload_secs)
    );
    println!(
        "| restore (streamed download + SHA-256 check) | {restore_secs:.2} | {:.1} |",
        mb(uploaded, restore_secs)
    );
    println!(
        "| plain download of the same bytes, same SDK (the floor) | {download_secs:.2} | {:.1} |",
        mb(uploaded, download_secs)
    );
    println!();
    println!("| a 10,000-message session ({archived_bytes} bytes archived) | seconds |");
    println!("|---|---:|");
    println!("| archive (export, upload, clear) | {archive_secs:.2} |");
    println!(
        "| bring back on the next read (download, import, first history) | {rehydrate_secs:.2} |"
    );
    println!();
    println!("| skill index, 1,000 skills | p50 ms |");
    println!("|---|---:|");
    println!(
        "| S3SkillStore::list (one GET of the index) | {:.2} |",
        p50(&mut list_ms)
    );
    println!(
        "| raw ListObjectsV2 of the 1,000 documents (keys only, no descriptions) | {:.2} |",
        p50(&mut raw_ms)
    );
    println!(
        "| S3SkillStore::put, mean of 1,000 (document + index compare-and-swap) | {:.2} |",
        put_secs * 1_000.0 / 1_000.0
    );

    for blob in blobs.list_all("").await.unwrap() {
        blobs.delete(&blob.key).await.unwrap();
    }
}
