//! The session registry on Redis: a hash per session, and one sorted set whose members
//! (`<updated_at>:<creation order>:<id>`, all scores 0) sort most recently updated first,
//! ties by most recently created. Every change of `updated_at` moves the member in the same
//! Lua script, so the order and the records never disagree.

use async_trait::async_trait;
use memory_core::ports::SessionRegistry;
use memory_core::{
    MemoryError, NewSession, Result, SessionId, SessionInfo, SessionPatch, SessionUsage, Timestamp,
};

use crate::database::RedisDatabase;
use crate::error::{corrupt, redis};

/// Inserts a session unless its hash exists: KEYS = hash, order set, creation counter;
/// ARGV = id, encoded `updated_at`, then field/value pairs. 1 when inserted.
const INSERT: &str = r"
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local ord = redis.call('INCR', KEYS[3])
local member = ARGV[2] .. ':' .. string.format('%020d', ord) .. ':' .. ARGV[1]
redis.call('HSET', KEYS[1], 'ord', ord, 'member', member, unpack(ARGV, 3))
redis.call('ZADD', KEYS[2], 0, member)
return 1
";

/// Changes a session and moves it in the order: KEYS = hash, order set; ARGV = id,
/// encoded new `updated_at`, input tokens, output tokens and cost to add, then field/value
/// pairs to set. The record after the change, or nil when there is no such session.
const CHANGE: &str = r"
if redis.call('EXISTS', KEYS[1]) == 0 then return nil end
local old = redis.call('HGET', KEYS[1], 'member')
local ord = tonumber(redis.call('HGET', KEYS[1], 'ord'))
local member = ARGV[2] .. ':' .. string.format('%020d', ord) .. ':' .. ARGV[1]
redis.call('ZREM', KEYS[2], old)
redis.call('ZADD', KEYS[2], 0, member)
if ARGV[3] ~= '0' then redis.call('HINCRBY', KEYS[1], 'input_tokens', ARGV[3]) end
if ARGV[4] ~= '0' then redis.call('HINCRBY', KEYS[1], 'output_tokens', ARGV[4]) end
if ARGV[5] ~= '0' then redis.call('HINCRBYFLOAT', KEYS[1], 'cost', ARGV[5]) end
if #ARGV > 5 then
  redis.call('HSET', KEYS[1], 'member', member, unpack(ARGV, 6))
else
  redis.call('HSET', KEYS[1], 'member', member)
end
return redis.call('HGETALL', KEYS[1])
";

/// Names a session that has no name: KEYS = hash; ARGV = the name. 0 when there is no
/// session (deleted meanwhile: nothing is written).
const NAME_IF_UNNAMED: &str = r"
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSETNX', KEYS[1], 'name', ARGV[1])
return 1
";

/// Deletes a session's record and its place in the order: KEYS = hash, order set.
const DELETE: &str = r"
local member = redis.call('HGET', KEYS[1], 'member')
if not member then return 0 end
redis.call('ZREM', KEYS[2], member)
redis.call('DEL', KEYS[1])
return 1
";

/// [`SessionRegistry`] on Redis: `<prefix>session:<id>` (a hash) and `<prefix>sessions`
/// (the order).
#[derive(Debug, Clone)]
pub struct RedisSessionRegistry {
    db: RedisDatabase,
    insert: redis::Script,
    change: redis::Script,
    name_if_unnamed: redis::Script,
    delete: redis::Script,
}

/// `millis` as 20 digits that sort like the numbers (negative times included).
fn encode_time(millis: i64) -> String {
    let shifted = i128::from(millis) + (1i128 << 63);
    format!("{shifted:020}")
}

/// The length of a member's `<updated_at>:<creation order>:` head.
const MEMBER_HEAD: usize = 20 + 1 + 20 + 1;

impl RedisSessionRegistry {
    /// The registry of `db`.
    pub fn new(db: RedisDatabase) -> Self {
        Self {
            db,
            insert: redis::Script::new(INSERT),
            change: redis::Script::new(CHANGE),
            name_if_unnamed: redis::Script::new(NAME_IF_UNNAMED),
            delete: redis::Script::new(DELETE),
        }
    }

    fn hash(&self, id: &SessionId) -> String {
        self.db.key(&format!("session:{id}"))
    }

    fn order(&self) -> String {
        self.db.key("sessions")
    }

    fn counter(&self) -> String {
        self.db.key("sessions:created")
    }

    async fn insert(&self, info: &SessionInfo) -> Result<bool> {
        let mut invocation = self.insert.prepare_invoke();
        invocation
            .key(self.hash(&info.id))
            .key(self.order())
            .key(self.counter())
            .arg(info.id.as_str())
            .arg(encode_time(info.updated_at.millis()));
        for (field, value) in fields(info) {
            invocation.arg(field).arg(value);
        }
        let mut connection = self.db.connection.clone();
        let inserted: i64 = invocation
            .invoke_async(&mut connection)
            .await
            .map_err(redis)?;
        Ok(inserted == 1)
    }

    async fn change(
        &self,
        id: &SessionId,
        now: Timestamp,
        usage: SessionUsage,
        set: Vec<(&'static str, String)>,
    ) -> Result<SessionInfo> {
        let mut invocation = self.change.prepare_invoke();
        invocation
            .key(self.hash(id))
            .key(self.order())
            .arg(id.as_str())
            .arg(encode_time(now.millis()))
            .arg(usage.input_tokens.min(i64::MAX as u64))
            .arg(usage.output_tokens.min(i64::MAX as u64))
            .arg(if usage.cost == 0.0 {
                "0".to_owned()
            } else {
                usage.cost.to_string()
            })
            .arg("updated_at")
            .arg(now.millis());
        for (field, value) in set {
            invocation.arg(field).arg(value);
        }
        let mut connection = self.db.connection.clone();
        let record: Option<Vec<String>> = invocation
            .invoke_async(&mut connection)
            .await
            .map_err(redis)?;
        match record {
            Some(pairs) => from_pairs(id, &pairs),
            None => Err(MemoryError::not_found("session", id.as_str())),
        }
    }
}

/// The stored fields of a record (absent optionals are absent fields).
fn fields(info: &SessionInfo) -> Vec<(&'static str, String)> {
    // Counters are 64-bit signed on the server (HINCRBY): clamped, as PostgreSQL does.
    let clamp = |n: u64| n.min(i64::MAX as u64).to_string();
    let mut out = vec![
        ("input_tokens", clamp(info.usage.input_tokens)),
        ("output_tokens", clamp(info.usage.output_tokens)),
        ("cost", info.usage.cost.to_string()),
        ("created_at", info.created_at.millis().to_string()),
        ("updated_at", info.updated_at.millis().to_string()),
    ];
    let optional = [
        ("name", info.name.clone()),
        (
            "parent_session_id",
            info.parent_session_id.as_ref().map(ToString::to_string),
        ),
        ("model", info.model.clone()),
        ("source", info.source.clone()),
        ("end_reason", info.end_reason.clone()),
        ("profile", info.profile.clone()),
    ];
    out.extend(
        optional
            .into_iter()
            .filter_map(|(field, value)| value.map(|v| (field, v))),
    );
    out
}

/// A record from `HGETALL`'s field/value pairs.
fn from_pairs(id: &SessionId, pairs: &[String]) -> Result<SessionInfo> {
    let map = crate::database::hash_fields(pairs);
    let text = |field: &str| map.get(field).map(|v| (*v).to_owned());
    let number = |field: &str| -> Result<i64> {
        map.get(field)
            .ok_or_else(|| corrupt("session", format!("{id} has no {field}")))?
            .parse::<i64>()
            .map_err(|e| corrupt("session", format!("{id}.{field}: {e}")))
    };
    let count = |field: &str| -> Result<u64> { Ok(u64::try_from(number(field)?).unwrap_or(0)) };
    let cost = map
        .get("cost")
        .map(|v| v.parse::<f64>())
        .transpose()
        .map_err(|e| corrupt("session", format!("{id}.cost: {e}")))?
        .unwrap_or(0.0);
    Ok(SessionInfo {
        id: id.clone(),
        name: text("name"),
        parent_session_id: text("parent_session_id").map(SessionId::new).transpose()?,
        model: text("model"),
        source: text("source"),
        usage: SessionUsage {
            input_tokens: count("input_tokens")?,
            output_tokens: count("output_tokens")?,
            cost,
        },
        end_reason: text("end_reason"),
        // Unbinding writes an empty value (a profile name is never empty).
        profile: text("profile").filter(|p| !p.is_empty()),
        created_at: Timestamp(number("created_at")?),
        updated_at: Timestamp(number("updated_at")?),
    })
}

#[async_trait]
impl SessionRegistry for RedisSessionRegistry {
    async fn create(
        &self,
        id: &SessionId,
        spec: &NewSession,
        now: Timestamp,
    ) -> Result<SessionInfo> {
        let info = SessionInfo {
            id: id.clone(),
            name: spec.name.clone(),
            parent_session_id: spec.parent_session_id.clone(),
            model: spec.model.clone(),
            source: spec.source.clone(),
            usage: SessionUsage::default(),
            end_reason: None,
            profile: spec.profile.clone(),
            created_at: now,
            updated_at: now,
        };
        if self.insert(&info).await? {
            Ok(info)
        } else {
            Err(MemoryError::AlreadyExists {
                kind: "session",
                id: id.to_string(),
            })
        }
    }

    async fn restore(&self, info: &SessionInfo) -> Result<bool> {
        self.insert(info).await
    }

    async fn get(&self, id: &SessionId) -> Result<Option<SessionInfo>> {
        let mut connection = self.db.connection.clone();
        let pairs: Vec<String> = redis::cmd("HGETALL")
            .arg(self.hash(id))
            .query_async(&mut connection)
            .await
            .map_err(redis)?;
        if pairs.is_empty() {
            return Ok(None);
        }
        from_pairs(id, &pairs).map(Some)
    }

    async fn list(&self, limit: usize, offset: usize) -> Result<Vec<SessionInfo>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let mut connection = self.db.connection.clone();
        let members: Vec<String> = redis::cmd("ZREVRANGEBYLEX")
            .arg(self.order())
            .arg("+")
            .arg("-")
            .arg("LIMIT")
            .arg(offset)
            .arg(limit)
            .query_async(&mut connection)
            .await
            .map_err(redis)?;
        let ids = members
            .iter()
            .map(|m| {
                m.get(MEMBER_HEAD..)
                    .ok_or_else(|| corrupt("session order", m.clone()))
                    .and_then(SessionId::new)
            })
            .collect::<Result<Vec<_>>>()?;
        let mut pipe = redis::pipe();
        for id in &ids {
            pipe.cmd("HGETALL").arg(self.hash(id));
        }
        let records: Vec<Vec<String>> = pipe.query_async(&mut connection).await.map_err(redis)?;
        // A session deleted between the two reads is left out.
        ids.iter()
            .zip(records)
            .filter(|(_, pairs)| !pairs.is_empty())
            .map(|(id, pairs)| from_pairs(id, &pairs))
            .collect()
    }

    async fn update(
        &self,
        id: &SessionId,
        patch: &SessionPatch,
        now: Timestamp,
    ) -> Result<SessionInfo> {
        let set = [
            ("name", patch.name.clone()),
            ("model", patch.model.clone()),
            ("end_reason", patch.end_reason.clone()),
            (
                "profile",
                patch.profile.clone().map(Option::unwrap_or_default),
            ),
        ]
        .into_iter()
        .filter_map(|(field, value)| value.map(|v| (field, v)))
        .collect();
        self.change(id, now, SessionUsage::default(), set).await
    }

    async fn add_usage(
        &self,
        id: &SessionId,
        usage: SessionUsage,
        now: Timestamp,
    ) -> Result<SessionInfo> {
        self.change(id, now, usage, Vec::new()).await
    }

    async fn touch(&self, id: &SessionId, now: Timestamp) -> Result<()> {
        self.touch_and_name(id, now, None).await
    }

    /// The touch returns the record, so a named session costs no second call; an unnamed
    /// one is named by a script that sets the field only where it is absent.
    async fn touch_and_name(
        &self,
        id: &SessionId,
        now: Timestamp,
        name: Option<String>,
    ) -> Result<()> {
        let info = self
            .change(id, now, SessionUsage::default(), Vec::new())
            .await?;
        if let (Some(name), None) = (name, &info.name) {
            let mut connection = self.db.connection.clone();
            let _found: i64 = self
                .name_if_unnamed
                .key(self.hash(id))
                .arg(name)
                .invoke_async(&mut connection)
                .await
                .map_err(redis)?;
        }
        Ok(())
    }

    async fn delete(&self, id: &SessionId) -> Result<bool> {
        let mut connection = self.db.connection.clone();
        let deleted: i64 = self
            .delete
            .key(self.hash(id))
            .key(self.order())
            .invoke_async(&mut connection)
            .await
            .map_err(redis)?;
        Ok(deleted == 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoded_times_sort_like_the_numbers() {
        let times = [i64::MIN, -5, 0, 1, 1_700_000_000_000, i64::MAX];
        let encoded: Vec<String> = times.iter().map(|t| encode_time(*t)).collect();
        assert!(encoded.windows(2).all(|w| w[0] < w[1]));
        assert!(encoded.iter().all(|e| e.len() == 20));
    }
}
