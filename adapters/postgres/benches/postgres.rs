//! The PostgreSQL adapter beside the SQLite adapter (same data, same run) and beside raw SQL
//! on PostgreSQL doing the same work (the floor). Needs a server:
//!
//! ```sh
//! MEMORY_POSTGRES_URL=$(./scripts/setup-postgres.sh) cargo bench -p memory-postgres --bench postgres
//! ```
//!
//! `BENCH_SEARCH_MESSAGES` (default 1,000,000) sizes the search corpus and `BENCH_VECTORS`
//! (default 100,000) the vector set; `BENCH_PARTS` picks parts (`appends,history,vectors,search`). Everything runs in a schema of its own, dropped at the
//! end; results are printed as Markdown rows for `docs/benchmarks.md`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashSet;
use std::str::FromStr;
use std::time::{Duration, Instant};

use memory_core::ports::{
    MessageStore, TextIndex, TextQuery, VectorIndex, VectorRecord, namespaces,
};
use memory_core::{NewMessage, Role, SessionId, UiMessage};
use memory_postgres::{
    PostgresConfig, PostgresDatabase, PostgresMessageIndex, PostgresMessageStore,
    PostgresVectorIndex,
};
use memory_sqlite::{
    SqliteConfig, SqliteDatabase, SqliteMessageIndex, SqliteMessageStore, SqliteVectorIndex,
};
use memory_testkit::corpus::{Rng as TestRng, embedding_like_vectors};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};

/// A tiny deterministic PRNG (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545F4914F6CDD1D)
    }
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Zipf-like pick in `0..n`: small indexes are much more frequent.
    fn zipf(&mut self, n: usize) -> usize {
        ((n as f64).powf(self.unit()) - 1.0) as usize % n
    }
}

fn vocabulary(n: usize) -> Vec<String> {
    let syllables = [
        "ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "pe", "da", "gu", "zo", "ri", "be", "fa",
        "ho",
    ];
    (0..n)
        .map(|i| {
            let mut w = String::new();
            let mut x = i + 17;
            for _ in 0..3 {
                w.push_str(syllables[x % syllables.len()]);
                x /= syllables.len();
            }
            w.push_str(&format!("x{}", i % 7));
            w
        })
        .collect()
}

fn message(id: String, rng: &mut Rng, vocab: &[String]) -> UiMessage {
    let role = if rng.next_u64().is_multiple_of(2) {
        Role::User
    } else {
        Role::Assistant
    };
    let words = 12 + (rng.next_u64() % 24) as usize;
    let text: Vec<&str> = (0..words)
        .map(|_| vocab[rng.zipf(vocab.len())].as_str())
        .collect();
    UiMessage::text_message(id, role, text.join(" "))
}

fn batch(prefix: &str, n: usize, rng: &mut Rng, vocab: &[String]) -> Vec<NewMessage> {
    (0..n)
        .map(|i| NewMessage::new(message(format!("{prefix}{i}"), rng, vocab)))
        .collect()
}

fn percentile(samples: &mut [f64], p: f64) -> f64 {
    samples.sort_by(|a, b| a.total_cmp(b));
    let index = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples[index.min(samples.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1_000.0
}

struct Bench {
    pg: PostgresMessageStore,
    pg_index: PostgresMessageIndex,
    pg_vectors: PostgresVectorIndex,
    raw: PgPool,
    sqlite: SqliteMessageStore,
    sqlite_index: SqliteMessageIndex,
    sqlite_vectors: SqliteVectorIndex,
}

/// Raw floor of a batch append: one transaction, a session row, then every row in one
/// `INSERT … SELECT FROM UNNEST` (the tsvector and indexes maintained as in the adapter), with
/// no lock, no existence checks and no parent or run resolution.
async fn raw_batch(raw: &PgPool, session: &str, messages: &[NewMessage]) {
    let mut tx = raw.begin().await.unwrap();
    let key: i64 =
        sqlx::query_scalar("INSERT INTO message_sessions (session_id) VALUES ($1) RETURNING key")
            .bind(session)
            .fetch_one(&mut *tx)
            .await
            .unwrap();
    let n = messages.len() as i64;
    let seqs: Vec<i64> = (1..=n).collect();
    let parents: Vec<Option<i64>> = (1..=n).map(|s| (s > 1).then_some(s - 1)).collect();
    let ids: Vec<String> = messages.iter().map(|m| m.message.id.clone()).collect();
    let roles: Vec<&str> = messages.iter().map(|m| m.message.role.as_str()).collect();
    let contents: Vec<String> = messages
        .iter()
        .map(|m| serde_json::to_string(&m.message).unwrap())
        .collect();
    let texts: Vec<String> = messages.iter().map(|m| m.message.text()).collect();
    let bytes: Vec<i64> = contents.iter().map(|c| c.len() as i64).collect();
    sqlx::query(
        "INSERT INTO messages (session_key, seq, id, parent_seq, run_id, role, content, search_text, bytes) \
         SELECT $1, s, i, p, 1, r, c, t, b FROM UNNEST($2::bigint[], $3::text[], $4::bigint[], \
           $5::text[], $6::text[], $7::text[], $8::bigint[]) AS u(s, i, p, r, c, t, b)",
    )
    .bind(key)
    .bind(&seqs)
    .bind(&ids)
    .bind(&parents)
    .bind(&roles)
    .bind(&contents)
    .bind(&texts)
    .bind(&bytes)
    .execute(&mut *tx)
    .await
    .unwrap();
    tx.commit().await.unwrap();
}

async fn appends(b: &Bench) {
    let vocab = vocabulary(5_000);
    let mut rng = Rng(7);
    let rounds = 10;
    let (mut pg, mut sqlite, mut raw) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        let items = batch("m", 1_000, &mut rng, &vocab);
        let session = SessionId::new(format!("batch-{round}")).unwrap();
        let t = Instant::now();
        b.pg.append(&session, items.clone()).await.unwrap();
        pg.push(1_000.0 / t.elapsed().as_secs_f64());
        let t = Instant::now();
        b.sqlite.append(&session, items.clone()).await.unwrap();
        sqlite.push(1_000.0 / t.elapsed().as_secs_f64());
        let t = Instant::now();
        raw_batch(&b.raw, &format!("raw-batch-{round}"), &items).await;
        raw.push(1_000.0 / t.elapsed().as_secs_f64());
    }
    let (pg, sqlite, raw) = (
        percentile(&mut pg, 0.5),
        percentile(&mut sqlite, 0.5),
        percentile(&mut raw, 0.5),
    );
    println!(
        "| batch of 1,000 (one transaction, indexed) | {:.1} K msg/s | {:.1} K msg/s | {:.1} K msg/s | {:.2} | {:.2} |",
        pg / 1e3,
        sqlite / 1e3,
        raw / 1e3,
        pg / raw,
        pg / sqlite
    );

    // Single appends to one session: the adapter's transaction vs one autocommit INSERT.
    let n = 500;
    let session = SessionId::new("single").unwrap();
    let items = batch("s", n, &mut rng, &vocab);
    let t = Instant::now();
    for item in &items {
        b.pg.append(&session, vec![item.clone()]).await.unwrap();
    }
    let pg = n as f64 / t.elapsed().as_secs_f64();
    let t = Instant::now();
    for item in &items {
        b.sqlite.append(&session, vec![item.clone()]).await.unwrap();
    }
    let sqlite = n as f64 / t.elapsed().as_secs_f64();
    let key: i64 = sqlx::query_scalar(
        "INSERT INTO message_sessions (session_id) VALUES ('raw-single') RETURNING key",
    )
    .fetch_one(&b.raw)
    .await
    .unwrap();
    let t = Instant::now();
    for (i, item) in items.iter().enumerate() {
        let json = serde_json::to_string(&item.message).unwrap();
        let seq = i as i64 + 1;
        sqlx::query(
            "INSERT INTO messages (session_key, seq, id, parent_seq, run_id, role, content, search_text, bytes) \
             VALUES ($1, $2, $3, $4, 1, $5, $6, $7, $8)",
        )
        .bind(key)
        .bind(seq)
        .bind(&item.message.id)
        .bind((seq > 1).then_some(seq - 1))
        .bind(item.message.role.as_str())
        .bind(&json)
        .bind(item.message.text())
        .bind(json.len() as i64)
        .execute(&b.raw)
        .await
        .unwrap();
    }
    let raw = n as f64 / t.elapsed().as_secs_f64();
    println!(
        "| single append | {:.2} K/s ({:.0} µs) | {:.2} K/s ({:.0} µs) | {:.2} K/s ({:.0} µs) | {:.2} | {:.2} |",
        pg / 1e3,
        1e6 / pg,
        sqlite / 1e3,
        1e6 / sqlite,
        raw / 1e3,
        1e6 / raw,
        pg / raw,
        pg / sqlite
    );
}

async fn histories(b: &Bench) {
    let vocab = vocabulary(5_000);
    let mut rng = Rng(11);
    for length in [10_000usize, 100_000] {
        let session = SessionId::new(format!("long-{length}")).unwrap();
        for start in (0..length).step_by(1_000) {
            let items = batch(&format!("h{start}-"), 1_000, &mut rng, &vocab);
            b.pg.append(&session, items.clone()).await.unwrap();
            b.sqlite.append(&session, items).await.unwrap();
        }
        let key: i64 = sqlx::query_scalar("SELECT key FROM message_sessions WHERE session_id = $1")
            .bind(session.as_str())
            .fetch_one(&b.raw)
            .await
            .unwrap();
        let reps = if length > 10_000 { 5 } else { 10 };
        let (mut pg, mut sqlite, mut raw, mut raw_decoded) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for _ in 0..reps {
            let t = Instant::now();
            assert_eq!(b.pg.history(&session, None).await.unwrap().len(), length);
            pg.push(ms(t.elapsed()));
            let t = Instant::now();
            assert_eq!(
                b.sqlite.history(&session, None).await.unwrap().len(),
                length
            );
            sqlite.push(ms(t.elapsed()));
            let t = Instant::now();
            let rows: Vec<String> = sqlx::query_scalar(
                "SELECT content FROM messages WHERE session_key = $1 ORDER BY seq",
            )
            .bind(key)
            .fetch_all(&b.raw)
            .await
            .unwrap();
            raw.push(ms(t.elapsed()));
            let decoded: Vec<UiMessage> = rows
                .iter()
                .map(|r| serde_json::from_str(r).unwrap())
                .collect();
            assert_eq!(decoded.len(), length);
            raw_decoded.push(ms(t.elapsed()));
        }
        let (pg, sqlite, raw, decoded) = (
            percentile(&mut pg, 0.5),
            percentile(&mut sqlite, 0.5),
            percentile(&mut raw, 0.5),
            percentile(&mut raw_decoded, 0.5),
        );
        println!(
            "| history of a {length}-message branch | {pg:.1} ms | {sqlite:.1} ms | {raw:.1} ms ({decoded:.1} ms decoded) | {:.2} ({:.2}) | {:.2} |",
            pg / raw,
            pg / decoded,
            pg / sqlite
        );
    }
}

async fn search(b: &Bench, total: usize) {
    let vocab = vocabulary(20_000);
    let mut rng = Rng(3);
    let sessions = 1_000;
    let per_session = total / sessions;
    let t = Instant::now();
    for s in 0..sessions {
        let session = SessionId::new(format!("corpus-{s}")).unwrap();
        for start in (0..per_session).step_by(1_000) {
            let n = 1_000.min(per_session - start);
            let items = batch(&format!("c{start}-"), n, &mut rng, &vocab);
            b.pg.append(&session, items).await.unwrap();
        }
    }
    let pg_build = t.elapsed();
    let mut rng = Rng(3);
    let t = Instant::now();
    for s in 0..sessions {
        let session = SessionId::new(format!("corpus-{s}")).unwrap();
        for start in (0..per_session).step_by(1_000) {
            let n = 1_000.min(per_session - start);
            let items = batch(&format!("c{start}-"), n, &mut rng, &vocab);
            b.sqlite.append(&session, items).await.unwrap();
        }
    }
    let sqlite_build = t.elapsed();
    sqlx::query("ANALYZE messages")
        .execute(&b.raw)
        .await
        .unwrap();
    println!(
        "\ncorpus: {} messages in {sessions} sessions; build {:.0} s on postgres ({:.1} K msg/s), {:.0} s on sqlite ({:.1} K msg/s)\n",
        per_session * sessions,
        pg_build.as_secs_f64(),
        (per_session * sessions) as f64 / pg_build.as_secs_f64() / 1e3,
        sqlite_build.as_secs_f64(),
        (per_session * sessions) as f64 / sqlite_build.as_secs_f64() / 1e3,
    );
    println!(
        "| class | scope | memory-postgres p50 / p99 | memory-sqlite p50 / p99 | raw SQL (postgres) p50 / p99 | ratio to raw (p50) |"
    );
    println!("|---|---|---|---|---|---|");
    // Typical words are ranked a few thousand deep in the Zipf vocabulary; common words
    // are in its head (each in several percent of messages).
    let mut rng = Rng(99);
    for (class, ranks) in [("typical", 1_000..6_000usize), ("common", 2..12usize)] {
        for scope in ["session", "global"] {
            let (mut pg, mut sqlite, mut raw) = (Vec::new(), Vec::new(), Vec::new());
            // Common words over the whole corpus rank hundreds of thousands of matches per
            // query (seconds each): fewer queries there keep the run bounded.
            let count = if class == "common" && scope == "global" {
                30
            } else {
                200
            };
            for _ in 0..count {
                let words = 1 + (rng.next_u64() % 2) as usize;
                let text: Vec<&str> = (0..words)
                    .map(|_| {
                        let span = (ranks.end - ranks.start) as u64;
                        vocab[ranks.start + (rng.next_u64() % span) as usize].as_str()
                    })
                    .collect();
                let text = text.join(" ");
                let session = format!("corpus-{}", rng.next_u64() % sessions as u64);
                let mut query = TextQuery::new(&text, 20);
                if scope == "session" {
                    query.filter.session = Some(session.clone());
                }
                let t = Instant::now();
                b.pg_index
                    .search(namespaces::MESSAGES, &query)
                    .await
                    .unwrap();
                pg.push(ms(t.elapsed()));
                let t = Instant::now();
                b.sqlite_index
                    .search(namespaces::MESSAGES, &query)
                    .await
                    .unwrap();
                sqlite.push(ms(t.elapsed()));
                // Raw: the same tsquery and rank, the session resolved in the statement.
                let expression = (0..words)
                    .map(|i| format!("phraseto_tsquery('english', ${})", i + 2))
                    .collect::<Vec<_>>()
                    .join(" && ");
                let sql = format!(
                    "SELECT m.id FROM messages m, (SELECT {expression} AS q) q \
                     WHERE m.tsv @@ q.q AND ($1::text IS NULL OR m.session_key = \
                       (SELECT key FROM message_sessions WHERE session_id = $1)) \
                     ORDER BY ts_rank_cd(m.tsv, q.q) DESC LIMIT 20"
                );
                let mut statement = sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind((scope == "session").then_some(session.as_str()));
                for word in text.split(' ') {
                    statement = statement.bind(word.to_owned());
                }
                let t = Instant::now();
                statement.fetch_all(&b.raw).await.unwrap();
                raw.push(ms(t.elapsed()));
            }
            let (pg50, pg99) = (percentile(&mut pg, 0.5), percentile(&mut pg, 0.99));
            let (sq50, sq99) = (percentile(&mut sqlite, 0.5), percentile(&mut sqlite, 0.99));
            let (raw50, raw99) = (percentile(&mut raw, 0.5), percentile(&mut raw, 0.99));
            println!(
                "| {class} | {scope} | {pg50:.2} / {pg99:.1} ms | {sq50:.2} / {sq99:.1} ms | {raw50:.2} / {raw99:.1} ms | {:.2} |",
                pg50 / raw50
            );
        }
    }
}

async fn vectors(b: &Bench, n: usize) {
    let dims = 384;
    let data = embedding_like_vectors(n, dims, &mut TestRng::new(5));
    let records: Vec<VectorRecord> = data
        .iter()
        .enumerate()
        .map(|(i, v)| VectorRecord {
            id: format!("v{i}"),
            vector: v.clone(),
            model: "bench".into(),
            fields: Default::default(),
        })
        .collect();
    let t = Instant::now();
    for chunk in records.chunks(1_000) {
        b.pg_vectors.upsert("bench", chunk.to_vec()).await.unwrap();
    }
    let pg_build = t.elapsed();
    let t = Instant::now();
    for chunk in records.chunks(1_000) {
        b.sqlite_vectors
            .upsert("bench", chunk.to_vec())
            .await
            .unwrap();
    }
    let sqlite_build = t.elapsed();
    let size: i64 = sqlx::query_scalar("SELECT pg_total_relation_size('vectors')")
        .fetch_one(&b.raw)
        .await
        .unwrap();
    let queries = embedding_like_vectors(200, dims, &mut TestRng::new(77));
    // Warm both (SQLite loads its matrix on first use).
    b.pg_vectors.query("bench", &queries[0], 10).await.unwrap();
    b.sqlite_vectors
        .query("bench", &queries[0], 10)
        .await
        .unwrap();
    let key: i64 =
        sqlx::query_scalar("SELECT key FROM vector_namespaces WHERE namespace = 'bench'")
            .fetch_one(&b.raw)
            .await
            .unwrap();
    let (mut pg, mut sqlite, mut exact) = (Vec::new(), Vec::new(), Vec::new());
    let mut truths = Vec::with_capacity(queries.len());
    let mut found = 0usize;
    for q in &queries {
        let t = Instant::now();
        let hits = b.pg_vectors.query("bench", q, 10).await.unwrap();
        pg.push(ms(t.elapsed()));
        let t = Instant::now();
        b.sqlite_vectors.query("bench", q, 10).await.unwrap();
        sqlite.push(ms(t.elapsed()));
        // Exact search on Postgres: the same ordering with index scans off.
        let (truth, elapsed) = exact_ids(&b.raw, key, dims, q).await;
        exact.push(elapsed);
        found += hits.iter().filter(|h| truth.contains(&h.id)).count();
        truths.push(truth);
    }
    let recall = found as f64 / (10 * queries.len()) as f64;
    // The ef_search trade-off, through the same index with raw SQL.
    let mut sweep = Vec::new();
    for ef in [40, 100, 200, 400] {
        let (mut times, mut hit) = (Vec::new(), 0usize);
        for (q, truth) in queries.iter().zip(&truths) {
            let mut tx = b.raw.begin().await.unwrap();
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "SET LOCAL hnsw.ef_search = {ef}"
            )))
            .execute(&mut *tx)
            .await
            .unwrap();
            let sql = format!(
                "SELECT /* hnsw */ id FROM vectors WHERE namespace_key = {key} \
                 ORDER BY embedding::vector({dims}) <=> (SELECT $1::real[]::vector({dims})) LIMIT 10"
            );
            let t = Instant::now();
            let ids: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
                .bind(q)
                .fetch_all(&mut *tx)
                .await
                .unwrap();
            times.push(ms(t.elapsed()));
            tx.commit().await.unwrap();
            hit += ids.iter().filter(|id| truth.contains(*id)).count();
        }
        sweep.push((
            ef,
            percentile(&mut times, 0.5),
            percentile(&mut times, 0.95),
            hit as f64 / (10 * queries.len()) as f64,
        ));
    }
    println!(
        "\nvectors: {n} × {dims}; insert with HNSW maintained {:.1} s ({:.0} vectors/s), SQLite {:.1} s; postgres table + index {:.0} MB\n",
        pg_build.as_secs_f64(),
        n as f64 / pg_build.as_secs_f64(),
        sqlite_build.as_secs_f64(),
        size as f64 / 1e6
    );
    println!("| search (k = 10) | p50 | p95 | recall@10 vs exact |");
    println!("|---|---|---|---|");
    println!(
        "| memory-postgres (HNSW, ef_search 100) | {:.2} ms | {:.2} ms | {recall:.3} |",
        percentile(&mut pg, 0.5),
        percentile(&mut pg, 0.95)
    );
    println!(
        "| raw exact scan on postgres | {:.2} ms | {:.2} ms | 1 |",
        percentile(&mut exact, 0.5),
        percentile(&mut exact, 0.95)
    );
    println!(
        "| memory-sqlite (exact, int8 prefilter + f32 rescoring) | {:.2} ms | {:.2} ms | exact |",
        percentile(&mut sqlite, 0.5),
        percentile(&mut sqlite, 0.95)
    );
    for (ef, p50, p95, recall) in sweep {
        println!("| raw HNSW, ef_search {ef} | {p50:.2} ms | {p95:.2} ms | {recall:.3} |");
    }
}

/// The exact top 10 on Postgres (index scans off), and the milliseconds the query took.
async fn exact_ids(raw: &PgPool, key: i64, dims: usize, q: &[f32]) -> (HashSet<String>, f64) {
    let mut tx = raw.begin().await.unwrap();
    sqlx::query("SET LOCAL enable_indexscan = off")
        .execute(&mut *tx)
        .await
        .unwrap();
    let sql = format!(
        "SELECT /* exact */ id FROM vectors WHERE namespace_key = {key} \
         ORDER BY embedding::vector({dims}) <=> (SELECT $1::real[]::vector({dims})) LIMIT 10"
    );
    let t = Instant::now();
    let ids: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
        .bind(q)
        .fetch_all(&mut *tx)
        .await
        .unwrap();
    let elapsed = ms(t.elapsed());
    tx.commit().await.unwrap();
    (ids.into_iter().collect(), elapsed)
}

fn main() {
    let Ok(url) = std::env::var("MEMORY_POSTGRES_URL") else {
        eprintln!("set MEMORY_POSTGRES_URL (./scripts/setup-postgres.sh starts a server)");
        return;
    };
    let search_messages: usize = std::env::var("BENCH_SEARCH_MESSAGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let vector_count: usize = std::env::var("BENCH_VECTORS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let schema = format!("bench_{}", std::process::id());
        let db = PostgresDatabase::connect(PostgresConfig::new(&url).schema(&schema))
            .await
            .unwrap();
        let raw = PgPoolOptions::new()
            .max_connections(2)
            .connect_with(
                PgConnectOptions::from_str(&url)
                    .unwrap()
                    .options([("search_path", format!("{schema}, public").as_str())]),
            )
            .await
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let sqlite = SqliteDatabase::open(SqliteConfig::new(dir.path().join("bench.db")))
            .await
            .unwrap();
        let b = Bench {
            pg: PostgresMessageStore::new(db.clone()),
            pg_index: PostgresMessageIndex::new(db.clone()),
            pg_vectors: PostgresVectorIndex::new(db.clone()),
            raw,
            sqlite: SqliteMessageStore::new(sqlite.clone()),
            sqlite_index: SqliteMessageIndex::new(sqlite.clone()),
            sqlite_vectors: SqliteVectorIndex::new(sqlite),
        };
        println!("| case | memory-postgres | memory-sqlite | raw SQL (postgres) | ratio to raw | ratio to sqlite |");
        println!("|---|---|---|---|---|---|");
        let parts = std::env::var("BENCH_PARTS")
            .unwrap_or_else(|_| "appends,history,vectors,search".into());
        if parts.contains("appends") {
            appends(&b).await;
        }
        if parts.contains("history") {
            histories(&b).await;
        }
        if parts.contains("vectors") {
            vectors(&b, vector_count).await;
        }
        if parts.contains("search") {
            search(&b, search_messages).await;
        }
        db.drop_schema().await.unwrap();
    });
}
