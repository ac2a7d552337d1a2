//! Contract of [`VectorIndex`] (and of the vector index a [`MemoryProfiles`] hands out).

use memory_core::MemoryError;
use memory_core::ports::{VectorIndex, VectorIndexes, VectorRecord};

use super::unique;

fn record(id: &str, vector: &[f32], model: &str) -> VectorRecord {
    VectorRecord {
        id: id.into(),
        vector: vector.to_vec(),
        model: model.into(),
    }
}

/// Runs every vector-index contract check.
pub async fn run_all(index: &dyn VectorIndex) {
    nearest_first_with_cosine_scores(index).await;
    upsert_replaces_and_delete_removes(index).await;
    one_model_and_dimension_per_namespace(index).await;
    namespaces_are_isolated(index).await;
    empty_namespace_has_no_hits(index).await;
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
    assert_eq!(
        index.query(&ns, &[1.0, 0.0, 0.0], 5).await.unwrap().len(),
        1
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
