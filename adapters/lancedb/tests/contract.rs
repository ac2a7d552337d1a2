//! The shared vector-index contract on LanceDB on local disk; the model check across two
//! connections; the approximate index against exact search; erasure checked on the files.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;

use memory_core::Timestamp;
use memory_core::ports::{
    VectorFields, VectorFilter, VectorIndex, VectorIndexes, VectorQuery, VectorRecord,
};
use memory_lancedb::{LanceOptions, LanceVectorIndex, LanceVectorIndexes};
use memory_testkit::contract;
use memory_testkit::files::files_containing;

async fn open(dir: &Path, options: LanceOptions) -> LanceVectorIndex {
    LanceVectorIndex::connect(dir.to_str().unwrap(), options)
        .await
        .unwrap()
}

#[tokio::test]
async fn lancedb_vector_index_passes_the_contract() {
    let dir = tempfile::tempdir().unwrap();
    let index = open(dir.path(), LanceOptions::default()).await;
    contract::vector_index::run_all(&index).await;
}

/// The contract again with the field indexes built from the first row, so the maintenance
/// that writes start in the background (every few commits) runs beside the contract's
/// writes, deletes and searches.
#[tokio::test]
async fn the_contract_holds_while_maintenance_runs() {
    let dir = tempfile::tempdir().unwrap();
    let index = open(dir.path(), LanceOptions::default().field_index_threshold(1)).await;
    contract::vector_index::run_all(&index).await;
}

#[tokio::test]
async fn profiles_are_isolated_and_deleted_whole() {
    let dir = tempfile::tempdir().unwrap();
    let indexes = LanceVectorIndexes::new(dir.path().to_str().unwrap(), LanceOptions::default());
    contract::vector_index::profile_vectors_are_isolated(&indexes).await;
    assert!(indexes.vector_index("../x").await.is_err());
}

/// Two connections on one database (as two processes would have): of two first writers with
/// different models exactly one wins.
#[tokio::test]
async fn the_model_check_is_atomic_across_connections() {
    let dir = tempfile::tempdir().unwrap();
    let first: Arc<dyn VectorIndex> = Arc::new(open(dir.path(), LanceOptions::default()).await);
    let second: Arc<dyn VectorIndex> = Arc::new(open(dir.path(), LanceOptions::default()).await);
    contract::vector_index::the_model_check_is_atomic(first, second).await;
}

/// A deterministic pseudo-random vector.
fn vector(seed: u64, dims: usize) -> Vec<f32> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..dims)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ((x >> 11) as f64 / (1u64 << 53) as f64) as f32 - 0.5
        })
        .collect()
}

/// A vector near one of 64 centres, as embeddings of related texts cluster.
fn clustered(seed: u64, dims: usize) -> Vec<f32> {
    let centre = vector(seed % 64 + 10_000_000, dims);
    let noise = vector(seed, dims);
    centre
        .iter()
        .zip(&noise)
        .map(|(c, n)| c + 0.35 * n)
        .collect()
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (norm(a) * norm(b))
}

/// The ids of the 10 of `records` nearest to `query` by exact cosine similarity, nearest
/// first.
fn exact_top10<'a>(
    query: &[f32],
    records: impl IntoIterator<Item = &'a VectorRecord>,
) -> Vec<&'a str> {
    let mut scored: Vec<(f32, &str)> = records
        .into_iter()
        .map(|r| (cosine(query, &r.vector), r.id.as_str()))
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    scored.into_iter().take(10).map(|(_, id)| id).collect()
}

/// Searches 20 queries filtered to `filter`'s session among `records`; checks every hit is
/// in the session with its exact score and 10 are found; returns how many of the exact top
/// 10 were found in all.
async fn filtered_overlap(
    index: &LanceVectorIndex,
    records: &[VectorRecord],
    filter: &VectorFilter,
) -> usize {
    let in_session = |r: &&VectorRecord| r.fields.session == filter.session;
    let mut overlap = 0;
    for q in 0..20u64 {
        let query = clustered(2_000_000 + q, records[0].vector.len());
        let exact = exact_top10(&query, records.iter().filter(in_session));
        let hits = index
            .search(
                "memories",
                &VectorQuery::new(&query, 10).filter(filter.clone()),
            )
            .await
            .unwrap();
        assert_eq!(hits.len(), 10);
        for hit in &hits {
            let record = records.iter().find(|r| r.id == hit.id).unwrap();
            assert!(in_session(&record), "{} is not in the session", hit.id);
            assert!((hit.score - cosine(&query, &record.vector)).abs() < 1e-4);
        }
        overlap += hits
            .iter()
            .filter(|h| exact.contains(&h.id.as_str()))
            .count();
    }
    overlap
}

/// Past the threshold the table gets an IVF-PQ index; searches through it find nearly what
/// an exact scan finds, with exact scores (re-ranked), and rows added after training are
/// found too.
#[tokio::test]
async fn the_approximate_index_matches_exact_search_closely() {
    const DIMS: usize = 32;
    const ROWS: u64 = 4_000;
    let dir = tempfile::tempdir().unwrap();
    let index = open(
        dir.path(),
        LanceOptions::default()
            .index_threshold(3_000)
            .field_index_threshold(1_000),
    )
    .await;
    let records: Vec<VectorRecord> = (0..ROWS)
        .map(|i| {
            VectorRecord::new(format!("v{i}"), clustered(i, DIMS), "m").with_fields(VectorFields {
                session: Some(format!("s{}", i % 10)),
                ..VectorFields::default()
            })
        })
        .collect();
    for chunk in records.chunks(1_000) {
        index.upsert("memories", chunk.to_vec()).await.unwrap();
    }
    assert!(
        index.optimize("memories").await.unwrap(),
        "indexed past the threshold"
    );
    let layout = index.layout("memories").await.unwrap().unwrap();
    assert_eq!(
        layout.indexed_columns(),
        ["kind", "session", "time", "vector"],
        "field indexes past their threshold"
    );
    let late = VectorRecord::new("late", vector(999_999, DIMS), "m");
    index.upsert("memories", vec![late.clone()]).await.unwrap();

    let mut overlap = 0;
    for q in 0..20u64 {
        let query = clustered(1_000_000 + q, DIMS);
        let exact = exact_top10(&query, &records);
        let hits = index.query("memories", &query, 10).await.unwrap();
        assert_eq!(hits.len(), 10);
        for hit in &hits {
            if let Some(r) = records.iter().find(|r| r.id == hit.id) {
                let score = cosine(&query, &r.vector);
                assert!(
                    (hit.score - score).abs() < 1e-4,
                    "re-ranked scores are exact"
                );
            }
        }
        overlap += hits
            .iter()
            .filter(|h| exact.contains(&h.id.as_str()))
            .count();
    }
    let recall = overlap as f64 / 200.0;
    assert!(recall >= 0.9, "recall@10 against exact search: {recall}");
    let found = index.query("memories", &late.vector, 1).await.unwrap();
    assert_eq!(
        found[0].id, "late",
        "a row added after training is searched too"
    );

    // Filtered: only the session's rows, and (400 rows match, no more than
    // `exact_filter_limit`) exactly the top 10 of them.
    let filter = VectorFilter {
        session: Some("s3".into()),
        ..VectorFilter::default()
    };
    let overlap = filtered_overlap(&index, &records, &filter).await;
    assert_eq!(
        overlap, 200,
        "a filter matching no more rows than exact_filter_limit is searched exactly"
    );
    assert_eq!(index.count("memories", &filter).await.unwrap(), 400);

    // A filter more rows match than `exact_filter_limit` goes through the index, filtered
    // first: only matching rows, exact scores, nearly the exact top 10.
    let through_index = open(dir.path(), LanceOptions::default().exact_filter_limit(100)).await;
    let recall = filtered_overlap(&through_index, &records, &filter).await as f64 / 200.0;
    assert!(
        recall >= 0.8,
        "filtered recall@10 through the index: {recall}"
    );

    // Twelve rows of a rare session, in twelve clusters, indexed: one probed partition holds
    // fewer than 10 of them, so the search falls back to exact and still returns the top 10.
    let rare: Vec<VectorRecord> = (0..12u64)
        .map(|i| {
            VectorRecord::new(format!("rare{i}"), clustered(5_000 + i, DIMS), "m").with_fields(
                VectorFields {
                    session: Some("rare".into()),
                    ..VectorFields::default()
                },
            )
        })
        .collect();
    index.upsert("memories", rare.clone()).await.unwrap();
    index.optimize("memories").await.unwrap();
    let one_probe = open(
        dir.path(),
        LanceOptions::default().exact_filter_limit(0).nprobes(1),
    )
    .await;
    let rare_filter = VectorFilter {
        session: Some("rare".into()),
        ..VectorFilter::default()
    };
    for q in 0..5u64 {
        let query = clustered(3_000_000 + q, DIMS);
        let exact = exact_top10(&query, &rare);
        let hits = one_probe
            .search(
                "memories",
                &VectorQuery::new(&query, 10).filter(rare_filter.clone()),
            )
            .await
            .unwrap();
        let ids: Vec<&str> = hits.iter().map(|h| h.id.as_str()).collect();
        assert_eq!(ids, exact, "too few in the probed partition: exact instead");
    }
}

fn in_session(i: u64, session: &str) -> VectorRecord {
    VectorRecord::new(format!("v{i}"), clustered(i, 16), "m").with_fields(VectorFields {
        session: Some(session.into()),
        kind: Some(if i.is_multiple_of(2) { "fact" } else { "event" }.into()),
        time: Some(Timestamp(i as i64)),
    })
}

/// Many small writes leave many data files; maintenance merges them and indexes the
/// fields, and filters stay exact over indexed rows and rows written after the indexes.
#[tokio::test]
async fn maintenance_merges_small_files_and_indexes_the_fields() {
    let dir = tempfile::tempdir().unwrap();
    let index = open(
        dir.path(),
        LanceOptions::default().field_index_threshold(500),
    )
    .await;
    for write in 0..30u64 {
        let records = (write * 40..(write + 1) * 40)
            .map(|i| in_session(i, &format!("s{}", i % 7)))
            .collect();
        index.upsert("memories", records).await.unwrap();
    }
    while index.is_optimizing() {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(
        !index.optimize("memories").await.unwrap(),
        "no ANN below its threshold"
    );
    let layout = index.layout("memories").await.unwrap().unwrap();
    assert_eq!(layout.rows, 1_200);
    assert!(layout.fragments < 16, "small files merged: {layout:?}");
    assert_eq!(layout.indexed_columns(), ["kind", "session", "time"]);
    assert!(
        layout.indexes.iter().all(|i| i.unindexed_rows == 0),
        "{layout:?}"
    );

    // Rows the field indexes do not cover yet, one of them replacing an indexed row.
    let late: Vec<VectorRecord> = (1_200..1_210)
        .chain([3])
        .map(|i| in_session(i, "late"))
        .collect();
    index.upsert("memories", late.clone()).await.unwrap();
    let session = |s: &str| VectorFilter {
        session: Some(s.into()),
        ..VectorFilter::default()
    };
    assert_eq!(index.count("memories", &session("late")).await.unwrap(), 11);
    assert_eq!(index.count("memories", &session("s3")).await.unwrap(), 170);
    let facts_in_range = VectorFilter {
        kind: Some("fact".into()),
        from: Some(Timestamp(100)),
        to: Some(Timestamp(1_205)),
        ..VectorFilter::default()
    };
    // Even times from 100 to 1204: 553 rows.
    assert_eq!(index.count("memories", &facts_in_range).await.unwrap(), 553);
    let hits = index
        .search(
            "memories",
            &VectorQuery::new(&late[10].vector, 20).filter(session("late")),
        )
        .await
        .unwrap();
    assert_eq!(hits.len(), 11, "every late row, and only those");
    assert_eq!(hits[0].id, "v3");
    assert_eq!(
        index.delete("memories", &["v1200".into()]).await.unwrap(),
        1
    );
    assert_eq!(index.count("memories", &session("late")).await.unwrap(), 10);
}

/// A table written before vectors had fields (id and vector only) opens with empty field
/// columns: its vectors stay, match no filter, and new vectors carry fields.
#[tokio::test]
async fn tables_without_field_columns_get_them() {
    use arrow_array::types::Float32Type;
    use arrow_array::{FixedSizeListArray, RecordBatch, StringArray};
    use arrow_schema::{DataType, Field, Schema};

    let dir = tempfile::tempdir().unwrap();
    let uri = dir.path().to_str().unwrap();
    let old = Arc::new(
        Schema::new(vec![
            Field::new("id", DataType::Utf8, false),
            Field::new(
                "vector",
                DataType::FixedSizeList(Arc::new(Field::new("item", DataType::Float32, true)), 2),
                false,
            ),
        ])
        .with_metadata([("memory.model".to_owned(), "m".to_owned())].into()),
    );
    let batch = RecordBatch::try_new(
        old,
        vec![
            Arc::new(StringArray::from(vec!["old"])),
            Arc::new(
                FixedSizeListArray::from_iter_primitive::<Float32Type, _, _>(
                    [Some(vec![Some(1.0), Some(0.0)])],
                    2,
                ),
            ),
        ],
    )
    .unwrap();
    let db = lancedb::connect(uri).execute().await.unwrap();
    db.create_table("memories", batch).execute().await.unwrap();

    let index = open(dir.path(), LanceOptions::default()).await;
    let fields = VectorFields {
        session: Some("s".into()),
        kind: Some("fact".into()),
        time: Some(Timestamp(7)),
    };
    let new = VectorRecord::new("new", vec![0.0, 1.0], "m").with_fields(fields.clone());
    index.upsert("memories", vec![new.clone()]).await.unwrap();
    let got = index
        .get("memories", &["old".to_owned(), "new".to_owned()])
        .await
        .unwrap();
    assert_eq!(
        got,
        vec![VectorRecord::new("old", vec![1.0, 0.0], "m"), new]
    );
    assert_eq!(
        index
            .count("memories", &VectorFilter::default())
            .await
            .unwrap(),
        2
    );
    let facts = VectorFilter {
        kind: Some("fact".into()),
        ..VectorFilter::default()
    };
    let hits = index
        .search("memories", &VectorQuery::new(&[1.0, 0.0], 5).filter(facts))
        .await
        .unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].id, "new");
}

/// A deleted vector leaves the files once its namespace is erased: the old versions that
/// still held it are pruned. The marker (the record's id) is found before (positive control).
#[tokio::test]
async fn erasure_removes_deleted_vectors_from_every_version() {
    const MARKER: &str = "zqxvectormarkerkw";
    let dir = tempfile::tempdir().unwrap();
    let index = open(dir.path(), LanceOptions::default()).await;
    let mut records: Vec<VectorRecord> = (0..50)
        .map(|i| VectorRecord::new(format!("keep{i}"), vector(i, 8), "m"))
        .collect();
    records.push(VectorRecord::new(MARKER, vector(77, 8), "m"));
    index.upsert("memories", records).await.unwrap();
    assert!(!files_containing(dir.path(), MARKER.as_bytes()).is_empty());
    assert_eq!(
        index
            .delete("memories", &[MARKER.to_owned()])
            .await
            .unwrap(),
        1
    );
    assert!(
        !files_containing(dir.path(), MARKER.as_bytes()).is_empty(),
        "a delete alone leaves the old version on disk"
    );
    index.erase_deleted("memories").await.unwrap();
    assert_eq!(
        files_containing(dir.path(), MARKER.as_bytes()),
        Vec::<String>::new()
    );
    assert_eq!(
        index
            .query("memories", &vector(1, 8), 100)
            .await
            .unwrap()
            .len(),
        50
    );
}
