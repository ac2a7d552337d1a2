//! In-memory context block providers (read-only and writable). The engine builds the
//! searchable and skill providers over the `TextIndex` and `SkillStore` ports.

use std::sync::Mutex;

use async_trait::async_trait;
use memory_core::Result;
use memory_core::ports::{ContextProvider, WritableContextProvider};

use super::lock;

/// A read-only block with fixed content.
#[derive(Debug, Clone)]
pub struct StaticBlock(pub Option<String>);

#[async_trait]
impl ContextProvider for StaticBlock {
    async fn get(&self) -> Result<Option<String>> {
        Ok(self.0.clone())
    }
}

/// A writable block held in memory.
#[derive(Debug, Default)]
pub struct InMemoryBlock(Mutex<Option<String>>);

impl InMemoryBlock {
    /// A block with initial content.
    pub fn new(initial: Option<String>) -> Self {
        Self(Mutex::new(initial))
    }
}

#[async_trait]
impl ContextProvider for InMemoryBlock {
    async fn get(&self) -> Result<Option<String>> {
        Ok(lock(&self.0).clone())
    }
}

#[async_trait]
impl WritableContextProvider for InMemoryBlock {
    async fn set(&self, content: &str) -> Result<()> {
        *lock(&self.0) = Some(content.to_owned());
        Ok(())
    }

    async fn compare_and_set(&self, expected: Option<&str>, content: &str) -> Result<bool> {
        let mut stored = lock(&self.0);
        if stored.as_deref() != expected {
            return Ok(false);
        }
        *stored = Some(content.to_owned());
        Ok(true)
    }
}
