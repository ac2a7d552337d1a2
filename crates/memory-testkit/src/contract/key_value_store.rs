//! Contract of [`KeyValueStore`].

use memory_core::ports::KeyValueStore;

use super::unique;

/// Runs every key-value contract check.
pub async fn run_all(store: &dyn KeyValueStore) {
    get_set_delete(store).await;
    empty_value_is_not_absent(store).await;
    prefixes(store).await;
    compare_and_set(store).await;
    concurrent_compare_and_set_loses_no_update(store).await;
}

/// `compare_and_set` writes only over the expected value (`None`: absent).
pub async fn compare_and_set(store: &dyn KeyValueStore) {
    let key = unique("cas");
    assert!(store.compare_and_set(&key, None, "one").await.unwrap());
    assert!(!store.compare_and_set(&key, None, "again").await.unwrap());
    assert!(
        !store
            .compare_and_set(&key, Some("two".into()), "x")
            .await
            .unwrap()
    );
    assert_eq!(store.get(&key).await.unwrap().as_deref(), Some("one"));
    assert!(
        store
            .compare_and_set(&key, Some("one".into()), "")
            .await
            .unwrap()
    );
    assert!(
        store
            .compare_and_set(&key, Some(String::new()), "three")
            .await
            .unwrap()
    );
    assert_eq!(store.get(&key).await.unwrap().as_deref(), Some("three"));
    assert_eq!(store.keys(&key).await.unwrap(), vec![key.clone()]);
    store.delete(&key).await.unwrap();
}

/// Eight writers each add 1 to a counter 10 times by read + compare-and-set, retrying when
/// they lose: the counter ends at 80.
pub async fn concurrent_compare_and_set_loses_no_update(store: &dyn KeyValueStore) {
    let key = unique("cas-counter");
    let writer = |_: usize| {
        let key = key.clone();
        async move {
            for _ in 0..10 {
                loop {
                    let current = store.get(&key).await.unwrap();
                    let n: u64 = current.as_deref().map_or(0, |v| v.parse().unwrap());
                    let next = (n + 1).to_string();
                    if store
                        .compare_and_set(&key, current.clone(), &next)
                        .await
                        .unwrap()
                    {
                        break;
                    }
                    tokio::task::yield_now().await;
                }
            }
        }
    };
    let writers: Vec<_> = (0..8).map(writer).collect();
    join_all(writers).await;
    assert_eq!(store.get(&key).await.unwrap().as_deref(), Some("80"));
    store.delete(&key).await.unwrap();
}

/// Polls every future until all are done, on the current task (no spawning: the store is
/// borrowed), so their awaits interleave.
async fn join_all<F: std::future::Future<Output = ()>>(futures: Vec<F>) {
    let mut futures: Vec<_> = futures.into_iter().map(Box::pin).map(Some).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for slot in &mut futures {
            if let Some(future) = slot {
                if future.as_mut().poll(cx).is_ready() {
                    *slot = None;
                } else {
                    pending = true;
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
}

/// `set` then `get` returns the value; `set` overwrites; `delete` reports existence.
pub async fn get_set_delete(store: &dyn KeyValueStore) {
    let key = unique("kv");
    assert_eq!(store.get(&key).await.unwrap(), None);
    store.set(&key, "one").await.unwrap();
    assert_eq!(store.get(&key).await.unwrap().as_deref(), Some("one"));
    store.set(&key, "two ✓ ünïcode").await.unwrap();
    assert_eq!(
        store.get(&key).await.unwrap().as_deref(),
        Some("two ✓ ünïcode")
    );
    assert!(store.delete(&key).await.unwrap());
    assert!(!store.delete(&key).await.unwrap());
    assert_eq!(store.get(&key).await.unwrap(), None);
}

/// An empty string is a value, distinct from absence.
pub async fn empty_value_is_not_absent(store: &dyn KeyValueStore) {
    let key = unique("kv-empty");
    store.set(&key, "").await.unwrap();
    assert_eq!(store.get(&key).await.unwrap(), Some(String::new()));
}

/// `keys` and `delete_prefix` touch exactly the keys with the prefix.
pub async fn prefixes(store: &dyn KeyValueStore) {
    let prefix = unique("kv-prefix");
    for k in ["b", "a", "c/d"] {
        store.set(&format!("{prefix}/{k}"), k).await.unwrap();
    }
    let outside = format!("{prefix}-outside");
    store.set(&outside, "x").await.unwrap();
    let keys = store.keys(&format!("{prefix}/")).await.unwrap();
    assert_eq!(
        keys,
        vec![
            format!("{prefix}/a"),
            format!("{prefix}/b"),
            format!("{prefix}/c/d")
        ]
    );
    // LIKE/GLOB wildcards in a prefix are literal.
    assert!(store.keys(&format!("{prefix}%")).await.unwrap().is_empty());
    assert!(store.keys(&format!("{prefix}_")).await.unwrap().is_empty());
    assert_eq!(store.delete_prefix(&format!("{prefix}/")).await.unwrap(), 3);
    assert!(store.keys(&format!("{prefix}/")).await.unwrap().is_empty());
    assert_eq!(store.get(&outside).await.unwrap().as_deref(), Some("x"));
}
