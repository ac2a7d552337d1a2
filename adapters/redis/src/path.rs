//! Reading a root-to-leaf path in three round trips, whatever its length, with all the work
//! in Redis's own commands (a script that walked 100,000 messages would block the server
//! for the whole walk):
//! 1. a script resolves the leaf and hops run to run, replying with the path's segments
//!    (`run`, last sequence number on the path), one per linear run, and the session's
//!    generation token;
//! 2. one pipelined `ZRANGEBYLEX` per segment reads the run's sequence numbers in order;
//! 3. pipelined `HMGET`s read the nodes or contents, and a final `HMGET` checks the
//!    generation.
//!
//! What happens in between cannot mix two trees. An append never changes an existing path
//! (its sequence number is larger than any range read). A delete removes a message from its
//! run and re-links its children to its parent, so the segments stay right and a range read
//! after it simply lacks the message; one deleted after step 2 reads as nil and is dropped.
//! Either way the result is the leaf's path as it is after the delete. Only the leaf's own
//! deletion (a nil leaf) or a clear (a new generation: sequence numbers start over) sends the
//! read back to step 1, so readers never starve behind a stream of deletes.

use memory_core::{MemoryError, Result};

use crate::append::parse_seq;
use crate::database::RedisDatabase;
use crate::error::redis;
use crate::message_store::{SessionKeys, member_seq, run_member};

/// How often a read starts again after its leaf was deleted or the session cleared under
/// it, before it reports
/// [`MemoryError::Conflict`].
const READ_ATTEMPTS: u32 = 8;
/// Fields per `HMGET`.
const CHUNK: usize = 1_000;

/// The segments of the path to a leaf: KEYS = ids, nodes, order, runs, meta; ARGV = the
/// leaf id (empty for the latest leaf). Replies with the generation token, then `run, upto`
/// per segment, leaf first; an empty reply for an empty session;
/// nil when the named leaf is not in the session.
pub(crate) const SEGMENTS: &str = r"
local leaf
if ARGV[1] == '' then
  local top = redis.call('ZREVRANGE', KEYS[3], 0, 0)
  if #top == 0 then return {} end
  leaf = top[1]
else
  leaf = redis.call('HGET', KEYS[1], ARGV[1])
  if not leaf then return false end
end
local out = {redis.call('HGET', KEYS[5], 'gen') or ''}
local cur = leaf
while cur do
  local run = redis.call('HGET', KEYS[2], cur):match('^[^|]*|([^|]*)|')
  out[#out + 1] = run
  out[#out + 1] = cur
  local first = redis.call('ZRANGEBYLEX', KEYS[4], '[' .. string.format('%016d:', tonumber(run)),
    '+', 'LIMIT', 0, 1)[1]
  local parent = redis.call('HGET', KEYS[2], string.format('%d', tonumber(first:sub(18))))
    :match('^([^|]*)|')
  if parent == '' then cur = nil else cur = parent end
end
return out
";

/// Runs the segments script: the generation token, then `run, upto` per segment, leaf
/// first (empty for an empty session). [`MemoryError::NotFound`] for an unknown leaf.
async fn segments_of(
    db: &RedisDatabase,
    segments: &redis::Script,
    keys: &SessionKeys,
    leaf: &Option<String>,
) -> Result<Vec<String>> {
    let reply: Option<Vec<String>> = db
        .invoke(
            segments
                .key(&keys.ids)
                .key(&keys.nodes)
                .key(&keys.order)
                .key(&keys.runs)
                .key(&keys.meta)
                .arg(leaf.as_deref().unwrap_or("")),
        )
        .await?;
    reply.ok_or_else(|| MemoryError::not_found("message", leaf.clone().unwrap_or_default()))
}

/// The values of `field` (the session's `nodes` or `content` hash) along the path to `leaf`
/// (the latest leaf when `None`), root first. [`MemoryError::NotFound`] for an unknown leaf.
pub(crate) async fn read(
    db: &RedisDatabase,
    segments: &redis::Script,
    keys: &SessionKeys,
    leaf: &Option<String>,
    field: &str,
) -> Result<Vec<String>> {
    let mut connection = db.connection.clone();
    for _ in 0..READ_ATTEMPTS {
        let reply = segments_of(db, segments, keys, leaf).await?;
        let [generation, rest @ ..] = reply.as_slice() else {
            return Ok(Vec::new());
        };
        let mut ranges = redis::pipe();
        for segment in rest.chunks_exact(2).rev() {
            let (run, upto) = (parse_seq(&segment[0])?, parse_seq(&segment[1])?);
            ranges
                .cmd("ZRANGEBYLEX")
                .arg(&keys.runs)
                .arg(format!("[{run:016}:"))
                .arg(format!("[{}", run_member(run, upto)));
        }
        let members: Vec<Vec<String>> = ranges.query_async(&mut connection).await.map_err(redis)?;
        let seqs = members
            .iter()
            .flatten()
            .map(|m| member_seq(m))
            .collect::<Result<Vec<_>>>()?;
        if let Some(values) =
            values_if_current(&mut connection, keys, field, &seqs, generation, true).await?
        {
            return Ok(values);
        }
    }
    Err(MemoryError::Conflict {
        message: format!(
            "the leaf of the path was deleted or the session cleared under the read, {READ_ATTEMPTS} times; retry"
        ),
    })
}

/// The last `limit` nodes (the session's `nodes` hash values) of the path to `leaf`, root-ward
/// first, and the path's length, in four round trips: the segments script, one pipelined
/// `ZLEXCOUNT` per run, `ZREVRANGEBYLEX … LIMIT` on the leaf-side runs the tail reaches, and
/// the `HMGET`s with the generation check. Restarts and conflicts as in [`read`].
pub(crate) async fn read_tail(
    db: &RedisDatabase,
    segments: &redis::Script,
    keys: &SessionKeys,
    leaf: &Option<String>,
    limit: usize,
) -> Result<(Vec<String>, usize)> {
    let mut connection = db.connection.clone();
    for _ in 0..READ_ATTEMPTS {
        let reply = segments_of(db, segments, keys, leaf).await?;
        let [generation, rest @ ..] = reply.as_slice() else {
            return Ok((Vec::new(), 0));
        };
        // Leaf-side run first.
        let runs = rest
            .chunks_exact(2)
            .map(|segment| Ok((parse_seq(&segment[0])?, parse_seq(&segment[1])?)))
            .collect::<Result<Vec<(i64, i64)>>>()?;
        let mut counting = redis::pipe();
        for (run, upto) in &runs {
            counting
                .cmd("ZLEXCOUNT")
                .arg(&keys.runs)
                .arg(format!("[{run:016}:"))
                .arg(format!("[{}", run_member(*run, *upto)));
        }
        let counts: Vec<usize> = counting.query_async(&mut connection).await.map_err(redis)?;
        let total = counts.iter().sum();
        let mut ranges = redis::pipe();
        let mut left = limit;
        for ((run, upto), count) in runs.iter().zip(&counts) {
            if left == 0 {
                break;
            }
            ranges
                .cmd("ZREVRANGEBYLEX")
                .arg(&keys.runs)
                .arg(format!("[{}", run_member(*run, *upto)))
                .arg(format!("[{run:016}:"))
                .arg("LIMIT")
                .arg(0)
                .arg(left.min(i64::MAX as usize));
            left = left.saturating_sub(*count);
        }
        let members: Vec<Vec<String>> = if limit == 0 {
            Vec::new()
        } else {
            ranges.query_async(&mut connection).await.map_err(redis)?
        };
        let mut seqs = members
            .iter()
            .flatten()
            .map(|m| member_seq(m))
            .collect::<Result<Vec<_>>>()?;
        seqs.truncate(limit);
        seqs.reverse();
        let nodes = &keys.nodes;
        if let Some(values) =
            values_if_current(&mut connection, keys, nodes, &seqs, generation, limit > 0).await?
        {
            return Ok((values, total));
        }
    }
    Err(MemoryError::Conflict {
        message: format!(
            "the leaf of the path was deleted or the session cleared under the read, {READ_ATTEMPTS} times; retry"
        ),
    })
}

/// The values of `field` for `seqs` (chunked `HMGET`s), then the generation: `None` when the
/// session was cleared since `generation` was read, or (with `leaf_last`) the last of `seqs`,
/// the leaf, was deleted: the read starts again. Messages deleted in between are dropped.
async fn values_if_current(
    connection: &mut redis::aio::ConnectionManager,
    keys: &SessionKeys,
    field: &str,
    seqs: &[String],
    generation: &str,
    leaf_last: bool,
) -> Result<Option<Vec<String>>> {
    let mut values = redis::pipe();
    for chunk in seqs.chunks(CHUNK) {
        values.cmd("HMGET").arg(field).arg(chunk);
    }
    values.cmd("HMGET").arg(&keys.meta).arg("gen");
    let mut replies: Vec<Vec<Option<String>>> =
        values.query_async(connection).await.map_err(redis)?;
    let now = replies.pop().unwrap_or_default().pop().flatten();
    let values: Vec<Option<String>> = replies.into_iter().flatten().collect();
    let leaf_present = !leaf_last || values.last().is_some_and(Option::is_some);
    if now.as_deref() != Some(generation) || !leaf_present {
        return Ok(None);
    }
    Ok(Some(values.into_iter().flatten().collect()))
}
