//! Search over 1,000,000 messages in 1,000 sessions on Tantivy, beside SQLite FTS5 (the
//! embedded default: the message store's own index) on the same corpus in the same run:
//! p50/p99 for typical and common words, session-scoped and global; build throughput and
//! size on disk; deleting one session.
//!
//! `cargo bench -p memory-tantivy --bench search_latency` (`SEARCH_BENCH_MESSAGES` changes
//! the size; `SEARCH_BENCH_DIR` keeps both corpora between runs).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use memory_core::ports::{
    MessageStore, TextDocument, TextFields, TextIndex, message_document_id, namespaces,
};
use memory_core::{NewMessage, SearchQuery, SessionId, search_messages};
use memory_sqlite::{SqliteConfig, SqliteDatabase, SqliteMessageIndex, SqliteMessageStore};
use memory_tantivy::{Erasure, TantivyOptions, TantivyTextIndex};
use memory_testkit::corpus::{Rng, message, vocabulary};
use memory_testkit::files::size_on_disk;

const SESSIONS: usize = 1_000;
const QUERIES: usize = 300;
const LIMIT: usize = 20;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn report(name: &str, mut samples: Vec<Duration>) -> (f64, f64) {
    samples.sort();
    let (p50, p99) = (
        percentile(&samples, 0.50).as_secs_f64() * 1e3,
        percentile(&samples, 0.99).as_secs_f64() * 1e3,
    );
    println!(
        "{name:<44} p50 {p50:>8.3} ms   p99 {p99:>8.3} ms   ({} queries)",
        samples.len()
    );
    (p50, p99)
}

fn session(s: usize) -> SessionId {
    SessionId::new(format!("session-{s:04}")).unwrap()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let total: usize = std::env::var("SEARCH_BENCH_MESSAGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let temp = tempfile::tempdir().unwrap();
    let root = std::env::var("SEARCH_BENCH_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| temp.path().to_owned());
    std::fs::create_dir_all(&root).unwrap();
    let db_path = root.join("fts5.db");
    let tantivy_path = root.join("tantivy");
    let fresh = !tantivy_path.exists();

    let db = SqliteDatabase::open(SqliteConfig::new(&db_path))
        .await
        .unwrap();
    let store = SqliteMessageStore::new(db.clone());
    let fts5 = SqliteMessageIndex::new(db);
    let tantivy = TantivyTextIndex::open_with(
        &tantivy_path,
        TantivyOptions::default().erasure(Erasure::InBackground),
    )
    .unwrap();
    let vocab = vocabulary(20_000);
    let per_session = total / SESSIONS;

    if fresh {
        // The same messages into both, a session (1,000 messages) per batch.
        let (mut sqlite_time, mut tantivy_time) = (Duration::ZERO, Duration::ZERO);
        let mut rng = Rng::new(42);
        for s in 0..SESSIONS {
            let id = session(s);
            let messages: Vec<_> = (0..per_session)
                .map(|i| message(format!("m{i}"), &mut rng, &vocab))
                .collect();
            let documents: Vec<TextDocument> = messages
                .iter()
                .map(|m| {
                    TextDocument::new(message_document_id(id.as_str(), &m.id), m.text())
                        .with_fields(TextFields {
                            session: Some(id.as_str().to_owned()),
                            role: Some(m.role.as_str().to_owned()),
                            ..TextFields::default()
                        })
                })
                .collect();
            let t = Instant::now();
            store
                .append(&id, messages.into_iter().map(NewMessage::new).collect())
                .await
                .unwrap();
            sqlite_time += t.elapsed();
            let t = Instant::now();
            tantivy
                .upsert(namespaces::MESSAGES, documents)
                .await
                .unwrap();
            tantivy_time += t.elapsed();
        }
        println!(
            "build, {total} messages in batches of {per_session}: SQLite store + FTS5 {:.1} s \
             ({:.0} msg/s); Tantivy index {:.1} s ({:.0} msg/s, {} commits)",
            sqlite_time.as_secs_f64(),
            total as f64 / sqlite_time.as_secs_f64(),
            tantivy_time.as_secs_f64(),
            total as f64 / tantivy_time.as_secs_f64(),
            tantivy.commits()
        );
    }
    // Let background merges settle before measuring.
    tokio::time::sleep(Duration::from_secs(5)).await;
    println!(
        "size: SQLite file (rows + FTS5) {:.0} MB; Tantivy index {:.0} MB",
        (size_on_disk(&db_path) + size_on_disk(&root.join("fts5.db-wal"))) as f64 / 1e6,
        size_on_disk(&tantivy_path) as f64 / 1e6
    );

    // Typical words each occur in well under 1 % of messages; common words in 2-10 %.
    let mut rng = Rng::new(99);
    let mut make = |low: usize, high: usize| -> Vec<(String, SessionId)> {
        (0..QUERIES)
            .map(|_| {
                let words = 1 + (rng.next_u64() % 2) as usize;
                let text = (0..words)
                    .map(|_| vocab[low + (rng.next_u64() as usize % (high - low))].clone())
                    .collect::<Vec<_>>()
                    .join(" ");
                (text, session(rng.next_u64() as usize % SESSIONS))
            })
            .collect()
    };
    let classes = [("typical", make(500, 20_000)), ("common", make(20, 200))];
    let indexes: [(&str, &dyn TextIndex); 2] = [("sqlite-fts5", &fts5), ("tantivy", &tantivy)];
    for (_, queries) in &classes {
        for (_, index) in indexes {
            for (text, _) in queries.iter().take(30) {
                search_messages(index, &SearchQuery::new(text).limit(LIMIT))
                    .await
                    .unwrap();
            }
        }
    }
    println!(
        "search over {total} messages in {SESSIONS} sessions, limit {LIMIT}, {QUERIES} queries per class"
    );
    for (class, queries) in &classes {
        for scoped in [true, false] {
            let mut hits = [0usize; 2];
            let mut samples = [Vec::new(), Vec::new()];
            for (text, session) in queries {
                for (i, (_, index)) in indexes.iter().enumerate() {
                    let mut q = SearchQuery::new(text).limit(LIMIT);
                    if scoped {
                        q = q.in_session(session.clone());
                    }
                    let t = Instant::now();
                    hits[i] += search_messages(*index, &q).await.unwrap().len();
                    samples[i].push(t.elapsed());
                }
            }
            assert_eq!(hits[0], hits[1], "{class}: both find as many hits");
            let scope = if scoped { "session" } else { "global" };
            let [fts, tan] = samples;
            let (f50, f99) = report(&format!("{class} {scope}: sqlite-fts5"), fts);
            let (t50, t99) = report(&format!("{class} {scope}: tantivy"), tan);
            println!(
                "{class} {scope}: tantivy/fts5 p50 {:.2}x p99 {:.2}x; mean hits {:.1}",
                t50 / f50,
                t99 / f99,
                hits[1] as f64 / QUERIES as f64
            );
        }
    }

    // Deleting one session's documents (the general index erases in the background).
    let victim = session(7);
    let ids: Vec<String> = (0..per_session)
        .map(|i| message_document_id(victim.as_str(), &format!("m{i}")))
        .collect();
    let t = Instant::now();
    let deleted = tantivy.delete(namespaces::MESSAGES, &ids).await.unwrap();
    println!(
        "delete one session ({deleted} documents) from Tantivy: {:.1} ms (erasure in the background)",
        t.elapsed().as_secs_f64() * 1e3
    );
    // The same session leaves the SQLite corpus, so a second run (SEARCH_BENCH_DIR) compares
    // equal corpora.
    let message_ids: Vec<String> = (0..per_session).map(|i| format!("m{i}")).collect();
    store.delete(&victim, &message_ids).await.unwrap();
}
