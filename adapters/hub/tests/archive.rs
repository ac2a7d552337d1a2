//! `fetch_archived` against a loopback stand-in for PyPI's file host serving a wheel (a zip
//! file) that holds a library: the library is unpacked, verified and put in place, and a
//! wheel or library that is not the pinned one leaves nothing behind.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::HashMap;
use std::io::Write;

use common::{Mode, StandIn, listing, sha256};
use memory_hub::{ArchivedFile, HubFile, HubSettings, fetch_archived, fetch_archived_blocking};

const WHEEL_PATH: &str = "packages/ab/cd/0123/runtime-1.0-py3-none-linux_x86_64.whl";
const MEMBER: &str = "runtime/capi/libruntime.so.1.0";

/// A wheel holding a library (and another file), the pinned item, and the stand-in.
async fn wheel_and_host() -> (ArchivedFile, StandIn) {
    let library: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 253) as u8).collect();
    let mut wheel = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let deflated = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    wheel.start_file("runtime/__init__.py", deflated).unwrap();
    wheel.write_all(b"# nothing\n").unwrap();
    wheel.start_file(MEMBER, deflated).unwrap();
    wheel.write_all(&library).unwrap();
    let wheel = wheel.finish().unwrap().into_inner();
    let item = ArchivedFile {
        archive_path: WHEEL_PATH.into(),
        archive: HubFile::new(
            "runtime-1.0-py3-none-linux_x86_64.whl",
            wheel.len() as u64,
            sha256(&wheel),
        ),
        member: MEMBER.into(),
        file: HubFile::new("libruntime.so", library.len() as u64, sha256(&library)),
    };
    let host = StandIn::start(HashMap::from([(WHEEL_PATH.to_owned(), wheel)])).await;
    (item, host)
}

#[tokio::test]
async fn the_library_is_unpacked_verified_and_put_in_place_once() {
    let (item, host) = wheel_and_host().await;
    let dir = tempfile::tempdir().unwrap();
    let report = fetch_archived(&item, dir.path(), &host.settings())
        .await
        .unwrap();
    assert_eq!(report.fetched, vec!["libruntime.so".to_owned()]);
    // Only the library: the wheel and every temporary file are gone.
    assert_eq!(listing(dir.path()), vec!["libruntime.so".to_owned()]);
    assert_eq!(
        sha256(&std::fs::read(dir.path().join("libruntime.so")).unwrap()),
        item.file.sha256
    );
    assert_eq!(host.requests(), 1);
    let again = fetch_archived(&item, dir.path(), &host.settings())
        .await
        .unwrap();
    assert!(again.fetched.is_empty());
    assert_eq!(host.requests(), 1, "nothing fetched twice");
}

#[tokio::test]
async fn an_altered_or_truncated_wheel_leaves_nothing_behind() {
    let (item, host) = wheel_and_host().await;
    let dir = tempfile::tempdir().unwrap();
    host.set(Mode::Alter);
    let error = fetch_archived(&item, dir.path(), &host.settings())
        .await
        .unwrap_err();
    assert!(error.to_string().contains(&item.archive.sha256), "{error}");
    assert!(listing(dir.path()).is_empty(), "{:?}", listing(dir.path()));
    host.set(Mode::Truncate(100));
    let error = fetch_archived(&item, dir.path(), &host.settings())
        .await
        .unwrap_err();
    assert!(error.is_transient(), "{error}");
    assert!(listing(dir.path()).is_empty(), "{:?}", listing(dir.path()));
    host.set(Mode::Serve);
    fetch_archived(&item, dir.path(), &host.settings())
        .await
        .unwrap();
    assert!(item.is_in(dir.path()));
}

#[tokio::test]
async fn a_library_that_is_not_the_pinned_one_is_refused() {
    let (item, host) = wheel_and_host().await;
    let dir = tempfile::tempdir().unwrap();
    let other = ArchivedFile {
        file: HubFile::new("libruntime.so", item.file.size.unwrap(), "00".repeat(32)),
        ..item.clone()
    };
    let error = fetch_archived(&other, dir.path(), &host.settings())
        .await
        .unwrap_err();
    assert!(error.to_string().contains("checksum"), "{error}");
    assert!(listing(dir.path()).is_empty(), "{:?}", listing(dir.path()));
    let absent = ArchivedFile {
        member: "runtime/capi/libother.so".into(),
        ..item.clone()
    };
    let error = fetch_archived(&absent, dir.path(), &host.settings())
        .await
        .unwrap_err();
    assert!(error.to_string().contains("libother.so"), "{error}");
    assert!(listing(dir.path()).is_empty(), "{:?}", listing(dir.path()));
}

#[tokio::test]
async fn offline_nothing_is_asked_for() {
    let (item, host) = wheel_and_host().await;
    let dir = tempfile::tempdir().unwrap();
    let offline = HubSettings {
        offline: true,
        ..host.settings()
    };
    let error = fetch_archived(&item, dir.path(), &offline)
        .await
        .unwrap_err();
    assert!(error.to_string().contains("HF_HUB_OFFLINE"), "{error}");
    assert_eq!(host.requests(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_blocking_form_runs_from_inside_a_runtime() {
    let (item, host) = wheel_and_host().await;
    let dir = tempfile::tempdir().unwrap();
    fetch_archived_blocking(&item, dir.path(), &host.settings()).unwrap();
    assert!(item.is_in(dir.path()));
}
