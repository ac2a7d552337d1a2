//! The embedded default keeps a small profile's text in its own SQLite file (FTS5) and moves
//! it to Tantivy once the profile grows (`[storage.tantivy] profiles_from_documents`):
//! nothing is lost on the way, two processes writing during the move included, and data
//! directories written when every profile was on Tantivy keep working.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use memory_compose::Deployment;
use memory_engine::long_term::{MemoryService, RecallRequest, RememberRequest};
use memory_testkit::files::files_containing;

fn note(content: impl Into<String>) -> RememberRequest {
    RememberRequest {
        content: content.into(),
        ..RememberRequest::default()
    }
}

/// The embedded default, LLM- and model-free, with `tantivy` added to `[storage.tantivy]`.
fn deployment(dir: &Path, tantivy: &str) -> Deployment {
    std::fs::write(
        dir.join("memory.toml"),
        format!("[memory]\nembedder = \"none\"\n\n[storage.tantivy]\n{tantivy}\n"),
    )
    .unwrap();
    Deployment::open(dir).unwrap()
}

async fn service(deployment: &Deployment) -> MemoryService {
    deployment.memory_service().await.unwrap().0
}

/// The ids of what a full-text recall of `query` finds (at most 100).
async fn found(memory: &MemoryService, profile: &str, query: &str) -> Vec<String> {
    let mut ids: Vec<String> = memory
        .recall(profile, RecallRequest::new(query, 100))
        .await
        .unwrap()
        .hits
        .into_iter()
        .map(|h| h.item.id().to_owned())
        .collect();
    ids.sort();
    ids
}

/// How many rows of the profile's `memories_fts` match `word`, read from its file.
async fn fts_matches(dir: &Path, profile: &str, word: &str) -> i64 {
    use sqlx::ConnectOptions;
    let mut connection = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(dir.join(format!("profiles/{profile}.db")))
        .read_only(true)
        .connect()
        .await
        .unwrap();
    sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH '{word}'"
    )))
    .fetch_one(&mut connection)
    .await
    .unwrap()
}

fn tantivy_dir(dir: &Path, profile: &str) -> std::path::PathBuf {
    dir.join("tantivy/profiles").join(profile)
}

/// Remembers heron number `i` for each `i` in profile `ana`; the ids.
async fn herons(memory: &MemoryService, numbers: std::ops::Range<usize>) -> Vec<String> {
    let mut ids = Vec::new();
    for i in numbers {
        let m = memory
            .remember(
                "ana",
                note(format!("the heron number {i} nests by the river")),
            )
            .await
            .unwrap();
        ids.push(m.id);
    }
    ids
}

#[tokio::test]
async fn a_small_profile_has_no_tantivy_index_and_moves_there_when_it_grows_losing_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let deployment = deployment(dir.path(), "profiles_from_documents = 10");
    let memory = service(&deployment).await;
    let mut ids = herons(&memory, 0..5).await;
    ids.sort();
    assert_eq!(found(&memory, "ana", "heron nests").await, ids);
    assert!(
        !tantivy_dir(dir.path(), "ana").exists(),
        "a small profile costs no Tantivy directory"
    );
    assert_eq!(fts_matches(dir.path(), "ana", "heron").await, 5);

    // Grown past the size (checked every 16 uses of the profile): on Tantivy, everything
    // found, the FTS5 index emptied.
    ids.extend(herons(&memory, 5..40).await);
    ids.sort();
    assert!(tantivy_dir(dir.path(), "ana").is_dir(), "moved to Tantivy");
    assert_eq!(found(&memory, "ana", "heron nests").await, ids);
    assert_eq!(
        fts_matches(dir.path(), "ana", "heron").await,
        0,
        "the FTS5 index is emptied once the text moved"
    );

    // A fresh process finds it on Tantivy, and keeps writing there.
    drop(memory);
    deployment.close().await;
    let deployment = self::deployment(dir.path(), "profiles_from_documents = 10");
    let memory = service(&deployment).await;
    let late = memory
        .remember("ana", note("a late heron nests by the river"))
        .await
        .unwrap();
    ids.push(late.id);
    ids.sort();
    assert_eq!(found(&memory, "ana", "heron nests").await, ids);
    assert_eq!(fts_matches(dir.path(), "ana", "heron").await, 0);

    // Deleted and made again under the same name: small again (its text in its own file).
    assert!(memory.delete_profile("ana").await.unwrap());
    let again = memory
        .remember("ana", note("a new heron nests by the river"))
        .await
        .unwrap();
    assert_eq!(found(&memory, "ana", "heron nests").await, vec![again.id]);
    assert_eq!(fts_matches(dir.path(), "ana", "heron").await, 1);
}

#[tokio::test]
async fn a_purge_on_a_small_profile_leaves_the_text_in_no_file() {
    const MARKER: &str = "qzvxmarkerjwk";
    let dir = tempfile::tempdir().unwrap();
    let deployment = deployment(dir.path(), "");
    let memory = service(&deployment).await;
    let secret = memory
        .remember("vault", note(format!("the alarm code is {MARKER}")))
        .await
        .unwrap();
    memory
        .remember("vault", note("an ordinary alarm fact"))
        .await
        .unwrap();
    let scan = || files_containing(dir.path(), MARKER.as_bytes());
    assert!(
        !scan().is_empty(),
        "positive control: the marker is on disk"
    );
    assert_eq!(fts_matches(dir.path(), "vault", MARKER).await, 1);
    memory.purge("vault", &secret.id, true).await.unwrap();
    assert_eq!(scan(), Vec::<String>::new(), "purged text left in a file");
    assert_eq!(found(&memory, "vault", "alarm").await.len(), 1);
}

#[tokio::test]
async fn a_data_dir_with_every_profile_on_tantivy_keeps_every_memory() {
    let dir = tempfile::tempdir().unwrap();
    // Written as before the tiers: every profile's text on Tantivy, no FTS5 index.
    let deployment = deployment(dir.path(), "profiles_from_documents = 0");
    let memory = service(&deployment).await;
    let mut ids = Vec::new();
    for i in 0..3 {
        ids.push(
            memory
                .remember("old", note(format!("kingfisher sighting {i}")))
                .await
                .unwrap()
                .id,
        );
    }
    assert!(tantivy_dir(dir.path(), "old").is_dir());
    assert_eq!(fts_matches(dir.path(), "old", "kingfisher").await, 0);
    drop(memory);
    deployment.close().await;

    // Opened with the default: the profile stays on Tantivy, with everything in it.
    let deployment = self::deployment(dir.path(), "");
    let memory = service(&deployment).await;
    ids.sort();
    assert_eq!(found(&memory, "old", "kingfisher sighting").await, ids);
    ids.push(
        memory
            .remember("old", note("kingfisher sighting late"))
            .await
            .unwrap()
            .id,
    );
    ids.sort();
    assert_eq!(found(&memory, "old", "kingfisher sighting").await, ids);
    assert_eq!(fts_matches(dir.path(), "old", "kingfisher").await, 0);
    // A new profile beside it starts small.
    memory
        .remember("new", note("kingfisher sighting new"))
        .await
        .unwrap();
    assert!(!tantivy_dir(dir.path(), "new").exists());
    assert_eq!(found(&memory, "new", "kingfisher").await.len(), 1);
}

#[tokio::test]
async fn a_profile_in_another_language_is_on_tantivy_from_its_start() {
    let dir = tempfile::tempdir().unwrap();
    let deployment = deployment(
        dir.path(),
        "[storage.tantivy.profile_languages]\nhans = \"german\"\n",
    );
    let memory = service(&deployment).await;
    let m = memory
        .remember("hans", note("Die Katzen schlafen am Fluss"))
        .await
        .unwrap();
    assert!(tantivy_dir(dir.path(), "hans").is_dir());
    assert_eq!(
        found(&memory, "hans", "Katze").await,
        vec![m.id],
        "German stemming"
    );
}

#[tokio::test]
async fn two_processes_writing_while_a_profile_moves_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let first = deployment(dir.path(), "profiles_from_documents = 30");
    let second = Deployment::open(dir.path()).unwrap();
    let (a, b) = (service(&first).await, service(&second).await);
    let write = |memory: MemoryService, who: &'static str| async move {
        let mut ids = Vec::new();
        for i in 0..40 {
            let m = memory
                .remember("shared", note(format!("otter report {who} {i}")))
                .await
                .unwrap();
            ids.push(m.id);
        }
        ids
    };
    let (mut ids, more) = tokio::join!(write(a.clone(), "a"), write(b.clone(), "b"));
    ids.extend(more);
    ids.sort();
    assert!(tantivy_dir(dir.path(), "shared").is_dir(), "moved");
    assert_eq!(found(&a, "shared", "otter report").await, ids);
    assert_eq!(found(&b, "shared", "otter report").await, ids);
}

#[tokio::test]
async fn reindex_moves_a_profile_loaded_past_its_size_beside_the_engine() {
    let dir = tempfile::tempdir().unwrap();
    let deployment = deployment(dir.path(), "profiles_from_documents = 10");
    let backends = deployment.long_term_backends().await.unwrap();
    let memory = service(&deployment).await;
    memory
        .remember("bulk", note("a first otter is seen"))
        .await
        .unwrap();
    let small = backends.reindex("bulk").await.unwrap();
    assert!(!small.rebuilt, "a small profile's index is its store's");

    // Loaded straight into the records, as a bulk load does: the text is in the FTS5 index.
    let store = backends.records.open("bulk").await.unwrap();
    for i in 0..20 {
        let mut record = memory
            .remember("scratch", note(format!("otter number {i} is seen")))
            .await
            .unwrap();
        record.id = format!("bulk-{i}");
        store.insert_memory(record).await.unwrap();
    }
    drop(store);
    let moved = backends.reindex("bulk").await.unwrap();
    assert!(moved.rebuilt);
    assert_eq!(moved.documents, 21);
    assert!(tantivy_dir(dir.path(), "bulk").is_dir());
    assert_eq!(found(&memory, "bulk", "otter seen").await.len(), 21);
    assert_eq!(fts_matches(dir.path(), "bulk", "otter").await, 0);
}
