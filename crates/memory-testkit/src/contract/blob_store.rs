//! Contract of [`BlobStore`]. Every check works under a fresh prefix of `root` (so it is
//! safe on a shared bucket) and deletes what it wrote.

use memory_core::MemoryError;
use memory_core::ports::{BlobStore, BlobStoreExt, PutMode};

use super::unique;

/// Runs every blob-store contract check under `root` (a prefix ending in `/`, or empty).
pub async fn run_all(store: &dyn BlobStore, root: &str) {
    put_get_head_delete(store, root).await;
    create_only_is_atomic_or_refused(store, root).await;
    list_pages_in_key_order(store, root).await;
    streams_are_whole_or_nothing(store, root).await;
    bad_keys_are_refused(store).await;
}

fn fresh(root: &str, tag: &str) -> String {
    format!("{root}{}/", unique(tag))
}

async fn clean(store: &dyn BlobStore, prefix: &str) {
    for blob in store.list_all(prefix).await.unwrap() {
        store.delete(&blob.key).await.unwrap();
    }
    assert!(store.list_all(prefix).await.unwrap().is_empty());
}

/// Bytes round-trip exactly (all 256 values); a put replaces; absent keys are `None`;
/// deleting an absent key is fine.
pub async fn put_get_head_delete(store: &dyn BlobStore, root: &str) {
    let p = fresh(root, "blob");
    let key = format!("{p}dir/bytes.bin");
    assert_eq!(store.get(&key).await.unwrap(), None);
    assert_eq!(store.head(&key).await.unwrap(), None);
    let bytes: Vec<u8> = (0..=255u8).cycle().take(1_000).collect();
    assert!(
        store
            .put(&key, bytes.clone(), PutMode::Overwrite)
            .await
            .unwrap()
    );
    assert_eq!(store.get(&key).await.unwrap(), Some(bytes));
    assert!(
        store
            .put(&key, b"second".to_vec(), PutMode::Overwrite)
            .await
            .unwrap()
    );
    assert_eq!(
        store.get(&key).await.unwrap().as_deref(),
        Some(&b"second"[..])
    );
    let meta = store.head(&key).await.unwrap().unwrap();
    assert_eq!((meta.key.as_str(), meta.size), (key.as_str(), 6));
    let empty = format!("{p}empty");
    store
        .put(&empty, Vec::new(), PutMode::Overwrite)
        .await
        .unwrap();
    assert_eq!(
        store.get(&empty).await.unwrap(),
        Some(Vec::new()),
        "empty is not absent"
    );
    store.delete(&key).await.unwrap();
    store.delete(&key).await.unwrap();
    assert_eq!(store.get(&key).await.unwrap(), None);
    clean(store, &p).await;
}

/// A create-only put on an existing key changes nothing; eight at once on a new key: one
/// wins. A backend that cannot make it atomic says so.
pub async fn create_only_is_atomic_or_refused(store: &dyn BlobStore, root: &str) {
    let p = fresh(root, "create");
    let key = format!("{p}once");
    if !store.capabilities().create_only {
        let error = store
            .put(&key, b"x".to_vec(), PutMode::Create)
            .await
            .unwrap_err();
        assert!(matches!(error, MemoryError::NotSupported { .. }), "{error}");
        assert_eq!(store.get(&key).await.unwrap(), None);
        return;
    }
    assert!(
        store
            .put(&key, b"first".to_vec(), PutMode::Create)
            .await
            .unwrap()
    );
    assert!(
        !store
            .put(&key, b"second".to_vec(), PutMode::Create)
            .await
            .unwrap()
    );
    assert_eq!(
        store.get(&key).await.unwrap().as_deref(),
        Some(&b"first"[..])
    );
    let race = format!("{p}race");
    let attempts = (0..8u8).map(|i| store.put(&race, vec![i], PutMode::Create));
    let won = futures::future::join_all(attempts)
        .await
        .into_iter()
        .filter(|r| *r.as_ref().unwrap())
        .count();
    assert_eq!(won, 1, "exactly one create-only put wins");
    clean(store, &p).await;
}

/// A listing holds exactly the keys under the prefix, in byte order, each once across
/// pages.
pub async fn list_pages_in_key_order(store: &dyn BlobStore, root: &str) {
    let p = fresh(root, "list");
    let keys = ["a", "b/c", "b/d", "ba", "c1", "c2", "c3"];
    for key in keys.iter().rev() {
        store
            .put(
                &format!("{p}{key}"),
                key.as_bytes().to_vec(),
                PutMode::Overwrite,
            )
            .await
            .unwrap();
    }
    store
        .put(&format!("{p}zz/outside"), Vec::new(), PutMode::Overwrite)
        .await
        .unwrap();
    let all: Vec<String> = store
        .list_all(&format!("{p}b"))
        .await
        .unwrap()
        .into_iter()
        .map(|b| b.key)
        .collect();
    assert_eq!(
        all,
        [format!("{p}b/c"), format!("{p}b/d"), format!("{p}ba")]
    );
    let mut paged = Vec::new();
    let mut cursor = None;
    loop {
        let page = store.list(&p, cursor, 2).await.unwrap();
        assert!(page.blobs.len() <= 2);
        paged.extend(page.blobs.into_iter().map(|b| (b.key, b.size)));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    let mut expected: Vec<(String, u64)> = keys
        .iter()
        .map(|k| (format!("{p}{k}"), k.len() as u64))
        .collect();
    expected.push((format!("{p}zz/outside"), 0));
    assert_eq!(paged, expected);
    clean(store, &p).await;
}

/// A streamed write of several chunks (12 MiB: past S3's 5 MiB multipart minimum) is
/// invisible until finished and reads back whole in order; an aborted one leaves nothing.
pub async fn streams_are_whole_or_nothing(store: &dyn BlobStore, root: &str) {
    let p = fresh(root, "stream");
    let key = format!("{p}big.bin");
    let chunk = |i: usize| -> Vec<u8> {
        (0..1024 * 1024)
            .map(|j| ((i * 7 + j) % 251) as u8)
            .collect()
    };
    let mut upload = store.upload(&key).await.unwrap();
    for i in 0..12 {
        upload.write(chunk(i)).await.unwrap();
    }
    assert_eq!(
        store.head(&key).await.unwrap(),
        None,
        "invisible until finished"
    );
    assert_eq!(upload.finish().await.unwrap(), 12 * 1024 * 1024);
    let mut download = store.download(&key).await.unwrap().unwrap();
    assert_eq!(download.size(), 12 * 1024 * 1024);
    let mut read = Vec::new();
    while let Some(part) = download.next_chunk().await.unwrap() {
        read.extend(part);
    }
    let expected: Vec<u8> = (0..12).flat_map(chunk).collect();
    assert!(read == expected, "a download returns the bytes in order");
    assert!(
        store
            .download(&format!("{p}absent"))
            .await
            .unwrap()
            .is_none()
    );

    let dropped = format!("{p}aborted.bin");
    let mut upload = store.upload(&dropped).await.unwrap();
    upload.write(chunk(0)).await.unwrap();
    upload.abort().await.unwrap();
    assert_eq!(store.head(&dropped).await.unwrap(), None);
    clean(store, &p).await;
}

/// Keys that are not plain relative paths are invalid input, before any I/O.
pub async fn bad_keys_are_refused(store: &dyn BlobStore) {
    for bad in [
        "",
        "/abs",
        "a//b",
        "../escape",
        "a/../b",
        "dir/",
        ".hidden",
        "a\\b",
        "nul\u{0}",
    ] {
        let error = store
            .put(bad, b"x".to_vec(), PutMode::Overwrite)
            .await
            .unwrap_err();
        assert!(
            matches!(error, MemoryError::InvalidInput { .. }),
            "{bad:?}: {error}"
        );
        assert!(store.get(bad).await.is_err(), "{bad:?}");
    }
    assert!(store.list("../", None, 10).await.is_err());
}
