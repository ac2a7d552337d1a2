use async_trait::async_trait;

use crate::Result;

/// Small named string values: writable context blocks, cached system prompts, loaded-skill
/// sets.
///
/// # Contract
/// - `get` distinguishes "absent" (`None`) from an empty value (`Some("")`).
/// - `set` overwrites; `delete` returns whether the key existed.
/// - `keys(prefix)` lists keys starting with `prefix`, in ascending byte order;
///   `delete_prefix` removes exactly those keys.
/// - `compare_and_set` is atomic: of writers that read the same value and each try to
///   replace it, exactly one succeeds and the others get `false` (no update is lost).
#[async_trait]
pub trait KeyValueStore: Send + Sync {
    /// The value under `key`.
    async fn get(&self, key: &str) -> Result<Option<String>>;
    /// Stores `value` under `key`.
    async fn set(&self, key: &str, value: &str) -> Result<()>;
    /// Removes `key`.
    async fn delete(&self, key: &str) -> Result<bool>;
    /// Keys with the prefix, sorted.
    async fn keys(&self, prefix: &str) -> Result<Vec<String>>;
    /// Removes every key with the prefix; returns how many.
    async fn delete_prefix(&self, prefix: &str) -> Result<u64>;
    /// Stores `value` under `key` only if the current value is `expected` (`None`: the key
    /// is absent); true when stored, false (and nothing changed) when the value was another.
    async fn compare_and_set(
        &self,
        key: &str,
        expected: Option<String>,
        value: &str,
    ) -> Result<bool>;
}
