//! `fetch` against a loopback stand-in for the hub that serves
//! `/<repo>/resolve/<revision>/<file>` and can misbehave: a truncated body, altered bytes, a
//! refusal, silence, or no server at all.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use common::{Mode, StandIn, listing, settings, sha256};
use memory_hub::{HubFile, HubModel, HubSettings, fetch, fetch_blocking};

const REPO: &str = "acme/tiny-model";
const REVISION: &str = "0123456789abcdef0123456789abcdef01234567";

/// A model of two files (one in a subdirectory), and the stand-in serving them.
async fn model_and_hub() -> (HubModel, StandIn) {
    let config = br#"{"hidden_size": 8}"#.to_vec();
    let weights: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let model = HubModel {
        repo: REPO.into(),
        revision: REVISION.into(),
        files: vec![
            HubFile::new("config.json", config.len() as u64, sha256(&config)),
            HubFile::new(
                "1_Pooling/weights.bin",
                weights.len() as u64,
                sha256(&weights),
            ),
        ],
    };
    let at = |file: &str| format!("{REPO}/resolve/{REVISION}/{file}");
    let files = HashMap::from([
        (at("config.json"), config),
        (at("1_Pooling/weights.bin"), weights),
    ]);
    (model, StandIn::start(files).await)
}

#[tokio::test]
async fn each_missing_file_is_fetched_once_verified_and_put_in_place() {
    let (model, hub) = model_and_hub().await;
    let dir = tempfile::tempdir().unwrap();
    let report = fetch(&model, dir.path(), &hub.settings()).await.unwrap();
    assert_eq!(report.fetched.len(), 2);
    assert_eq!(
        listing(dir.path()),
        vec!["1_Pooling/weights.bin".to_owned(), "config.json".to_owned()]
    );
    assert!(model.is_in(dir.path()));
    assert_eq!(hub.requests(), 2);
    // Present: nothing is asked for again.
    let again = fetch(&model, dir.path(), &hub.settings()).await.unwrap();
    assert!(again.fetched.is_empty());
    assert_eq!(hub.requests(), 2);
    // One lost: only that one is fetched.
    std::fs::remove_file(dir.path().join("config.json")).unwrap();
    assert_eq!(Some(model.missing_bytes(dir.path())), model.files[0].size);
    let report = fetch(&model, dir.path(), &hub.settings()).await.unwrap();
    assert_eq!(report.fetched, vec!["config.json".to_owned()]);
    assert_eq!(hub.requests(), 3);
}

#[tokio::test]
async fn a_truncated_download_leaves_nothing_in_place_and_a_retry_completes() {
    let (model, hub) = model_and_hub().await;
    let dir = tempfile::tempdir().unwrap();
    hub.set(Mode::Truncate(5));
    let error = fetch(&model, dir.path(), &hub.settings())
        .await
        .unwrap_err();
    assert!(error.is_transient(), "{error}");
    assert!(error.to_string().contains("ended after"), "{error}");
    assert!(listing(dir.path()).is_empty(), "{:?}", listing(dir.path()));
    hub.set(Mode::Serve);
    fetch(&model, dir.path(), &hub.settings()).await.unwrap();
    assert!(model.is_in(dir.path()));
}

#[tokio::test]
async fn altered_bytes_fail_the_checksum_and_leave_nothing_in_place() {
    let (model, hub) = model_and_hub().await;
    let dir = tempfile::tempdir().unwrap();
    hub.set(Mode::Alter);
    let error = fetch(&model, dir.path(), &hub.settings())
        .await
        .unwrap_err();
    let text = error.to_string();
    assert!(text.contains("checksum"), "{text}");
    assert!(text.contains(&model.files[0].sha256), "{text}");
    assert!(listing(dir.path()).is_empty(), "{:?}", listing(dir.path()));
}

/// A file pinned by its SHA-256 alone (its size unknown beforehand) is fetched and checked
/// by the checksum: altered bytes still fail and leave nothing in place.
#[tokio::test]
async fn a_file_of_unknown_size_is_checked_by_its_checksum_alone() {
    let (mut model, hub) = model_and_hub().await;
    let weights = model.files.remove(1);
    model.files[0] = HubFile::of_unknown_size("config.json", model.files[0].sha256.clone());
    assert_eq!(model.missing_bytes(std::path::Path::new("/nonexistent")), 0);
    let dir = tempfile::tempdir().unwrap();
    hub.set(Mode::Alter);
    let error = fetch(&model, dir.path(), &hub.settings())
        .await
        .unwrap_err();
    assert!(error.to_string().contains("checksum"), "{error}");
    assert!(listing(dir.path()).is_empty(), "{:?}", listing(dir.path()));
    hub.set(Mode::Serve);
    let report = fetch(&model, dir.path(), &hub.settings()).await.unwrap();
    assert_eq!(report.fetched, vec!["config.json".to_owned()]);
    assert_eq!(report.bytes, br#"{"hidden_size": 8}"#.len() as u64);
    assert!(model.is_in(dir.path()));
    assert!(!weights.is_in(dir.path()));
}

#[tokio::test]
async fn a_refusal_names_the_url_and_the_status() {
    let (model, hub) = model_and_hub().await;
    let dir = tempfile::tempdir().unwrap();
    hub.set(Mode::Refuse);
    let error = fetch(&model, dir.path(), &hub.settings())
        .await
        .unwrap_err();
    let text = error.to_string();
    assert!(text.contains("404"), "{text}");
    assert!(
        text.contains(&format!("/{REPO}/resolve/{REVISION}/config.json")),
        "{text}"
    );
}

#[tokio::test]
async fn a_silent_hub_is_given_up_after_the_read_timeout() {
    let (model, hub) = model_and_hub().await;
    let dir = tempfile::tempdir().unwrap();
    hub.set(Mode::Silent);
    let started = Instant::now();
    let error = fetch(&model, dir.path(), &hub.settings())
        .await
        .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert!(error.is_transient(), "{error}");
    assert!(listing(dir.path()).is_empty());
}

#[tokio::test]
async fn an_unreachable_hub_is_a_clear_error_at_once() {
    let (model, _) = model_and_hub().await;
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let error = fetch(
        &model,
        dir.path(),
        &settings(&format!("http://127.0.0.1:{port}")),
    )
    .await
    .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(error.is_transient(), "{error}");
    assert!(error.to_string().contains("could not reach"), "{error}");
}

#[tokio::test]
async fn offline_nothing_is_asked_for() {
    let (model, hub) = model_and_hub().await;
    let dir = tempfile::tempdir().unwrap();
    let offline = HubSettings {
        offline: true,
        ..hub.settings()
    };
    let error = fetch(&model, dir.path(), &offline).await.unwrap_err();
    assert!(error.to_string().contains("HF_HUB_OFFLINE"), "{error}");
    assert_eq!(hub.requests(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_blocking_form_runs_from_inside_a_runtime() {
    let (model, hub) = model_and_hub().await;
    let dir = tempfile::tempdir().unwrap();
    let report = fetch_blocking(&model, dir.path(), &hub.settings()).unwrap();
    assert_eq!(report.fetched.len(), 2);
    assert!(model.is_in(dir.path()));
}

#[test]
fn the_hub_clients_environment_is_honoured() {
    let defaults = HubSettings::from_vars(|_| None);
    assert_eq!(defaults.endpoint, "https://huggingface.co");
    assert_eq!(defaults.packages_endpoint, "https://files.pythonhosted.org");
    assert!(!defaults.offline);
    let set = HubSettings::from_vars(|name| match name {
        "HF_ENDPOINT" => Some("https://mirror.example/".into()),
        "MEMORY_PACKAGES_ENDPOINT" => Some("https://pypi.example/files/".into()),
        "HF_HUB_OFFLINE" => Some("0".into()),
        _ => None,
    });
    assert_eq!(set.endpoint, "https://mirror.example");
    assert_eq!(set.packages_endpoint, "https://pypi.example/files");
    assert!(!set.offline);
    for on in ["1", "true", "YES", "on"] {
        assert!(
            HubSettings::from_vars(|name| (name == "HF_HUB_OFFLINE").then(|| on.into())).offline
        );
    }
}
