//! Contract of [`KeyValueStore`].

use memory_core::ports::KeyValueStore;

use super::unique;

/// Runs every key-value contract check.
pub async fn run_all(store: &dyn KeyValueStore) {
    get_set_delete(store).await;
    empty_value_is_not_absent(store).await;
    prefixes(store).await;
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
