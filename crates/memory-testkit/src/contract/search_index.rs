//! Contract of [`SearchIndex`].

use memory_core::SearchMode;
use memory_core::ports::{IndexDocument, SearchIndex};

use super::unique;

fn doc(id: &str, text: &str) -> IndexDocument {
    IndexDocument {
        id: id.into(),
        text: text.into(),
    }
}

/// Runs every search-index contract check.
pub async fn run_all(index: &dyn SearchIndex) {
    upsert_search_delete(index).await;
    namespaces_are_isolated(index).await;
    queries_are_literal(index).await;
}

/// Upserts replace by id; search matches every word with stemming; delete removes at once.
pub async fn upsert_search_delete(index: &dyn SearchIndex) {
    let ns = unique("idx");
    assert_eq!(index.count(&ns).await.unwrap(), 0);
    index
        .upsert(
            &ns,
            vec![
                doc("deploy", "Deploys run on Fridays"),
                doc("style", "Use tabs for indentation"),
            ],
        )
        .await
        .unwrap();
    assert_eq!(index.count(&ns).await.unwrap(), 2);
    let hits = index
        .search(&ns, "deploy friday", SearchMode::AllWords, 10)
        .await
        .unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].id, "deploy");
    assert_eq!(hits[0].text, "Deploys run on Fridays");
    assert!(
        index
            .search(&ns, "deploy tabs", SearchMode::AllWords, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        index
            .search(&ns, "run on", SearchMode::Phrase, 10)
            .await
            .unwrap()
            .len(),
        1
    );
    assert!(
        index
            .search(&ns, "on run", SearchMode::Phrase, 10)
            .await
            .unwrap()
            .is_empty()
    );
    index
        .upsert(&ns, vec![doc("deploy", "Deploys run on Tuesdays")])
        .await
        .unwrap();
    assert_eq!(index.count(&ns).await.unwrap(), 2);
    assert!(
        index
            .search(&ns, "fridays", SearchMode::AllWords, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        index
            .search(&ns, "tuesdays", SearchMode::AllWords, 10)
            .await
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        index
            .delete(&ns, &["deploy".into(), "ghost".into()])
            .await
            .unwrap(),
        1
    );
    assert!(
        index
            .search(&ns, "tuesdays", SearchMode::AllWords, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        index
            .search(&ns, "tabs", SearchMode::AllWords, 0)
            .await
            .unwrap()
            .len(),
        0
    );
    index.clear(&ns).await.unwrap();
    assert_eq!(index.count(&ns).await.unwrap(), 0);
    assert!(
        index
            .search(&ns, "tabs", SearchMode::AllWords, 10)
            .await
            .unwrap()
            .is_empty()
    );
}

/// Namespaces share nothing.
pub async fn namespaces_are_isolated(index: &dyn SearchIndex) {
    let a = unique("idx-a");
    let b = unique("idx-b");
    index
        .upsert(&a, vec![doc("k", "alpha wombat")])
        .await
        .unwrap();
    index
        .upsert(&b, vec![doc("k", "beta wombat")])
        .await
        .unwrap();
    let hits = index
        .search(&a, "wombat", SearchMode::AllWords, 10)
        .await
        .unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].text, "alpha wombat");
    index.clear(&a).await.unwrap();
    assert_eq!(index.count(&b).await.unwrap(), 1);
    assert_eq!(index.delete(&a, &["k".into()]).await.unwrap(), 0);
}

/// Query syntax is inert; empty queries give nothing; better matches rank first.
pub async fn queries_are_literal(index: &dyn SearchIndex) {
    let ns = unique("idx-lit");
    index
        .upsert(
            &ns,
            vec![
                doc("weak", "lighthouse and many other words here"),
                doc("strong", "lighthouse lighthouse"),
            ],
        )
        .await
        .unwrap();
    for hostile in ["\"", "AND", "light*", "text:x", "((", "NEAR(a b)"] {
        assert!(
            index
                .search(&ns, hostile, SearchMode::AllWords, 10)
                .await
                .is_ok(),
            "{hostile}"
        );
    }
    assert!(
        index
            .search(&ns, "", SearchMode::AllWords, 10)
            .await
            .unwrap()
            .is_empty()
    );
    let hits = index
        .search(&ns, "lighthouse", SearchMode::AllWords, 10)
        .await
        .unwrap();
    assert_eq!(
        hits.iter().map(|h| h.id.as_str()).collect::<Vec<_>>(),
        ["strong", "weak"]
    );
    assert!(hits[0].score > hits[1].score);
}
