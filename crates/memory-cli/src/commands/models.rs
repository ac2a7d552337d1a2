//! `memory models list`: the local catalogue of embedders and rerankers.

use serde_json::{Value, json};

use super::CliError;
use crate::output;

/// Prints the catalogue: each model's name, repository, width, pooling, prefixes, download
/// size and whether its files are here.
#[cfg(feature = "onnx-embedder")]
pub(super) fn list(json: bool) -> Result<(), CliError> {
    use memory_compose::model_catalogue::{EMBEDDERS, PinnedFile, RERANKERS};
    let here = |name: &str, files: &[PinnedFile]| {
        let dir = memory_compose::model_dir(name);
        files.iter().all(|file| {
            std::fs::metadata(dir.join(file.path))
                .is_ok_and(|m| m.is_file() && file.size.is_none_or(|size| m.len() == size))
        }) || (name == memory_compose::model_catalogue::MINILM
            && dir.join("model.onnx").is_file()
            && dir.join("tokenizer.json").is_file())
    };
    let megabytes = |bytes: u64| (bytes as f64 / 1e6).round();
    let embedders: Vec<Value> = EMBEDDERS
        .iter()
        .map(|m| {
            json!({
                "name": m.name,
                "repo": m.repo,
                "revision": m.revision,
                "dimensions": m.dimensions,
                "pooling": format!("{:?}", m.pooling).to_lowercase(),
                "normalize": m.normalize,
                "query_prefix": m.query_prefix,
                "document_prefix": m.document_prefix,
                "max_tokens": m.max_tokens,
                "languages": m.languages,
                "megabytes": megabytes(m.bytes()),
                "sizes_pinned": m.files.iter().all(|f| f.size.is_some()),
                "installed": here(m.name, m.files),
            })
        })
        .collect();
    let rerankers: Vec<Value> = RERANKERS
        .iter()
        .map(|m| {
            json!({
                "name": m.name,
                "repo": m.repo,
                "revision": m.revision,
                "max_tokens": m.max_tokens,
                "languages": m.languages,
                "megabytes": megabytes(m.bytes()),
                "installed": here(m.name, m.files),
            })
        })
        .collect();
    if json {
        return output::json(&json!({
            "embedders": embedders,
            "rerankers": rerankers,
        }));
    }
    println!("embedders ([memory] embedder = \"<name>\"):");
    for (m, row) in EMBEDDERS.iter().zip(&embedders) {
        let prefixes = match (m.query_prefix, m.document_prefix) {
            ("", "") => "no prefixes".to_owned(),
            (q, d) => format!("query {q:?}, document {d:?}"),
        };
        println!(
            "  {:<24} {:>4} dims  {:<4} pooling  {:>5} MB  {}  {}  ({})",
            m.name,
            m.dimensions,
            row["pooling"].as_str().unwrap_or(""),
            row["megabytes"],
            if row["installed"] == true {
                "here"
            } else {
                "fetched on first use"
            },
            prefixes,
            m.repo,
        );
    }
    println!("rerankers ([memory] reranker = \"<name>\"):");
    for (m, row) in RERANKERS.iter().zip(&rerankers) {
        println!(
            "  {:<24} {:>5} MB  {}  ({})",
            m.name,
            row["megabytes"],
            if row["installed"] == true {
                "here"
            } else {
                "fetched on first use"
            },
            m.repo,
        );
    }
    Ok(())
}

/// Without ONNX Runtime in the build there is no catalogue.
#[cfg(not(feature = "onnx-embedder"))]
pub(super) fn list(_json: bool) -> Result<(), CliError> {
    Err(CliError::Input(
        "the model catalogue runs on ONNX Runtime, which this build leaves out (`--features onnx-embedder`)".into(),
    ))
}
