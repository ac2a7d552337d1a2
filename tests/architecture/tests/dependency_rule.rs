//! The dependency rule, checked from `cargo metadata`:
//! core knows no adapter and no infrastructure; adapters know only core; the engine uses ports.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeSet, HashMap};
use std::process::Command;

use serde_json::Value;

fn metadata() -> Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("metadata is JSON")
}

/// Normal (non-dev, non-build) dependencies of every package, by package id.
fn normal_graph(meta: &Value) -> (HashMap<String, String>, HashMap<String, Vec<String>>) {
    let names: HashMap<String, String> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["id"].as_str().unwrap().to_owned(),
                p["name"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let edges = meta["resolve"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|node| {
            let deps = node["deps"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| {
                    d["dep_kinds"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|k| k["kind"].is_null())
                })
                .map(|d| d["pkg"].as_str().unwrap().to_owned())
                .collect();
            (node["id"].as_str().unwrap().to_owned(), deps)
        })
        .collect();
    (names, edges)
}

fn transitive(
    name: &str,
    names: &HashMap<String, String>,
    edges: &HashMap<String, Vec<String>>,
) -> BTreeSet<String> {
    let start = names
        .iter()
        .find(|(_, n)| *n == name)
        .map(|(id, _)| id.clone())
        .expect("package exists");
    let mut seen = BTreeSet::new();
    let mut stack = vec![start];
    while let Some(id) = stack.pop() {
        for dep in edges.get(&id).into_iter().flatten() {
            if seen.insert(names[dep].clone()) {
                stack.push(dep.clone());
            }
        }
    }
    seen
}

fn direct(name: &str, meta: &Value) -> BTreeSet<String> {
    meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .expect("package exists")["dependencies"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["kind"].is_null())
        .map(|d| d["name"].as_str().unwrap().to_owned())
        .collect()
}

const INFRASTRUCTURE: &[&str] = &[
    "tokio",
    "sqlx",
    "sqlx-core",
    "libsqlite3-sys",
    "redis",
    "aws-sdk-s3",
    "tantivy",
    "lancedb",
    "hyper",
    "reqwest",
    "axum",
    "mio",
    "mockall",
];

#[test]
fn core_depends_only_on_serde_serde_json_async_trait_thiserror() {
    let meta = metadata();
    let allowed: BTreeSet<String> = ["serde", "serde_json", "async-trait", "thiserror"]
        .map(String::from)
        .into();
    assert_eq!(direct("memory-core", &meta), allowed);
    let (names, edges) = normal_graph(&meta);
    let all = transitive("memory-core", &names, &edges);
    for banned in INFRASTRUCTURE {
        assert!(!all.contains(*banned), "memory-core pulls in {banned}");
    }
}

#[test]
fn engine_knows_ports_not_adapters() {
    let meta = metadata();
    let (names, edges) = normal_graph(&meta);
    let all = transitive("memory-engine", &names, &edges);
    for banned in INFRASTRUCTURE
        .iter()
        .chain(&["memory-sqlite", "memory-testkit"])
    {
        assert!(!all.contains(*banned), "memory-engine pulls in {banned}");
    }
}

#[test]
fn adapters_depend_on_core_and_never_on_each_other_or_the_engine() {
    let meta = metadata();
    let adapters: Vec<String> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["manifest_path"].as_str().unwrap().contains("/adapters/"))
        .map(|p| p["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(adapters.contains(&"memory-sqlite".to_owned()));
    for adapter in &adapters {
        let deps = direct(adapter, &meta);
        assert!(
            deps.contains("memory-core"),
            "{adapter} must implement core's ports"
        );
        for other in adapters
            .iter()
            .chain(&["memory-engine".to_owned(), "memory-cli".to_owned()])
        {
            assert!(
                other == adapter || !deps.contains(other),
                "{adapter} depends on {other}"
            );
        }
    }
}

#[test]
fn no_binary_links_the_test_kit() {
    let meta = metadata();
    let (names, edges) = normal_graph(&meta);
    let binaries: Vec<String> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| {
            p["targets"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t["kind"].as_array().unwrap().iter().any(|k| k == "bin"))
        })
        .map(|p| p["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(binaries.contains(&"memory-cli".to_owned()), "{binaries:?}");
    for binary in &binaries {
        let all = transitive(binary, &names, &edges);
        for banned in ["memory-testkit", "mockall", "proptest"] {
            assert!(!all.contains(banned), "the {binary} binary links {banned}");
        }
    }
}
