//! The catalogue's plumbing on tiny models the test builds (`memory_testkit::tiny_onnx`):
//! pooling, normalisation, query and document prefixes, windows, pair encoding, truncation and
//! the width check, each against values computed by hand; and the MiniLM entry, which loads
//! the int8 model `scripts/setup-onnx.sh` makes as the default embedder does. ONNX Runtime's
//! library comes from the same place (the README's test command installs it and sets
//! `MEMORY_REQUIRE_MODEL=1`, so there a missing file fails instead of skipping).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use memory_core::ports::{Embedder, Reranker};
use memory_onnx::catalogue::{self, EmbedderModel, Pooling, RerankerModel};
use memory_onnx::{OnnxEmbedder, OnnxReranker};
use memory_testkit::tiny_onnx;

/// ONNX Runtime's library, or `None` (skipping) where it is not installed.
fn runtime() -> Option<PathBuf> {
    let library = OnnxEmbedder::default_model_dir().join("libonnxruntime.so");
    if library.is_file() {
        return Some(library);
    }
    if std::env::var("MEMORY_REQUIRE_MODEL").is_ok_and(|v| v == "1") {
        panic!(
            "MEMORY_REQUIRE_MODEL=1 but ONNX Runtime is not installed: run scripts/setup-onnx.sh"
        );
    }
    eprintln!("skipped: ONNX Runtime not installed (scripts/setup-onnx.sh)");
    None
}

const DIMENSIONS: usize = 4;

fn tiny(pooling: Pooling, normalize: bool, max_tokens: usize) -> EmbedderModel {
    EmbedderModel {
        name: "tiny",
        repo: "test/tiny",
        revision: "0123456789abcdef0123456789abcdef01234567",
        graph: "onnx/model.onnx",
        files: &[],
        dimensions: DIMENSIONS,
        pooling,
        normalize,
        query_prefix: "query: ",
        document_prefix: "passage: ",
        max_tokens,
        languages: "tiny",
    }
}

/// A directory holding the tiny embedder (with or without `token_type_ids`) and tokenizer.
fn embedder_dir(token_types: bool) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("onnx")).unwrap();
    std::fs::write(
        dir.path().join("onnx/model.onnx"),
        tiny_onnx::embedder_graph(DIMENSIONS, token_types),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("tokenizer.json"),
        tiny_onnx::tokenizer_json(),
    )
    .unwrap();
    dir
}

/// The mean of the table's rows for `tokens`.
fn mean(tokens: &[&str]) -> Vec<f32> {
    let table = tiny_onnx::embedding_table(DIMENSIONS);
    let mut sum = [0.0; DIMENSIONS];
    for token in tokens {
        for (s, v) in sum.iter_mut().zip(&table[tiny_onnx::id(token) as usize]) {
            *s += v;
        }
    }
    sum.iter().map(|s| s / tokens.len() as f32).collect()
}

fn unit(v: &[f32]) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter().map(|x| x / norm).collect()
}

fn close(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-5)
}

#[tokio::test]
async fn mean_pooling_covers_the_prefix_and_the_special_tokens() {
    let Some(runtime) = runtime() else { return };
    for token_types in [true, false] {
        let dir = embedder_dir(token_types);
        let model = tiny(Pooling::Mean, false, 64);
        let e = OnnxEmbedder::from_catalogue(&model, dir.path(), &runtime).unwrap();
        assert_eq!(e.dimensions(), DIMENSIONS);
        assert_eq!(e.model_id(), model.model_id());
        let text = vec!["Maria lives in Lisbon".to_owned()];
        let document = e.embed(&text).await.unwrap();
        let words = ["maria", "lives", "in", "lisbon"];
        let expected = mean(&[&["[CLS]", "passage", ":"], &words[..], &["[SEP]"]].concat());
        assert!(close(&document[0], &expected), "{document:?} {expected:?}");
        let query = e.embed_queries(&text).await.unwrap();
        let expected = mean(&[&["[CLS]", "query", ":"], &words[..], &["[SEP]"]].concat());
        assert!(close(&query[0], &expected), "{query:?} {expected:?}");
    }
}

#[tokio::test]
async fn cls_pooling_takes_the_first_token_and_normalises() {
    let Some(runtime) = runtime() else { return };
    let dir = embedder_dir(true);
    let e =
        OnnxEmbedder::from_catalogue(&tiny(Pooling::Cls, true, 64), dir.path(), &runtime).unwrap();
    let v = e
        .embed(&["the cat sat".to_owned(), "rain".to_owned()])
        .await
        .unwrap();
    let cls = unit(&tiny_onnx::embedding_table(DIMENSIONS)[tiny_onnx::id("[CLS]") as usize]);
    assert!(close(&v[0], &cls), "{v:?}");
    assert!(close(&v[1], &cls), "{v:?}");
}

/// A text longer than the window is split; every window carries the lead and the prefix, and
/// the text's vector is the token-weighted mean of its windows' (here: of every token).
#[tokio::test]
async fn windows_repeat_the_prefix_and_weigh_by_tokens() {
    let Some(runtime) = runtime() else { return };
    let dir = embedder_dir(true);
    // 7 tokens a window: [CLS] passage : w w w [SEP].
    let e =
        OnnxEmbedder::from_catalogue(&tiny(Pooling::Mean, false, 7), dir.path(), &runtime).unwrap();
    let v = e
        .embed(&["the cat sat in the rain".to_owned()])
        .await
        .unwrap();
    let lead = ["[CLS]", "passage", ":"];
    let expected = mean(
        &[
            &lead[..],
            &["the", "cat", "sat", "[SEP]"],
            &lead[..],
            &["in", "the", "rain", "[SEP]"],
        ]
        .concat(),
    );
    assert!(close(&v[0], &expected), "{v:?} {expected:?}");
}

#[test]
fn a_model_narrower_or_wider_than_its_entry_or_its_window_is_refused() {
    let Some(runtime) = runtime() else { return };
    let dir = embedder_dir(true);
    let mut model = tiny(Pooling::Mean, true, 64);
    model.dimensions = 8;
    let error = OnnxEmbedder::from_catalogue(&model, dir.path(), &runtime).unwrap_err();
    assert!(error.to_string().contains("4 dimensions"), "{error}");
    // A window the prefix fills leaves no room for text.
    let cramped = tiny(Pooling::Mean, true, 4);
    let error = OnnxEmbedder::from_catalogue(&cramped, dir.path(), &runtime).unwrap_err();
    assert!(error.to_string().contains("no room"), "{error}");
    let error =
        OnnxEmbedder::from_catalogue(&model, Path::new("/nonexistent"), &runtime).unwrap_err();
    assert!(error.is_not_found(), "{error}");
    assert!(error.to_string().contains("memory models fetch"), "{error}");
}

fn tiny_reranker(max_tokens: usize) -> RerankerModel {
    RerankerModel {
        name: "tiny-reranker",
        repo: "test/tiny-reranker",
        revision: "0123456789abcdef0123456789abcdef01234567",
        graph: "model.onnx",
        files: &[],
        max_tokens,
        languages: "tiny",
    }
}

const TYPE_WEIGHT: f32 = 0.125;

fn reranker_dir() -> tempfile::TempDir {
    let mut scores = vec![0.0_f32; tiny_onnx::VOCAB];
    scores[tiny_onnx::id("lisbon") as usize] = 0.5;
    scores[tiny_onnx::id("rain") as usize] = -1.0;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("model.onnx"),
        tiny_onnx::reranker_graph(&scores, TYPE_WEIGHT),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("tokenizer.json"),
        tiny_onnx::tokenizer_json(),
    )
    .unwrap();
    dir
}

fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

/// Each (query, document) pair is read as `[CLS] query [SEP] document [SEP]`, the document's
/// part with token type 1, and scored as the sigmoid of the logit; a pair too long for the
/// window is cut from the longer text.
#[tokio::test]
async fn pairs_are_encoded_scored_and_cut_to_the_window() {
    let Some(runtime) = runtime() else { return };
    let dir = reranker_dir();
    let model = tiny_reranker(64);
    let r = OnnxReranker::from_catalogue(&model, dir.path(), &runtime).unwrap();
    assert_eq!(r.model_id(), model.model_id());
    let documents = vec![
        "the rain".to_owned(),
        "Maria lives in Lisbon".to_owned(),
        "lisbon lisbon".to_owned(),
    ];
    let scores = r.score("where", &documents).await.unwrap();
    // Type-1 tokens: the document's words and its closing [SEP].
    let expected = [
        sigmoid(-1.0 + 3.0 * TYPE_WEIGHT),
        sigmoid(0.5 + 5.0 * TYPE_WEIGHT),
        sigmoid(1.0 + 3.0 * TYPE_WEIGHT),
    ];
    assert!(close(&scores, &expected), "{scores:?} {expected:?}");
    memory_testkit::contract::reranker::run_all(&r, "where", "lisbon", "rain").await;

    // A window of 8: [CLS] where [SEP] + 4 of the document's 20 words + [SEP].
    let cut = OnnxReranker::from_catalogue(&tiny_reranker(8), dir.path(), &runtime).unwrap();
    let long = vec!["lisbon ".repeat(20)];
    let scores = cut.score("where", &long).await.unwrap();
    let expected = sigmoid(4.0 * 0.5 + 5.0 * TYPE_WEIGHT);
    assert!((scores[0] - expected).abs() < 1e-5, "{scores:?} {expected}");
}

/// The MiniLM entry is the default embedder under its catalogue name: the same files, the
/// same vectors, the same model id.
#[tokio::test]
async fn the_minilm_entry_is_the_default_int8_embedder() {
    let Some(runtime) = runtime() else { return };
    let dir = OnnxEmbedder::default_model_dir();
    let entry = catalogue::embedder("sentence-transformers/all-MiniLM-L6-v2").unwrap();
    assert_eq!(entry.name, catalogue::MINILM);
    let named = OnnxEmbedder::from_catalogue(entry, &dir, &runtime).unwrap();
    let default = OnnxEmbedder::load(&dir).unwrap();
    assert_eq!(named.model_id(), default.model_id());
    let texts = vec!["A man is eating food.".to_owned()];
    assert_eq!(
        named.embed(&texts).await.unwrap(),
        default.embed(&texts).await.unwrap()
    );
    assert_eq!(
        named.embed_queries(&texts).await.unwrap(),
        default.embed(&texts).await.unwrap(),
        "no prefixes"
    );
}

#[test]
fn every_entry_is_pinned_and_described() {
    for m in catalogue::EMBEDDERS {
        assert!(m.revision.len() == 40 && m.revision.chars().all(|c| c.is_ascii_hexdigit()));
        assert!(m.files.iter().any(|f| f.path == m.graph), "{}", m.name);
        assert!(
            m.files.iter().any(|f| f.path == "tokenizer.json"),
            "{}",
            m.name
        );
        assert!(m.files.iter().all(|f| f.sha256.len() == 64), "{}", m.name);
        assert!(m.dimensions > 0 && m.max_tokens >= 128, "{}", m.name);
        assert_eq!(catalogue::embedder(&m.name.to_uppercase()), Some(m));
        assert_eq!(catalogue::embedder(m.repo), Some(m));
    }
    for m in catalogue::RERANKERS {
        assert!(m.revision.len() == 40);
        assert!(m.files.iter().any(|f| f.path == m.graph), "{}", m.name);
        assert_eq!(catalogue::reranker(m.name), Some(m));
    }
    for name in [
        "bge-small-en-v1.5",
        "bge-base-en-v1.5",
        "gte-small",
        "e5-small-v2",
        "nomic-embed-text-v1.5",
        "multilingual-e5-small",
        "all-MiniLM-L6-v2",
    ] {
        assert!(catalogue::embedder(name).is_some(), "{name}");
    }
    for name in ["ms-marco-MiniLM-L-6-v2", "bge-reranker-base"] {
        assert!(catalogue::reranker(name).is_some(), "{name}");
    }
    assert!(catalogue::embedder("gte-large").is_none());
}
