//! Analyzers per language: each finds its own inflections, CJK text is findable without
//! spaces, the language is declared, and an index reopened as another language is refused.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use memory_core::ports::{TextDocument, TextIndex, TextIndexes, TextQuery};
use memory_core::{MemoryError, SearchMode, TextLanguage};
use memory_tantivy::{TantivyOptions, TantivyTextIndex, TantivyTextIndexes};
use memory_testkit::contract;

async fn ids(index: &dyn TextIndex, query: TextQuery) -> Vec<String> {
    let mut ids: Vec<String> = index
        .search("n", &query)
        .await
        .unwrap()
        .into_iter()
        .map(|h| h.id)
        .collect();
    ids.sort();
    ids
}

async fn index_in(
    language: TextLanguage,
    docs: &[(&str, &str)],
) -> (tempfile::TempDir, TantivyTextIndex) {
    let dir = tempfile::tempdir().unwrap();
    let index =
        TantivyTextIndex::open_with(dir.path(), TantivyOptions::default().language(language))
            .unwrap();
    let documents = docs
        .iter()
        .map(|(id, text)| TextDocument::new(*id, *text))
        .collect();
    index.upsert("n", documents).await.unwrap();
    (dir, index)
}

#[tokio::test]
async fn french_and_german_find_their_own_inflections() {
    let (_d, fr) = index_in(
        TextLanguage::French,
        &[
            ("f1", "Les chanteuses répétaient le concert"),
            ("f2", "un chien noir"),
        ],
    )
    .await;
    assert_eq!(ids(&fr, TextQuery::new("chanteuse", 5)).await, ["f1"]);
    assert_eq!(ids(&fr, TextQuery::new("chiens", 5)).await, ["f2"]);
    assert!(
        ids(&fr, TextQuery::new("les", 5)).await.is_empty(),
        "a French stop word"
    );
    let caps = fr.capabilities();
    assert_eq!(caps.language, TextLanguage::French);
    assert!(caps.stemming && caps.stop_words);

    let (_d, de) = index_in(
        TextLanguage::German,
        &[("g1", "Die Häuser am See"), ("g2", "ein Hund")],
    )
    .await;
    assert_eq!(ids(&de, TextQuery::new("Haus", 5)).await, ["g1"]);
    assert_eq!(ids(&de, TextQuery::new("Hunde", 5)).await, ["g2"]);
}

#[tokio::test]
async fn cjk_text_is_findable_without_spaces() {
    let (_d, cjk) = index_in(
        TextLanguage::Cjk,
        &[
            ("ja", "私は東京都に住んでいます"),
            ("zh", "我们明天去北京开会"),
            ("ko", "서울에서 한국어를 공부합니다"),
            ("kyoto", "京都の大学で働いています"),
            ("en", "Deploys run on Fridays"),
        ],
    )
    .await;
    assert_eq!(ids(&cjk, TextQuery::new("東京", 5)).await, ["ja"]);
    assert_eq!(ids(&cjk, TextQuery::new("京都", 5)).await, ["ja", "kyoto"]);
    assert_eq!(ids(&cjk, TextQuery::new("北京", 5)).await, ["zh"]);
    assert_eq!(ids(&cjk, TextQuery::new("한국어", 5)).await, ["ko"]);
    assert_eq!(
        ids(
            &cjk,
            TextQuery::new("東京都に住", 5).mode(SearchMode::Phrase)
        )
        .await,
        ["ja"],
        "a phrase of pieces is a substring"
    );
    assert!(
        ids(&cjk, TextQuery::new("都東京", 5).mode(SearchMode::Phrase))
            .await
            .is_empty(),
        "out of order is not the phrase"
    );
    assert_eq!(
        ids(&cjk, TextQuery::new("fridays", 5)).await,
        ["en"],
        "other words lowercased"
    );
    let caps = cjk.capabilities();
    assert_eq!(caps.language, TextLanguage::Cjk);
    assert!(!caps.stemming && !caps.stop_words);

    // The English analyzer cannot cut CJK text: the whole run is one word.
    let (_d, en) = index_in(TextLanguage::English, &[("ja", "私は東京都に住んでいます")]).await;
    assert!(ids(&en, TextQuery::new("東京", 5)).await.is_empty());
}

/// The shared contract holds for every language (its English-specific checks apply to
/// English indexes only, as the declared language says).
#[tokio::test]
async fn the_contract_holds_in_other_languages() {
    for language in [TextLanguage::French, TextLanguage::Cjk] {
        let dir = tempfile::tempdir().unwrap();
        let index =
            TantivyTextIndex::open_with(dir.path(), TantivyOptions::default().language(language))
                .unwrap();
        contract::text_index::run_all(&index).await;
    }
}

#[tokio::test]
async fn reopening_in_another_language_is_a_clear_error() {
    let (dir, index) = index_in(TextLanguage::French, &[("f1", "les chanteuses")]).await;
    drop(index);
    let error = TantivyTextIndex::open_with(
        dir.path(),
        TantivyOptions::default().language(TextLanguage::Cjk),
    )
    .unwrap_err();
    assert!(matches!(error, MemoryError::InvalidInput { .. }), "{error}");
    let message = error.to_string();
    assert!(
        message.contains("made for french") && message.contains("opened as cjk"),
        "{message}"
    );
    // Nothing was harmed: the index opens in its own language with its documents.
    let again = TantivyTextIndex::open_with(
        dir.path(),
        TantivyOptions::default().language(TextLanguage::French),
    )
    .unwrap();
    assert_eq!(ids(&again, TextQuery::new("chanteuse", 5)).await, ["f1"]);
}

#[tokio::test]
async fn a_profile_can_have_its_own_language() {
    let dir = tempfile::tempdir().unwrap();
    let indexes = TantivyTextIndexes::new(dir.path())
        .with_options(TantivyOptions::default().language(TextLanguage::Spanish))
        .with_profile_language("kenji", TextLanguage::Cjk);
    let kenji = indexes.text_index("kenji").await.unwrap();
    let ana = indexes.text_index("ana").await.unwrap();
    assert_eq!(kenji.capabilities().language, TextLanguage::Cjk);
    assert_eq!(ana.capabilities().language, TextLanguage::Spanish);
    kenji
        .upsert("n", vec![TextDocument::new("k1", "来週大阪に出張します")])
        .await
        .unwrap();
    ana.upsert("n", vec![TextDocument::new("a1", "Las canciones nuevas")])
        .await
        .unwrap();
    assert_eq!(ids(kenji.as_ref(), TextQuery::new("大阪", 5)).await, ["k1"]);
    assert_eq!(ids(ana.as_ref(), TextQuery::new("nueva", 5)).await, ["a1"]);
}
