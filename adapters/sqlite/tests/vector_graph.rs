//! The approximate vector graph of the SQLite adapter: found against the exact scan, saved
//! beside the database, caught up after a restart that missed writes, rebuilt from a damaged
//! snapshot, and erased with what it indexed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use memory_core::ports::{VectorFields, VectorFilter, VectorIndex, VectorQuery, VectorRecord};
use memory_sqlite::{ApproximateSearch, SqliteConfig, SqliteDatabase, SqliteVectorIndex};

const DIMS: usize = 24;

async fn open(dir: &Path) -> SqliteDatabase {
    SqliteDatabase::open(SqliteConfig::new(dir.join("memory.db")).secure_delete(true))
        .await
        .unwrap()
}

fn eager() -> Option<ApproximateSearch> {
    Some(ApproximateSearch {
        from_rows: 0,
        exact_below: 0,
        candidates: 64,
        save_after: 1,
    })
}

/// Deterministic vectors spread around a few centres.
fn vector(i: usize) -> Vec<f32> {
    let mut state = (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (0..DIMS)
        .map(|d| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let centre = if (i % 5 + d).is_multiple_of(3) {
                1.0
            } else {
                0.0
            };
            centre + (state % 1_000) as f32 / 2_000.0
        })
        .collect()
}

fn record(i: usize) -> VectorRecord {
    VectorRecord {
        id: format!("v{i:05}"),
        vector: vector(i),
        model: "m".into(),
        fields: VectorFields {
            session: Some(format!("s{}", i % 7)),
            ..VectorFields::default()
        },
    }
}

async fn search(index: &SqliteVectorIndex, query: &[f32], filter: VectorFilter) -> Vec<String> {
    let query = VectorQuery {
        vector: query.to_vec(),
        k: 10,
        filter,
    };
    index
        .search("ns", &query)
        .await
        .unwrap()
        .into_iter()
        .map(|hit| hit.id)
        .collect()
}

fn snapshot_files(dir: &Path) -> Vec<std::path::PathBuf> {
    match std::fs::read_dir(dir.join("memory.db.vectors")) {
        Ok(entries) => entries.map(|e| e.unwrap().path()).collect(),
        Err(_) => Vec::new(),
    }
}

/// Whether a snapshot holds `vector`'s int8 codes at the snapshot's scale, each byte within
/// one of them (rounding may differ).
fn snapshots_hold(dir: &Path, vector: &[f32]) -> bool {
    snapshot_files(dir).iter().any(|path| {
        let bytes = std::fs::read(path).unwrap();
        let codes = int8_codes(vector, snapshot_scale(&bytes));
        bytes.windows(codes.len()).any(|w| {
            w.iter()
                .zip(&codes)
                .all(|(a, b)| (i16::from(*a as i8) - i16::from(*b as i8)).abs() <= 1)
        })
    })
}

/// The code scale a snapshot's header names (after the format, version and dimensions: the
/// scale's `f32` bits in a little-endian `u64`).
fn snapshot_scale(snapshot: &[u8]) -> f64 {
    assert_eq!(
        &snapshot[..8],
        b"MEMANN05",
        "a snapshot of the format this test reads"
    );
    let bits = u64::from_le_bytes(snapshot[24..32].try_into().unwrap());
    f64::from(f32::from_bits(u32::try_from(bits).unwrap()))
}

/// Whether a snapshot holds these exact bytes.
fn snapshots_contain(dir: &Path, needle: &[u8]) -> bool {
    snapshot_files(dir).iter().any(|path| {
        std::fs::read(path)
            .unwrap()
            .windows(needle.len())
            .any(|w| w == needle)
    })
}

/// The graph's int8 form of a vector: its unit vector times the graph's one `scale`, rounded
/// (shrunk whole when its largest component would pass ±127).
fn int8_codes(v: &[f32], scale: f64) -> Vec<u8> {
    let norm = v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    let largest = v.iter().fold(0.0f64, |m, x| m.max(f64::from(x.abs()))) / norm;
    let scale = if largest * scale > 127.0 {
        127.0 / largest
    } else {
        scale
    };
    v.iter()
        .map(|x| ((f64::from(*x) / norm * scale).round().clamp(-127.0, 127.0) as i8) as u8)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_graph_finds_what_the_exact_scan_finds_and_survives_a_restart_that_missed_writes() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path()).await;
    let graph = SqliteVectorIndex::new(db.clone()).with_approximate(eager());
    let exact = SqliteVectorIndex::new(db.clone()).with_approximate(None);
    graph
        .upsert("ns", (0..1_500).map(record).collect())
        .await
        .unwrap();
    // The first write creates the namespace; the next load builds and saves its graph.
    search(&graph, &vector(1), VectorFilter::default()).await;
    assert!(
        !snapshot_files(dir.path()).is_empty(),
        "a snapshot was saved"
    );

    // Writes the saved snapshot never saw (as after a kill -9 before the next save), by an
    // instance without a graph: another process, say.
    exact
        .upsert("ns", (1_500..1_800).map(record).collect())
        .await
        .unwrap();
    exact
        .delete(
            "ns",
            &(0..100).map(|i| format!("v{i:05}")).collect::<Vec<_>>(),
        )
        .await
        .unwrap();

    let restarted = SqliteVectorIndex::new(db.clone()).with_approximate(eager());
    for (q, filter) in [
        (vector(1_700), VectorFilter::default()),
        (vector(3), VectorFilter::default()),
        (
            vector(42),
            VectorFilter {
                session: Some("s3".into()),
                ..VectorFilter::default()
            },
        ),
    ] {
        let found = search(&restarted, &q, filter.clone()).await;
        let truth = search(&exact, &q, filter.clone()).await;
        let overlap = found.iter().filter(|id| truth.contains(id)).count();
        assert!(overlap >= 9, "{overlap} of 10: {found:?} against {truth:?}");
        assert!(
            found.iter().all(|id| id.as_str() >= "v00100"),
            "erased rows stay gone"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_snapshot_is_ignored_and_the_graph_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path()).await;
    let index = SqliteVectorIndex::new(db.clone()).with_approximate(eager());
    index
        .upsert("ns", (0..300).map(record).collect())
        .await
        .unwrap();
    search(&index, &vector(1), VectorFilter::default()).await;
    for file in snapshot_files(dir.path()) {
        let bytes = std::fs::read(&file).unwrap();
        std::fs::write(&file, &bytes[..bytes.len() / 3]).unwrap();
    }
    let reopened = SqliteVectorIndex::new(db).with_approximate(eager());
    let found = search(&reopened, &vector(7), VectorFilter::default()).await;
    assert_eq!(found.first().map(String::as_str), Some("v00007"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_exhaustive_search_is_the_exact_top_ten_of_every_row() {
    let dir = tempfile::tempdir().unwrap();
    // No graph (none is built in the background either); more rows than the int8 pre-scan
    // starts at, so the configured search takes that shortcut.
    let index = SqliteVectorIndex::new(open(dir.path()).await).with_approximate(None);
    let records: Vec<VectorRecord> = (0..5_000).map(record).collect();
    index.upsert("ns", records.clone()).await.unwrap();
    let cosine = |a: &[f32], b: &[f32]| {
        let dot: f64 = a
            .iter()
            .zip(b)
            .map(|(x, y)| f64::from(*x) * f64::from(*y))
            .sum();
        let norm = |v: &[f32]| v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
        dot / (norm(a) * norm(b))
    };
    for q in [7, 2_500, 4_999] {
        let query = vector(q + 10_000);
        let mut truth: Vec<(f64, &str)> = records
            .iter()
            .map(|r| (cosine(&query, &r.vector), r.id.as_str()))
            .collect();
        truth.sort_by(|a, b| b.0.total_cmp(&a.0));
        let hits = index
            .search_exhaustive("ns", &VectorQuery::new(&query, 10))
            .await
            .unwrap();
        // The exact top ten by score (rows within float rounding of each other may swap).
        assert_eq!(hits.len(), 10);
        for (hit, (score, _)) in hits.iter().zip(&truth) {
            assert!(
                (f64::from(hit.score) - score).abs() < 1e-5,
                "{} scored {}, the exact rank's score is {score}",
                hit.id,
                hit.score
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_vector_leaves_no_trace_in_the_snapshots() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path()).await;
    let index = SqliteVectorIndex::new(db.clone()).with_approximate(eager());
    index
        .upsert("ns", (0..400).map(record).collect())
        .await
        .unwrap();
    search(&index, &vector(1), VectorFilter::default()).await;
    let secret = record(123);
    assert!(
        snapshots_hold(dir.path(), &secret.vector),
        "the snapshot holds the vector's codes"
    );
    assert!(snapshots_contain(dir.path(), secret.id.as_bytes()));

    index
        .delete("ns", std::slice::from_ref(&secret.id))
        .await
        .unwrap();
    assert!(
        !snapshots_hold(dir.path(), &secret.vector),
        "the int8 codes are gone"
    );
    // The graph still has the removed node in memory: the next save scrubs it out first.
    // (A save comes after a quarter of the namespace changed.)
    index
        .upsert("ns", (1_000..1_150).map(record).collect())
        .await
        .unwrap();
    db.close().await;
    let reopened = SqliteVectorIndex::new(open(dir.path()).await).with_approximate(eager());
    assert!(!snapshot_files(dir.path()).is_empty());
    assert!(
        !snapshots_hold(dir.path(), &secret.vector),
        "no later snapshot brings them back"
    );
    assert!(
        !snapshots_contain(dir.path(), secret.id.as_bytes()),
        "nor the id"
    );
    let found = search(&reopened, &secret.vector, VectorFilter::default()).await;
    assert!(!found.contains(&secret.id));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clearing_a_namespace_or_deleting_a_profile_removes_its_snapshots() {
    let dir = tempfile::tempdir().unwrap();
    let index = SqliteVectorIndex::new(open(dir.path()).await).with_approximate(eager());
    index
        .upsert("ns", (0..50).map(record).collect())
        .await
        .unwrap();
    search(&index, &vector(1), VectorFilter::default()).await;
    assert!(!snapshot_files(dir.path()).is_empty());
    index.clear("ns").await.unwrap();
    assert!(snapshot_files(dir.path()).is_empty());

    use memory_core::ports::{MemoryProfiles, VectorIndexes};
    let profiles =
        memory_sqlite::SqliteProfiles::new(dir.path().join("profiles")).approximate(eager());
    let vectors = profiles.vector_index("p").await.unwrap();
    vectors
        .upsert("ns", (0..30).map(record).collect())
        .await
        .unwrap();
    vectors.upsert("ns", vec![record(31)]).await.unwrap();
    assert!(dir.path().join("profiles/p.db.vectors").exists());
    profiles.delete("p").await.unwrap();
    assert!(!dir.path().join("profiles/p.db.vectors").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prepare_waits_for_a_graph_built_in_the_background() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path()).await;
    let settings = ApproximateSearch {
        from_rows: 2_500,
        ..ApproximateSearch::default()
    };
    let writer = SqliteVectorIndex::new(db.clone()).with_approximate(None);
    writer
        .upsert("ns", (0..3_000).map(record).collect())
        .await
        .unwrap();
    let index = SqliteVectorIndex::new(db).with_approximate(Some(settings));
    // More is missing than a caller's catch-up takes: the graph is built in the background.
    index.prepare("ns").await.unwrap();
    assert!(
        !snapshot_files(dir.path()).is_empty(),
        "a new graph is saved at once"
    );
    let found = search(&index, &vector(2_999), VectorFilter::default()).await;
    assert_eq!(found.first().map(String::as_str), Some("v02999"));
    index.prepare("missing").await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_id_repeated_in_one_upsert_is_searched_by_its_last_vector() {
    let dir = tempfile::tempdir().unwrap();
    let index = SqliteVectorIndex::new(open(dir.path()).await).with_approximate(eager());
    index
        .upsert("ns", (0..300).map(record).collect())
        .await
        .unwrap();
    search(&index, &vector(1), VectorFilter::default()).await;
    let mut first = record(5);
    first.vector = vector(1_001);
    let mut last = record(5);
    last.vector = vector(2_002);
    index.upsert("ns", vec![first, last]).await.unwrap();
    let found = search(&index, &vector(2_002), VectorFilter::default()).await;
    assert_eq!(found.first().map(String::as_str), Some("v00005"));
    let old = search(&index, &vector(1_001), VectorFilter::default()).await;
    assert_ne!(old.first().map(String::as_str), Some("v00005"));
}

/// Sixteen writers at once, with searches between their writes: each write reaches the cache
/// in commit order, so the namespace is not loaded from the file again (it was reloaded whole
/// whenever one writer's change was applied before an earlier commit's, and concurrent
/// remembers made every recall do so).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writes_of_one_instance_never_reload_the_namespace() {
    let dir = tempfile::tempdir().unwrap();
    let index = SqliteVectorIndex::new(open(dir.path()).await).with_approximate(eager());
    index
        .upsert("ns", (0..500).map(record).collect())
        .await
        .unwrap();
    // The write that made the namespace is not applied to the empty cache: one more load.
    search(&index, &vector(0), VectorFilter::default()).await;
    let loaded = index.namespace_loads();
    assert_eq!(loaded, 2);
    let writers: Vec<_> = (0..16)
        .map(|w| {
            let index = index.clone();
            tokio::spawn(async move {
                for i in 0..25 {
                    let n = 1_000 + w * 100 + i;
                    index.upsert("ns", vec![record(n)]).await.unwrap();
                    let found = search(&index, &vector(n), VectorFilter::default()).await;
                    assert!(found.contains(&record(n).id), "{n}: {found:?}");
                }
            })
        })
        .collect();
    for writer in writers {
        writer.await.unwrap();
    }
    assert_eq!(
        index.namespace_loads(),
        loaded,
        "reloaded by its own writes"
    );
    // Another instance's write is noticed and loaded.
    let other = SqliteVectorIndex::new(open(dir.path()).await);
    other.upsert("ns", vec![record(9_999)]).await.unwrap();
    let found = search(&index, &vector(9_999), VectorFilter::default()).await;
    assert!(found.contains(&record(9_999).id));
    assert_eq!(index.namespace_loads(), loaded + 1);
}

/// A delete moves the last row of the namespace's in-memory matrix into the deleted one's
/// place, and the graph, kept as it was, follows: every vector left is still found by its own
/// vector through the graph, after deletes and changed vectors.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_deletes_and_changes_each_vector_is_found_by_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let index = SqliteVectorIndex::new(open(dir.path()).await).with_approximate(eager());
    index
        .upsert("ns", (0..600).map(record).collect())
        .await
        .unwrap();
    index.prepare("ns").await.unwrap();
    let gone: Vec<String> = (0..600).step_by(4).map(|i| record(i).id).collect();
    assert_eq!(index.delete("ns", &gone).await.unwrap(), 150);
    let changed: Vec<VectorRecord> = (1..600)
        .step_by(9)
        .filter(|i| i % 4 != 0)
        .map(|i| VectorRecord {
            vector: vector(10_000 + i),
            ..record(i)
        })
        .collect();
    index.upsert("ns", changed).await.unwrap();
    assert_eq!(
        index.graph_len("ns").await.unwrap(),
        Some(450),
        "the graph took the writes in place"
    );
    for i in (0..600).filter(|i| i % 4 != 0) {
        let own = if i % 9 == 1 {
            vector(10_000 + i)
        } else {
            vector(i)
        };
        let found = search(&index, &own, VectorFilter::default()).await;
        assert_eq!(found.first(), Some(&record(i).id), "row {i}");
    }
}
