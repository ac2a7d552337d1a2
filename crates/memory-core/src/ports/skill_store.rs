use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::Result;

/// A skill's key and description, as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillSummary {
    /// The key.
    pub key: String,
    /// One-line description.
    pub description: Option<String>,
}

/// Loadable documents (skills) with descriptions: SQLite rows, Markdown files, S3/R2 objects.
///
/// # Contract
/// - `list` is sorted by key; `get` of an unknown key is `None`.
/// - `put` replaces content and description; `delete` returns whether the key existed.
#[async_trait]
pub trait SkillStore: Send + Sync {
    /// Every skill.
    async fn list(&self) -> Result<Vec<SkillSummary>>;
    /// One skill's content.
    async fn get(&self, key: &str) -> Result<Option<String>>;
    /// Stores a skill.
    async fn put(&self, key: &str, content: &str, description: Option<String>) -> Result<()>;
    /// Removes a skill.
    async fn delete(&self, key: &str) -> Result<bool>;
}
