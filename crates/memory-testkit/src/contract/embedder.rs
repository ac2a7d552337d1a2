//! Contract of [`Embedder`].

use memory_core::ports::Embedder;

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (na * nb)
}

/// Runs every embedder contract check.
pub async fn run_all(embedder: &dyn Embedder) {
    one_vector_per_input_in_order(embedder).await;
    empty_batch_is_empty(embedder).await;
    queries_get_one_vector_each_in_order(embedder).await;
}

/// One vector per input, in order, each `dimensions()` long; a batch gives the same vectors
/// as embedding each text alone; the same text always gives the same vector.
pub async fn one_vector_per_input_in_order(embedder: &dyn Embedder) {
    assert!(!embedder.model_id().is_empty());
    let texts: Vec<String> = [
        "The deploy runs on Fridays.",
        "a",
        "Quarterly revenue grew by twelve percent after the pricing change in the spring.",
        "The deploy runs on Fridays.",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    let batch = embedder.embed(&texts).await.unwrap();
    assert_eq!(batch.len(), texts.len());
    for v in &batch {
        assert_eq!(v.len(), embedder.dimensions());
        assert!(v.iter().all(|x| x.is_finite()));
    }
    for (i, text) in texts.iter().enumerate() {
        let alone = embedder.embed(std::slice::from_ref(text)).await.unwrap();
        let similarity = cosine(&alone[0], &batch[i]);
        assert!(
            similarity > 0.999,
            "text {i}: batch and single differ ({similarity})"
        );
    }
    assert!(cosine(&batch[0], &batch[3]) > 0.999);
    assert!(
        cosine(&batch[0], &batch[2]) < 0.99,
        "different texts, different vectors"
    );
}

/// No texts, no vectors (and no error).
pub async fn empty_batch_is_empty(embedder: &dyn Embedder) {
    assert!(embedder.embed(&[]).await.unwrap().is_empty());
}

/// `embed_queries` gives one vector per query, in order, each `dimensions()` long, the same
/// for the same query, batch or alone; no queries, no vectors.
pub async fn queries_get_one_vector_each_in_order(embedder: &dyn Embedder) {
    let queries: Vec<String> = ["when is the deploy", "revenue growth", "when is the deploy"]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    let batch = embedder.embed_queries(&queries).await.unwrap();
    assert_eq!(batch.len(), queries.len());
    for v in &batch {
        assert_eq!(v.len(), embedder.dimensions());
        assert!(v.iter().all(|x| x.is_finite()));
    }
    let alone = embedder
        .embed_queries(std::slice::from_ref(&queries[1]))
        .await
        .unwrap();
    assert!(cosine(&alone[0], &batch[1]) > 0.999);
    assert!(cosine(&batch[0], &batch[2]) > 0.999);
    assert!(embedder.embed_queries(&[]).await.unwrap().is_empty());
}
