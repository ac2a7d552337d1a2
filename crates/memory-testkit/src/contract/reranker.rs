//! Contract of [`Reranker`].

use memory_core::ports::Reranker;

/// Runs every reranker contract check. `relevant` answers `query`; `unrelated` does not (the
/// caller picks a pair its model must tell apart).
pub async fn run_all(reranker: &dyn Reranker, query: &str, relevant: &str, unrelated: &str) {
    one_score_per_document_in_order(reranker, query, relevant, unrelated).await;
    no_documents_no_scores(reranker).await;
}

/// One score per document, in order, each in `0..=1`; the relevant one above the unrelated
/// one wherever it stands; the same document always gets the same score, alone or in a batch.
pub async fn one_score_per_document_in_order(
    reranker: &dyn Reranker,
    query: &str,
    relevant: &str,
    unrelated: &str,
) {
    assert!(!reranker.model_id().is_empty());
    let documents = vec![
        unrelated.to_owned(),
        relevant.to_owned(),
        unrelated.to_owned(),
    ];
    let scores = reranker.score(query, &documents).await.unwrap();
    assert_eq!(scores.len(), documents.len());
    assert!(
        scores
            .iter()
            .all(|s| s.is_finite() && (0.0..=1.0).contains(s)),
        "{scores:?}"
    );
    assert!(scores[1] > scores[0], "{scores:?}");
    assert!((scores[0] - scores[2]).abs() < 1e-6, "{scores:?}");
    let alone = reranker
        .score(query, std::slice::from_ref(&documents[1]))
        .await
        .unwrap();
    assert!((alone[0] - scores[1]).abs() < 1e-5, "{alone:?} {scores:?}");
}

/// No documents, no scores (and no error).
pub async fn no_documents_no_scores(reranker: &dyn Reranker) {
    assert!(reranker.score("anything", &[]).await.unwrap().is_empty());
}
