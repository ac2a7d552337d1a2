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
}
