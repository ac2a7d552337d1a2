//! Contract of [`TextIndex`], for indexes their caller writes (`written_by_store: false`).
//!
//! What every index must do is strict here; how words match beyond that (stemming, stop
//! words, phrases, rarity ranking) is read from the index's declared capabilities, so an
//! analyzer other than SQLite's passes for the reasons users care about.

use memory_core::ports::{
    ScoredId, TextDocument, TextFields, TextFilter, TextIndex, TextIndexCapabilities, TextQuery,
};
use memory_core::{MemoryError, SearchMode, Timestamp};

use super::unique;

fn doc(id: &str, text: &str) -> TextDocument {
    TextDocument::new(id, text)
}

/// The ids `search` finds, after checking that `search_ids` gives the same ids and scores in
/// the same order (so every query of the suite checks both).
async fn ids(index: &dyn TextIndex, ns: &str, query: &TextQuery) -> Vec<String> {
    let hits: Vec<ScoredId> = index
        .search(ns, query)
        .await
        .unwrap()
        .into_iter()
        .map(ScoredId::from)
        .collect();
    let ranked = index.search_ids(ns, query).await.unwrap();
    assert_eq!(
        ranked, hits,
        "search_ids disagrees with search for {query:?}"
    );
    hits.into_iter().map(|h| h.id).collect()
}

fn all(text: &str) -> TextQuery {
    TextQuery::new(text, 10)
}

fn any(text: &str) -> TextQuery {
    TextQuery::new(text, 10).mode(SearchMode::AnyWords)
}

/// Runs every text-index contract check.
pub async fn run_all(index: &dyn TextIndex) {
    let caps = index.capabilities();
    assert!(
        !caps.written_by_store,
        "this suite writes the index; a store-written index is tested with its store"
    );
    upsert_replaces_and_delete_is_final(index).await;
    namespaces_are_isolated(index).await;
    input_is_never_query_syntax(index).await;
    modes_match_as_declared(index, caps).await;
    filters_are_exact(index).await;
    hits_carry_what_a_caller_shows(index).await;
    limits_are_kept(index).await;
}

/// Upserts replace by id; a deleted document is never found again; `clear` empties.
pub async fn upsert_replaces_and_delete_is_final(index: &dyn TextIndex) {
    let ns = unique("idx");
    assert_eq!(index.count(&ns).await.unwrap(), 0);
    index
        .upsert(
            &ns,
            vec![
                doc("deploy", "deploy runs on friday"),
                doc("style", "use tabs for indentation"),
            ],
        )
        .await
        .unwrap();
    assert_eq!(index.count(&ns).await.unwrap(), 2);
    assert_eq!(ids(index, &ns, &all("deploy friday")).await, ["deploy"]);
    assert!(ids(index, &ns, &all("deploy tabs")).await.is_empty());
    index
        .upsert(&ns, vec![doc("deploy", "deploy runs on tuesday")])
        .await
        .unwrap();
    assert_eq!(index.count(&ns).await.unwrap(), 2);
    assert!(ids(index, &ns, &all("friday")).await.is_empty());
    assert_eq!(ids(index, &ns, &all("tuesday")).await, ["deploy"]);
    assert_eq!(
        index
            .delete(&ns, &["deploy".into(), "ghost".into()])
            .await
            .unwrap(),
        1
    );
    assert!(ids(index, &ns, &all("tuesday")).await.is_empty());
    assert!(ids(index, &ns, &any("tuesday deploy")).await.is_empty());
    index.clear(&ns).await.unwrap();
    assert_eq!(index.count(&ns).await.unwrap(), 0);
    assert!(ids(index, &ns, &all("tabs")).await.is_empty());
}

/// Namespaces share nothing; an unknown namespace is empty.
pub async fn namespaces_are_isolated(index: &dyn TextIndex) {
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
    let hits = index.search(&a, &all("wombat")).await.unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].text, "alpha wombat");
    index.clear(&a).await.unwrap();
    assert_eq!(index.count(&b).await.unwrap(), 1);
    assert_eq!(index.delete(&a, &["k".into()]).await.unwrap(), 0);
    assert!(
        ids(index, &unique("never"), &all("wombat"))
            .await
            .is_empty()
    );
}

/// Query syntax in user input is inert and never an error; empty queries find nothing.
pub async fn input_is_never_query_syntax(index: &dyn TextIndex) {
    let ns = unique("idx-lit");
    index
        .upsert(
            &ns,
            vec![doc("a", "lighthouse keeper notes"), doc("b", "harbour")],
        )
        .await
        .unwrap();
    for hostile in [
        "\"",
        "AND",
        "OR",
        "NOT",
        "light*",
        "text:x",
        "((",
        "NEAR(a b)",
        "a -b",
        "+x",
        "~y^2",
        "[a TO b]",
        "{}",
        "\\",
        "'",
        "lighthouse\"",
        "*",
    ] {
        for mode in [
            SearchMode::AllWords,
            SearchMode::AnyWords,
            SearchMode::Phrase,
        ] {
            let result = index.search(&ns, &all(hostile).mode(mode)).await;
            assert!(result.is_ok(), "{hostile:?} in {mode:?}: {result:?}");
        }
    }
    // Operators are words: "lighthouse OR harbour" does not find the harbour document.
    assert_eq!(
        ids(index, &ns, &all("lighthouse OR harbour")).await,
        Vec::<String>::new()
    );
    for empty in ["", "   ", "?!", "--"] {
        assert!(ids(index, &ns, &all(empty)).await.is_empty(), "{empty:?}");
    }
}

/// All-words, any-word and phrase matching, and what the capabilities declare.
pub async fn modes_match_as_declared(index: &dyn TextIndex, caps: TextIndexCapabilities) {
    let ns = unique("idx-modes");
    index
        .upsert(
            &ns,
            vec![
                doc("m1", "the release went to production"),
                doc("m2", "production was rolled back"),
                doc("m3", "lighthouse lighthouse lighthouse"),
                doc(
                    "m4",
                    "lighthouse and many other common words in a longer sentence",
                ),
                doc("m5", "deploys happen nightly"),
            ],
        )
        .await
        .unwrap();
    assert_eq!(ids(index, &ns, &all("production release")).await, ["m1"]);
    let mut either = ids(index, &ns, &any("release rolled")).await;
    either.sort();
    assert_eq!(either, ["m1", "m2"]);
    // More matching words rank first.
    assert_eq!(
        ids(index, &ns, &any("production rolled back"))
            .await
            .first()
            .map(String::as_str),
        Some("m2")
    );
    let phrase = index
        .search(&ns, &all("went to production").mode(SearchMode::Phrase))
        .await;
    if caps.phrase {
        assert_eq!(
            phrase
                .unwrap()
                .into_iter()
                .map(|h| h.id)
                .collect::<Vec<_>>(),
            ["m1"]
        );
        assert!(
            ids(
                index,
                &ns,
                &all("production to went").mode(SearchMode::Phrase)
            )
            .await
            .is_empty()
        );
    } else {
        assert!(matches!(phrase, Err(MemoryError::NotSupported { .. })));
    }
    // The suite's words are English: stemming and stop words are checked on English indexes.
    let english = caps.language == memory_core::TextLanguage::English;
    let stemmed = ids(index, &ns, &all("deploy")).await;
    if caps.stemming && english {
        assert_eq!(stemmed, ["m5"], "stemming declared: deploy finds deploys");
    }
    if caps.rarity_ranking {
        let ranked = ids(index, &ns, &all("lighthouse")).await;
        assert_eq!(ranked, ["m3", "m4"], "the denser match ranks first");
    }
    let the = ids(index, &ns, &all("the")).await;
    if caps.stop_words && english {
        assert!(the.is_empty(), "stop words declared: 'the' matches nothing");
    } else if !caps.stop_words {
        assert_eq!(the, ["m1"]);
    }
}

/// Every set filter field must match exactly; `from` is inclusive, `to` exclusive.
pub async fn filters_are_exact(index: &dyn TextIndex) {
    let ns = unique("idx-filter");
    let fields =
        |session: &str, role: &str, kind: Option<&str>, key: Option<&str>, t: i64| TextFields {
            session: Some(session.into()),
            role: Some(role.into()),
            kind: kind.map(str::to_owned),
            key: key.map(str::to_owned),
            time: Some(Timestamp(t)),
        };
    index
        .upsert(
            &ns,
            vec![
                doc("a", "otter facts").with_fields(fields(
                    "s1",
                    "user",
                    Some("fact"),
                    Some("pet"),
                    10,
                )),
                doc("b", "otter plans").with_fields(fields(
                    "s1",
                    "assistant",
                    Some("task"),
                    None,
                    20,
                )),
                doc("c", "otter news").with_fields(fields(
                    "s2",
                    "user",
                    Some("fact"),
                    Some("pet"),
                    30,
                )),
                doc("d", "otter without fields"),
            ],
        )
        .await
        .unwrap();
    let with = |filter: TextFilter| all("otter").filter(filter);
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v
    };
    assert_eq!(
        sorted(ids(index, &ns, &all("otter")).await),
        ["a", "b", "c", "d"]
    );
    let session = TextFilter {
        session: Some("s1".into()),
        ..TextFilter::default()
    };
    assert_eq!(sorted(ids(index, &ns, &with(session)).await), ["a", "b"]);
    let role = TextFilter {
        role: Some("user".into()),
        ..TextFilter::default()
    };
    assert_eq!(sorted(ids(index, &ns, &with(role)).await), ["a", "c"]);
    let kind_key = TextFilter {
        kind: Some("fact".into()),
        key: Some("pet".into()),
        session: Some("s2".into()),
        ..TextFilter::default()
    };
    assert_eq!(ids(index, &ns, &with(kind_key)).await, ["c"]);
    let window = TextFilter {
        from: Some(Timestamp(20)),
        to: Some(Timestamp(30)),
        ..TextFilter::default()
    };
    assert_eq!(ids(index, &ns, &with(window)).await, ["b"]);
    let nobody = TextFilter {
        session: Some("s3".into()),
        ..TextFilter::default()
    };
    assert!(ids(index, &ns, &with(nobody)).await.is_empty());
}

/// A hit carries id, text and fields, and scores are ordered best first.
pub async fn hits_carry_what_a_caller_shows(index: &dyn TextIndex) {
    let ns = unique("idx-hit");
    let fields = TextFields {
        session: Some("trip".into()),
        role: Some("user".into()),
        kind: None,
        key: None,
        time: Some(Timestamp(42)),
    };
    index
        .upsert(
            &ns,
            vec![
                doc("x", "Weather in Lisbon?").with_fields(fields.clone()),
                doc("y", "Lisbon Lisbon Lisbon"),
            ],
        )
        .await
        .unwrap();
    let hits = index.search(&ns, &all("lisbon weather")).await.unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].id, "x");
    assert_eq!(hits[0].text, "Weather in Lisbon?");
    assert_eq!(hits[0].fields, fields);
    let both = index.search(&ns, &any("lisbon weather")).await.unwrap();
    assert_eq!(both.len(), 2);
    assert!(both.windows(2).all(|w| w[0].score >= w[1].score));
}

/// At most `limit` hits; a zero limit finds nothing.
pub async fn limits_are_kept(index: &dyn TextIndex) {
    let ns = unique("idx-limit");
    let docs = (0..30)
        .map(|i| doc(&format!("d{i}"), &format!("common word number {i}")))
        .collect();
    index.upsert(&ns, docs).await.unwrap();
    assert_eq!(
        index
            .search(&ns, &TextQuery::new("common", 25))
            .await
            .unwrap()
            .len(),
        25
    );
    assert_eq!(
        index
            .search(&ns, &TextQuery::new("common", 5))
            .await
            .unwrap()
            .len(),
        5
    );
    assert!(
        index
            .search(&ns, &TextQuery::new("common", 0))
            .await
            .unwrap()
            .is_empty()
    );
}

/// Each profile's index is its own: documents never cross, deleting one profile's index
/// leaves the others whole, and a profile name that is not one is refused.
pub async fn profile_indexes_are_isolated(indexes: &dyn memory_core::ports::TextIndexes) {
    let (ada, bob) = (
        indexes.text_index("ada").await.unwrap(),
        indexes.text_index("bob").await.unwrap(),
    );
    ada.upsert("raw", vec![TextDocument::new("d1", "ada keeps bees")])
        .await
        .unwrap();
    bob.upsert("raw", vec![TextDocument::new("d1", "bob keeps goats")])
        .await
        .unwrap();
    assert!(
        bob.search("raw", &TextQuery::new("bees", 5))
            .await
            .unwrap()
            .is_empty()
    );
    indexes.delete_text_index("ada").await.unwrap();
    assert_eq!(ada.count("raw").await.unwrap(), 0);
    assert_eq!(bob.count("raw").await.unwrap(), 1);
    assert!(indexes.text_index("../x").await.is_err());
}
