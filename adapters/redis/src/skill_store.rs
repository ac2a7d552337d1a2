//! Skills on Redis: two hashes per collection, so that listing the index reads the
//! descriptions only, never the documents.

use async_trait::async_trait;
use memory_core::Result;
use memory_core::ports::{SkillStore, SkillSummary};

use crate::database::RedisDatabase;
use crate::error::{corrupt, redis};
use memory_core::size::check_item_size;

/// [`SkillStore`] on Redis: `<prefix>skills:<collection>:content` (key → document) and
/// `<prefix>skills:<collection>:about` (key → description as JSON, `null` for none), written
/// together in one transaction.
#[derive(Debug, Clone)]
pub struct RedisSkillStore {
    db: RedisDatabase,
    content: String,
    about: String,
}

impl RedisSkillStore {
    /// The skills of `collection` (a block's label).
    pub fn new(db: RedisDatabase, collection: &str) -> Self {
        let content = db.key(&format!("skills:{collection}:content"));
        let about = db.key(&format!("skills:{collection}:about"));
        Self { db, content, about }
    }
}

#[async_trait]
impl SkillStore for RedisSkillStore {
    async fn list(&self) -> Result<Vec<SkillSummary>> {
        let pairs: Vec<String> = redis::cmd("HGETALL")
            .arg(&self.about)
            .query_async(&mut self.db.connection.clone())
            .await
            .map_err(redis)?;
        let mut skills = pairs
            .chunks_exact(2)
            .map(|pair| {
                let description: Option<String> = serde_json::from_str(&pair[1])
                    .map_err(|e| corrupt("skill description", e.to_string()))?;
                Ok(SkillSummary {
                    key: pair[0].clone(),
                    description,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        skills.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(skills)
    }

    async fn get(&self, key: &str) -> Result<Option<String>> {
        redis::cmd("HGET")
            .arg(&self.content)
            .arg(key)
            .query_async(&mut self.db.connection.clone())
            .await
            .map_err(redis)
    }

    async fn put(&self, key: &str, content: &str, description: Option<String>) -> Result<()> {
        check_item_size(&format!("skill {key:?}"), content.len())?;
        let _: () = redis::pipe()
            .atomic()
            .cmd("HSET")
            .arg(&self.content)
            .arg(key)
            .arg(content)
            .ignore()
            .cmd("HSET")
            .arg(&self.about)
            .arg(key)
            .arg(serde_json::to_string(&description)?)
            .ignore()
            .query_async(&mut self.db.connection.clone())
            .await
            .map_err(redis)?;
        Ok(())
    }

    async fn delete(&self, key: &str) -> Result<bool> {
        let (removed, _): (u64, u64) = redis::pipe()
            .atomic()
            .cmd("HDEL")
            .arg(&self.content)
            .arg(key)
            .cmd("HDEL")
            .arg(&self.about)
            .arg(key)
            .query_async(&mut self.db.connection.clone())
            .await
            .map_err(redis)?;
        Ok(removed == 1)
    }
}
