//! Appending a batch in two round trips: one read-only script reads what the plan needs (the
//! session's version and counter, its latest leaf, which of the batch's ids it holds, the
//! explicit parents), [`memory_core::append_plan`] plans parents, runs and outcomes in memory,
//! and one script writes every row if the session's version is still the one read. A writer
//! that lost the race (another append or delete came first) reads and plans again.

use std::collections::{HashMap, HashSet};

use memory_core::append_plan::{
    AppendBatch, AppendPlan, PlannedRow, StoredParent, TreeNode, plan_append,
};
use memory_core::{Parent, Result};

use crate::error::corrupt;
use crate::message_store::{Encoded, Node, SessionKeys, run_member};

/// Reads what planning needs: KEYS = meta, ids, nodes, kids, order; ARGV = how many batch
/// ids follow, the batch ids, then the explicit parent ids. Replies with the version, the
/// next sequence number, the latest leaf's sequence number and node (or nils), one `1`/`0`
/// per batch id (held or not), then per parent its sequence number, node and whether it
/// has children (or nils).
pub(crate) const PROBE: &str = r"
local meta = redis.call('HMGET', KEYS[1], 'version', 'next')
local out = {meta[1] or '0', meta[2] or '1'}
local top = redis.call('ZREVRANGE', KEYS[5], 0, 0)
if #top == 1 then
  out[3] = top[1]
  out[4] = redis.call('HGET', KEYS[3], top[1])
else
  out[3] = false
  out[4] = false
end
local n = tonumber(ARGV[1])
for i = 2, n + 1 do
  out[#out + 1] = tostring(redis.call('HEXISTS', KEYS[2], ARGV[i]))
end
for i = n + 2, #ARGV do
  local seq = redis.call('HGET', KEYS[2], ARGV[i])
  if seq then
    out[#out + 1] = seq
    out[#out + 1] = redis.call('HGET', KEYS[3], seq)
    out[#out + 1] = tostring(redis.call('HEXISTS', KEYS[4], seq))
  else
    out[#out + 1] = false
    out[#out + 1] = false
    out[#out + 1] = false
  end
end
return out
";

/// Writes planned rows if the session is unchanged: KEYS = meta, ids, nodes, content,
/// order, runs, kids; ARGV = the version read, a generation token (kept only by the first
/// write of the session), then six values per row: seq, id, node, run member, parent seq
/// (empty for a root), JSON. Each key is written once for the whole batch. 1 when written,
/// 0 when the version moved.
pub(crate) const COMMIT: &str = r"
local version = redis.call('HGET', KEYS[1], 'version') or '0'
if version ~= ARGV[1] then return 0 end
local ids, nodes, content, order, runs = {}, {}, {}, {}, {}
local kids, parents, fresh = {}, {}, {}
local last
for i = 3, #ARGV, 6 do
  local seq, id, parent = ARGV[i], ARGV[i + 1], ARGV[i + 4]
  ids[#ids + 1] = id
  ids[#ids + 1] = seq
  nodes[#nodes + 1] = seq
  nodes[#nodes + 1] = ARGV[i + 2]
  content[#content + 1] = seq
  content[#content + 1] = ARGV[i + 5]
  order[#order + 1] = seq
  order[#order + 1] = seq
  runs[#runs + 1] = '0'
  runs[#runs + 1] = ARGV[i + 3]
  fresh[seq] = true
  if parent ~= '' then
    if kids[parent] then
      kids[parent] = kids[parent] .. ',' .. seq
    else
      parents[#parents + 1] = parent
      local stored = (not fresh[parent]) and redis.call('HGET', KEYS[7], parent)
      if stored then kids[parent] = stored .. ',' .. seq else kids[parent] = seq end
    end
  end
  last = seq
end
local pairs_of_kids = {}
for _, parent in ipairs(parents) do
  pairs_of_kids[#pairs_of_kids + 1] = parent
  pairs_of_kids[#pairs_of_kids + 1] = kids[parent]
end
local function write(command, key, list)
  for i = 1, #list, 2000 do
    redis.call(command, key, unpack(list, i, math.min(i + 1999, #list)))
  end
end
write('HSET', KEYS[2], ids)
write('HSET', KEYS[3], nodes)
write('HSET', KEYS[4], content)
write('ZADD', KEYS[5], order)
write('ZADD', KEYS[6], runs)
write('HSET', KEYS[7], pairs_of_kids)
redis.call('HSETNX', KEYS[1], 'gen', ARGV[2])
redis.call('HSET', KEYS[1], 'version', string.format('%d', tonumber(version) + 1),
  'next', string.format('%d', tonumber(last) + 1))
return 1
";

/// What the probe read.
pub(crate) struct Probe {
    pub(crate) version: String,
    next_seq: i64,
    latest: Option<TreeNode>,
    existing: HashSet<String>,
    stored: HashMap<String, StoredParent>,
}

/// The explicit parents of a batch, each once, in order.
pub(crate) fn explicit_parents(parents: &[Parent]) -> Vec<&str> {
    let mut seen = HashSet::new();
    parents
        .iter()
        .filter_map(|p| match p {
            Parent::Message(id) => Some(id.as_str()),
            _ => None,
        })
        .filter(|id| seen.insert(*id))
        .collect()
}

/// Runs the probe for `batch` (ids) with `parents` (explicit parent ids).
pub(crate) async fn probe(
    keys: &SessionKeys,
    script: &redis::Script,
    connection: &mut redis::aio::ConnectionManager,
    batch: &[Encoded],
    parents: &[&str],
) -> Result<Probe> {
    let mut invocation = script.prepare_invoke();
    invocation
        .key(&keys.meta)
        .key(&keys.ids)
        .key(&keys.nodes)
        .key(&keys.kids)
        .key(&keys.order)
        .arg(batch.len());
    for e in batch {
        invocation.arg(&e.id);
    }
    for p in parents {
        invocation.arg(*p);
    }
    let reply: Vec<Option<String>> = invocation
        .invoke_async(connection)
        .await
        .map_err(crate::error::redis)?;
    let expected = 4 + batch.len() + 3 * parents.len();
    if reply.len() != expected {
        return Err(corrupt(
            "append probe reply",
            format!("{} values, expected {expected}", reply.len()),
        ));
    }
    let number = |value: &Option<String>, what: &str| -> Result<i64> {
        value
            .as_deref()
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| corrupt(what, format!("{value:?}")))
    };
    let version = reply[0].clone().unwrap_or_else(|| "0".into());
    let next_seq = number(&reply[1], "message counter")?;
    let latest = match (&reply[2], &reply[3]) {
        (Some(seq), Some(node)) => Some(Node::parse(node)?.tree_node(parse_seq(seq)?)),
        _ => None,
    };
    let existing = batch
        .iter()
        .zip(&reply[4..4 + batch.len()])
        .filter(|(_, held)| held.as_deref() == Some("1"))
        .map(|(e, _)| e.id.clone())
        .collect();
    let mut stored = HashMap::new();
    for (id, found) in parents.iter().zip(reply[4 + batch.len()..].chunks_exact(3)) {
        if let (Some(seq), Some(node)) = (&found[0], &found[1]) {
            let node = Node::parse(node)?.tree_node(parse_seq(seq)?);
            let has_children = found[2].as_deref() == Some("1");
            stored.insert((*id).to_owned(), StoredParent { node, has_children });
        }
    }
    Ok(Probe {
        version,
        next_seq,
        latest,
        existing,
        stored,
    })
}

/// A sequence number as stored.
pub(crate) fn parse_seq(text: &str) -> Result<i64> {
    text.parse()
        .map_err(|_| corrupt("message sequence number", text))
}

/// Plans the batch on what the probe read.
pub(crate) fn plan(probe: &Probe, batch: &[Encoded], parents: Vec<Parent>) -> Result<AppendPlan> {
    let ids: Vec<&str> = batch.iter().map(|e| e.id.as_str()).collect();
    plan_append(
        AppendBatch {
            ids: &ids,
            parents,
            existing: &probe.existing,
            latest: probe.latest.clone(),
            next_seq: probe.next_seq,
        },
        &probe.stored,
    )
}

/// Writes the planned rows unless the session changed since the probe; true when written.
pub(crate) async fn commit(
    keys: &SessionKeys,
    script: &redis::Script,
    connection: &mut redis::aio::ConnectionManager,
    probe: &Probe,
    batch: &[Encoded],
    rows: &[PlannedRow],
) -> Result<bool> {
    if rows.is_empty() {
        return Ok(true);
    }
    let mut invocation = script.prepare_invoke();
    invocation
        .key(&keys.meta)
        .key(&keys.ids)
        .key(&keys.nodes)
        .key(&keys.content)
        .key(&keys.order)
        .key(&keys.runs)
        .key(&keys.kids)
        .arg(&probe.version)
        .arg(uuid::Uuid::new_v4().simple().to_string());
    for row in rows {
        let e = &batch[row.index];
        let node = Node {
            parent: row.parent_seq,
            run: row.run_id,
            role: e.role,
            bytes: e.json.len() as u64,
            id: e.id.clone(),
        };
        invocation
            .arg(row.seq)
            .arg(&e.id)
            .arg(node.render())
            .arg(run_member(row.run_id, row.seq))
            .arg(row.parent_seq.map(|p| p.to_string()).unwrap_or_default())
            .arg(&e.json);
    }
    let written: i64 = invocation
        .invoke_async(connection)
        .await
        .map_err(crate::error::redis)?;
    Ok(written == 1)
}
