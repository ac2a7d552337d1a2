//! Key-value on Redis: each value a string key, and one sorted set of the keys so that a
//! prefix is listed in byte order without scanning the keyspace.

use async_trait::async_trait;
use memory_core::Result;
use memory_core::ports::KeyValueStore;

use crate::database::RedisDatabase;
use crate::error::redis;
use memory_core::size::check_item_size;

/// Keys removed per round trip by `delete_prefix`.
const BATCH: usize = 1_000;

/// Sets a value only if it is the expected one: KEYS = value key, index; ARGV = whether a
/// value is expected (`1`/`0`), the expected value, the new value, the key's name. 1 when set.
const COMPARE_AND_SET: &str = r"
local current = redis.call('GET', KEYS[1])
if ARGV[1] == '0' then
  if current then return 0 end
elseif current ~= ARGV[2] then
  return 0
end
redis.call('SET', KEYS[1], ARGV[3])
redis.call('ZADD', KEYS[2], 0, ARGV[4])
return 1
";

/// Refuses a value over the adapter's row limit ([`MAX_MESSAGE_BYTES`]) before any write.
fn check_size(key: &str, value: &str) -> Result<()> {
    check_item_size(&format!("value of {key:?}"), value.len())
}

/// [`KeyValueStore`] on Redis: `<prefix>kv:v:<key>` holds each value and `<prefix>kv:index`
/// lists the keys (a sorted set, all scores 0, so members sort in byte order).
#[derive(Debug, Clone)]
pub struct RedisKeyValueStore {
    db: RedisDatabase,
    compare_and_set: redis::Script,
}

impl RedisKeyValueStore {
    /// The key-value store of `db`.
    pub fn new(db: RedisDatabase) -> Self {
        Self {
            db,
            compare_and_set: redis::Script::new(COMPARE_AND_SET),
        }
    }

    fn value_key(&self, key: &str) -> String {
        self.db.key(&format!("kv:v:{key}"))
    }

    fn index(&self) -> String {
        self.db.key("kv:index")
    }

    /// The lexicographic range of keys starting with `prefix` (keys are UTF-8, so no key
    /// holds the byte 0xff).
    fn range(prefix: &str) -> (Vec<u8>, Vec<u8>) {
        if prefix.is_empty() {
            return (b"-".to_vec(), b"+".to_vec());
        }
        let mut min = b"[".to_vec();
        min.extend_from_slice(prefix.as_bytes());
        let mut max = min.clone();
        max.push(0xff);
        (min, max)
    }
}

#[async_trait]
impl KeyValueStore for RedisKeyValueStore {
    async fn get(&self, key: &str) -> Result<Option<String>> {
        let mut connection = self.db.connection.clone();
        redis::cmd("GET")
            .arg(self.value_key(key))
            .query_async(&mut connection)
            .await
            .map_err(redis)
    }

    async fn set(&self, key: &str, value: &str) -> Result<()> {
        check_size(key, value)?;
        let mut connection = self.db.connection.clone();
        redis::pipe()
            .atomic()
            .cmd("SET")
            .arg(self.value_key(key))
            .arg(value)
            .ignore()
            .cmd("ZADD")
            .arg(self.index())
            .arg(0)
            .arg(key)
            .ignore()
            .query_async::<()>(&mut connection)
            .await
            .map_err(redis)
    }

    async fn delete(&self, key: &str) -> Result<bool> {
        let mut connection = self.db.connection.clone();
        let (deleted, _): (u64, u64) = redis::pipe()
            .atomic()
            .cmd("DEL")
            .arg(self.value_key(key))
            .cmd("ZREM")
            .arg(self.index())
            .arg(key)
            .query_async(&mut connection)
            .await
            .map_err(redis)?;
        Ok(deleted == 1)
    }

    async fn keys(&self, prefix: &str) -> Result<Vec<String>> {
        let (min, max) = Self::range(prefix);
        let mut connection = self.db.connection.clone();
        redis::cmd("ZRANGEBYLEX")
            .arg(self.index())
            .arg(min)
            .arg(max)
            .query_async(&mut connection)
            .await
            .map_err(redis)
    }

    async fn compare_and_set(
        &self,
        key: &str,
        expected: Option<String>,
        value: &str,
    ) -> Result<bool> {
        check_size(key, value)?;
        let mut connection = self.db.connection.clone();
        let set: i64 = self
            .compare_and_set
            .key(self.value_key(key))
            .key(self.index())
            .arg(if expected.is_some() { "1" } else { "0" })
            .arg(expected.unwrap_or_default())
            .arg(value)
            .arg(key)
            .invoke_async(&mut connection)
            .await
            .map_err(redis)?;
        Ok(set == 1)
    }

    async fn delete_prefix(&self, prefix: &str) -> Result<u64> {
        let keys = self.keys(prefix).await?;
        let mut connection = self.db.connection.clone();
        let mut removed = 0u64;
        for chunk in keys.chunks(BATCH) {
            let values: Vec<String> = chunk.iter().map(|k| self.value_key(k)).collect();
            let (deleted, _): (u64, u64) = redis::pipe()
                .atomic()
                .cmd("UNLINK")
                .arg(&values)
                .cmd("ZREM")
                .arg(self.index())
                .arg(chunk)
                .query_async(&mut connection)
                .await
                .map_err(redis)?;
            removed += deleted;
        }
        Ok(removed)
    }
}
