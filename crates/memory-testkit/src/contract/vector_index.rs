//! Contract of [`VectorIndex`] (and of the vector index a [`MemoryProfiles`] hands out).

use memory_core::ports::{
    VectorFields, VectorFilter, VectorIndex, VectorIndexes, VectorQuery, VectorRecord,
};
use memory_core::{MemoryError, Timestamp};

use super::unique;

fn record(id: &str, vector: &[f32], model: &str) -> VectorRecord {
    VectorRecord::new(id, vector.to_vec(), model)
}

fn fields(session: &str, kind: &str, time: i64) -> VectorFields {
    VectorFields {
        session: Some(session.into()),
        kind: Some(kind.into()),
        time: Some(Timestamp(time)),
    }
}

fn ids(hits: &[memory_core::ports::VectorHit]) -> Vec<&str> {
    hits.iter().map(|h| h.id.as_str()).collect()
}

/// Runs every vector-index contract check.
pub async fn run_all(index: &dyn VectorIndex) {
    nearest_first_with_cosine_scores(index).await;
    upsert_replaces_and_delete_removes(index).await;
    one_model_and_dimension_per_namespace(index).await;
    non_finite_vectors_are_refused(index).await;
    namespaces_are_isolated(index).await;
    empty_namespace_has_no_hits(index).await;
    filters_rank_only_matching_vectors(index).await;
    selective_filters_find_far_matches(index).await;
    count_counts_what_matches(index).await;
}

/// Forty vectors of session `near`, kind `fact`, times 0..40, close to `[1, 0, 0]`; three of
/// session `far`, kind `event`, times 1000/2000/3000, far from it (in that order, without
/// ties); one without fields.
async fn filter_fixture(index: &dyn VectorIndex) -> String {
    let ns = unique("vecf");
    let mut records: Vec<VectorRecord> = (0..40)
        .map(|i| {
            record(&format!("near{i:02}"), &[1.0, 0.01 * i as f32, 0.0], "m")
                .with_fields(fields("near", "fact", i))
        })
        .collect();
    for (i, time) in [1000, 2000, 3000].into_iter().enumerate() {
        records.push(
            record(&format!("far{i}"), &[0.1 * (3 - i) as f32, 1.0, 0.0], "m")
                .with_fields(fields("far", "event", time)),
        );
    }
    records.push(record("bare", &[0.0, 0.0, 1.0], "m"));
    index.upsert(&ns, records).await.unwrap();
    ns
}

/// A filter restricts the ranking itself: far vectors that match are returned when the near
/// ones do not match; every filter field, and their combination, is exact.
pub async fn filters_rank_only_matching_vectors(index: &dyn VectorIndex) {
    let ns = filter_fixture(index).await;
    let query = [1.0, 0.0, 0.0];
    let search = |filter: VectorFilter, k: usize| {
        let ns = ns.clone();
        async move {
            index
                .search(&ns, &VectorQuery::new(&query, k).filter(filter))
                .await
                .unwrap()
        }
    };
    let unfiltered = search(VectorFilter::default(), 5).await;
    assert!(ids(&unfiltered).iter().all(|id| id.starts_with("near")));

    let events = search(
        VectorFilter {
            kind: Some("event".into()),
            ..VectorFilter::default()
        },
        5,
    )
    .await;
    assert_eq!(ids(&events), ["far0", "far1", "far2"], "{events:?}");
    assert!(events[0].score < 0.3 && events[2].score > 0.0, "{events:?}");
    let session = search(
        VectorFilter {
            session: Some("far".into()),
            ..VectorFilter::default()
        },
        2,
    )
    .await;
    assert_eq!(ids(&session), ["far0", "far1"]);
    let late = search(
        VectorFilter {
            from: Some(Timestamp(2000)),
            ..VectorFilter::default()
        },
        10,
    )
    .await;
    assert_eq!(ids(&late), ["far1", "far2"], "from is inclusive");
    let early = search(
        VectorFilter {
            to: Some(Timestamp(3)),
            ..VectorFilter::default()
        },
        10,
    )
    .await;
    assert_eq!(
        ids(&early),
        ["near00", "near01", "near02"],
        "to is exclusive"
    );
    let combined = search(
        VectorFilter {
            session: Some("far".into()),
            kind: Some("event".into()),
            from: Some(Timestamp(1000)),
            to: Some(Timestamp(3000)),
        },
        10,
    )
    .await;
    assert_eq!(ids(&combined), ["far0", "far1"]);
    let nothing = search(
        VectorFilter {
            session: Some("far".into()),
            kind: Some("fact".into()),
            ..VectorFilter::default()
        },
        10,
    )
    .await;
    assert!(nothing.is_empty(), "{nothing:?}");
    let quote = search(
        VectorFilter {
            session: Some("it's \\ \"quoted\"".into()),
            ..VectorFilter::default()
        },
        10,
    )
    .await;
    assert!(quote.is_empty(), "filter values are data, never syntax");
}

/// In a namespace of 1,200 vectors, a filter that only three far ones match still returns
/// those three (an index that filters the nearest candidates it found, as HNSW does, must not
/// come back short).
pub async fn selective_filters_find_far_matches(index: &dyn VectorIndex) {
    let ns = unique("vecs");
    let dims = 8;
    let mut records: Vec<VectorRecord> = (0..1_200)
        .map(|i| {
            let mut v = vec![1.0; dims];
            v[i % dims] += (i % 97) as f32 / 97.0;
            record(&format!("common{i:04}"), &v, "m").with_fields(fields("common", "fact", 1))
        })
        .collect();
    for i in 0..3 {
        let mut v = vec![-1.0; dims];
        v[i] = 0.0;
        records.push(record(&format!("rare{i}"), &v, "m").with_fields(fields("rare", "fact", 1)));
    }
    for chunk in records.chunks(400) {
        index.upsert(&ns, chunk.to_vec()).await.unwrap();
    }
    let filter = VectorFilter {
        session: Some("rare".into()),
        ..VectorFilter::default()
    };
    let query = vec![1.0; dims];
    let hits = index
        .search(&ns, &VectorQuery::new(&query, 5).filter(filter.clone()))
        .await
        .unwrap();
    let mut found = ids(&hits);
    found.sort_unstable();
    assert_eq!(found, ["rare0", "rare1", "rare2"], "{hits:?}");
    assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
    assert_eq!(index.count(&ns, &filter).await.unwrap(), 3);
}

/// `count` counts every vector, or those that match; upserts replace fields, deletes and
/// clears are counted at once.
pub async fn count_counts_what_matches(index: &dyn VectorIndex) {
    let ns = filter_fixture(index).await;
    let count = |filter: VectorFilter| {
        let ns = ns.clone();
        async move { index.count(&ns, &filter).await.unwrap() }
    };
    let kind = |k: &str| VectorFilter {
        kind: Some(k.into()),
        ..VectorFilter::default()
    };
    assert_eq!(count(VectorFilter::default()).await, 44);
    assert_eq!(count(kind("event")).await, 3);
    assert_eq!(count(kind("fact")).await, 40);
    assert_eq!(
        count(VectorFilter {
            from: Some(Timestamp(10)),
            to: Some(Timestamp(2000)),
            ..VectorFilter::default()
        })
        .await,
        31
    );
    let moved = record("far0", &[0.0, 1.0, 0.0], "m").with_fields(fields("near", "fact", 7));
    index.upsert(&ns, vec![moved.clone()]).await.unwrap();
    assert_eq!(
        count(kind("event")).await,
        2,
        "the upsert replaced the fields"
    );
    assert_eq!(count(kind("fact")).await, 41);
    assert_eq!(
        index.get(&ns, &["far0".to_owned()]).await.unwrap(),
        vec![moved],
        "get returns the fields"
    );
    index
        .delete(&ns, &["far1".to_owned(), "bare".to_owned()])
        .await
        .unwrap();
    assert_eq!(count(VectorFilter::default()).await, 42);
    assert_eq!(count(kind("event")).await, 1);
    index.clear(&ns).await.unwrap();
    assert_eq!(count(VectorFilter::default()).await, 0);
    assert_eq!(
        index
            .count(&unique("vecf"), &VectorFilter::default())
            .await
            .unwrap(),
        0,
        "an unknown namespace is empty"
    );
}

/// Hits are ordered by cosine similarity (scale does not matter), at most `k` of them.
pub async fn nearest_first_with_cosine_scores(index: &dyn VectorIndex) {
    let ns = unique("vec");
    index
        .upsert(
            &ns,
            vec![
                record("east", &[1.0, 0.0, 0.0], "m"),
                record("north", &[0.0, 10.0, 0.0], "m"),
                record("north-east", &[3.0, 3.0, 0.0], "m"),
            ],
        )
        .await
        .unwrap();
    let hits = index.query(&ns, &[0.0, 2.0, 0.0], 2).await.unwrap();
    let ids: Vec<&str> = hits.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(ids, ["north", "north-east"]);
    assert!((hits[0].score - 1.0).abs() < 1e-5, "{hits:?}");
    assert!((hits[1].score - std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-5);
    assert_eq!(
        index.query(&ns, &[1.0, 0.0, 0.0], 10).await.unwrap().len(),
        3
    );
    assert_eq!(index.model(&ns).await.unwrap().as_deref(), Some("m"));
}

/// An upsert replaces a vector by id; delete counts what existed and removes it at once.
pub async fn upsert_replaces_and_delete_removes(index: &dyn VectorIndex) {
    let ns = unique("vec");
    index
        .upsert(
            &ns,
            vec![record("a", &[1.0, 0.0], "m"), record("b", &[0.0, 1.0], "m")],
        )
        .await
        .unwrap();
    index
        .upsert(&ns, vec![record("a", &[0.0, 1.0], "m")])
        .await
        .unwrap();
    let hits = index.query(&ns, &[1.0, 0.0], 2).await.unwrap();
    assert!(
        hits.iter().all(|h| h.score.abs() < 1e-5),
        "a was replaced: {hits:?}"
    );
    let got = index
        .get(&ns, &["b".to_owned(), "zz".to_owned(), "a".to_owned()])
        .await
        .unwrap();
    assert_eq!(
        got,
        vec![record("b", &[0.0, 1.0], "m"), record("a", &[0.0, 1.0], "m")]
    );
    let removed = index
        .delete(&ns, &["a".to_owned(), "missing".to_owned()])
        .await
        .unwrap();
    assert_eq!(removed, 1);
    let hits = index.query(&ns, &[0.0, 1.0], 5).await.unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].id, "b");
}

/// Another model or dimension is refused until the namespace is cleared; a wrong-length
/// query is refused.
pub async fn one_model_and_dimension_per_namespace(index: &dyn VectorIndex) {
    let ns = unique("vec");
    index
        .upsert(&ns, vec![record("a", &[1.0, 0.0], "small")])
        .await
        .unwrap();
    let other_model = index
        .upsert(&ns, vec![record("b", &[1.0, 0.0], "large")])
        .await;
    assert!(matches!(other_model, Err(MemoryError::InvalidInput { .. })));
    let other_dims = index
        .upsert(&ns, vec![record("b", &[1.0, 0.0, 0.0], "small")])
        .await;
    assert!(matches!(other_dims, Err(MemoryError::InvalidInput { .. })));
    assert!(matches!(
        index.query(&ns, &[1.0, 0.0, 0.0], 1).await,
        Err(MemoryError::InvalidInput { .. })
    ));
    assert_eq!(
        index.query(&ns, &[1.0, 0.0], 5).await.unwrap().len(),
        1,
        "nothing was mixed in"
    );
    index.clear(&ns).await.unwrap();
    assert_eq!(index.model(&ns).await.unwrap(), None);
    index
        .upsert(&ns, vec![record("b", &[1.0, 0.0, 0.0], "large")])
        .await
        .unwrap();
    assert_eq!(index.model(&ns).await.unwrap().as_deref(), Some("large"));
    let empty = format!("{ns}-empty");
    assert_eq!(
        index.models(&[&empty, &ns, &ns]).await.unwrap(),
        [None, Some("large".to_owned()), Some("large".to_owned())],
        "models: each namespace's in the order asked"
    );
    assert_eq!(
        index.query(&ns, &[1.0, 0.0, 0.0], 5).await.unwrap().len(),
        1
    );
}

/// A batch holding a NaN or infinite component is refused whole: nothing of it is written,
/// not even the namespace when it is the first write.
pub async fn non_finite_vectors_are_refused(index: &dyn VectorIndex) {
    let ns = unique("vec");
    let first = index
        .upsert(&ns, vec![record("bad", &[f32::NAN, 1.0], "small")])
        .await;
    assert!(matches!(first, Err(MemoryError::InvalidInput { .. })));
    assert_eq!(
        index.model(&ns).await.unwrap(),
        None,
        "no namespace was made"
    );
    index
        .upsert(&ns, vec![record("kept", &[1.0, 0.0], "small")])
        .await
        .unwrap();
    for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        let refused = index
            .upsert(
                &ns,
                vec![
                    record("fine", &[0.0, 1.0], "small"),
                    record("bad", &[bad, 1.0], "small"),
                ],
            )
            .await;
        assert!(
            matches!(refused, Err(MemoryError::InvalidInput { .. })),
            "{bad}: {refused:?}"
        );
    }
    assert_eq!(index.count(&ns, &VectorFilter::default()).await.unwrap(), 1);
    let hits = index.query(&ns, &[0.0, 1.0], 5).await.unwrap();
    assert_eq!(
        ids(&hits),
        ["kept"],
        "neither record of a refused batch was written"
    );
}

/// Namespaces share nothing.
pub async fn namespaces_are_isolated(index: &dyn VectorIndex) {
    let (a, b) = (unique("vec"), unique("vec"));
    index
        .upsert(&a, vec![record("x", &[1.0, 0.0], "m")])
        .await
        .unwrap();
    index
        .upsert(&b, vec![record("x", &[0.0, 1.0, 0.0], "other")])
        .await
        .unwrap();
    let hits = index.query(&a, &[1.0, 0.0], 5).await.unwrap();
    assert_eq!(hits.len(), 1);
    assert!((hits[0].score - 1.0).abs() < 1e-5);
    index.clear(&a).await.unwrap();
    assert_eq!(index.query(&b, &[0.0, 1.0, 0.0], 5).await.unwrap().len(), 1);
}

/// A namespace never written has no model and no hits.
pub async fn empty_namespace_has_no_hits(index: &dyn VectorIndex) {
    let ns = unique("vec");
    assert!(index.query(&ns, &[1.0, 0.0], 5).await.unwrap().is_empty());
    assert_eq!(index.model(&ns).await.unwrap(), None);
    assert_eq!(index.delete(&ns, &["x".to_owned()]).await.unwrap(), 0);
}

/// A profile's vector index is its own, and `delete_vector_index` deletes its vectors.
pub async fn profile_vectors_are_isolated(indexes: &dyn VectorIndexes) {
    let (a, b) = (unique("pa"), unique("pb"));
    let va = indexes.vector_index(&a).await.unwrap();
    va.upsert("memories", vec![record("m1", &[1.0, 0.0], "m")])
        .await
        .unwrap();
    let vb = indexes.vector_index(&b).await.unwrap();
    assert!(
        vb.query("memories", &[1.0, 0.0], 5)
            .await
            .unwrap()
            .is_empty()
    );
    run_all(va.as_ref()).await;
    va.upsert("memories", vec![record("m1", &[1.0, 0.0], "m")])
        .await
        .unwrap();
    indexes.delete_vector_index(&a).await.unwrap();
    indexes.delete_vector_index(&a).await.unwrap();
    let reopened = indexes.vector_index(&a).await.unwrap();
    assert!(
        reopened
            .query("memories", &[1.0, 0.0], 5)
            .await
            .unwrap()
            .is_empty(),
        "a deleted index leaves no vectors"
    );
    assert_eq!(reopened.model("memories").await.unwrap(), None);
    assert!(indexes.vector_index("../escape").await.is_err());
    indexes.delete_vector_index(&b).await.unwrap();
}

/// Concurrent first writes of two models into one fresh namespace: exactly one model wins
/// and the other write is refused; the namespace never holds both. Pass two handles on the
/// same data (two instances, or one shared) to test the check across instances.
pub async fn the_model_check_is_atomic(
    first: std::sync::Arc<dyn VectorIndex>,
    second: std::sync::Arc<dyn VectorIndex>,
) {
    for round in 0..8 {
        let ns = unique(&format!("race{round}"));
        let write = |index: std::sync::Arc<dyn VectorIndex>, model: &'static str, ns: String| {
            tokio::spawn(async move {
                index
                    .upsert(&ns, vec![record(model, &[1.0, 0.5], model)])
                    .await
            })
        };
        let (a, b) = (
            write(first.clone(), "model-a", ns.clone()),
            write(second.clone(), "model-b", ns.clone()),
        );
        let (a, b) = (a.await.unwrap(), b.await.unwrap());
        assert!(
            a.is_ok() != b.is_ok(),
            "exactly one model may win: {a:?} / {b:?}"
        );
        let refused = if a.is_ok() { &b } else { &a };
        assert!(matches!(refused, Err(MemoryError::InvalidInput { .. })));
        let winner = if a.is_ok() { "model-a" } else { "model-b" };
        assert_eq!(first.model(&ns).await.unwrap().as_deref(), Some(winner));
        assert_eq!(second.model(&ns).await.unwrap().as_deref(), Some(winner));
        let hits = first.query(&ns, &[1.0, 0.5], 5).await.unwrap();
        assert_eq!(hits.len(), 1, "only the winner's vector is stored");
        assert_eq!(hits[0].id, winner);
    }
}
