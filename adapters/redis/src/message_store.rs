//! The message tree on Redis. Each session's tree lives in eight keys under
//! `<prefix>messages:<session>:`, written together by Lua scripts:
//!
//! | key | type | holds |
//! |---|---|---|
//! | `meta` | hash | `version` (bumped by every append and delete), `next` (the next sequence number), `gen` (a token of this incarnation of the session), `cnext` (overlay counter) |
//! | `ids` | hash | message id → sequence number |
//! | `nodes` | hash | sequence number → `parent|run|role|bytes|id` |
//! | `content` | hash | sequence number → the message's JSON |
//! | `order` | sorted set | sequence numbers by themselves (latest leaf, pages) |
//! | `runs` | sorted set | `<run>:<seq>` (16 digits each, all scores 0): one lexicographic range per linear run |
//! | `kids` | hash | sequence number → its children's sequence numbers, in insertion order |
//! | `compactions` | hash | overlay number → the overlay record |
//!
//! A root-to-leaf path is read in three round trips whatever its length ([`crate::path`]).

use std::time::Duration;

use async_trait::async_trait;
use memory_core::append_plan::TreeNode;
use memory_core::ports::{Clock, MessageStore, StoreCapabilities, SystemClock};
use memory_core::{
    AppendOutcome, CompactionRecord, MemoryError, MessagePage, NewCompaction, NewMessage, Parent,
    PathEntry, PathTail, Result, Role, SessionId, StoredMessage, Timestamp, UiMessage,
    validate_message_id,
};
use serde::{Deserialize, Serialize};

use crate::append;
use crate::database::RedisDatabase;
use crate::error::{corrupt, redis};
use crate::path;
use memory_core::size::check_item_size;

/// How often an append reads and plans again after losing a race, before it reports
/// [`MemoryError::Conflict`].
const APPEND_ATTEMPTS: u32 = 64;
/// Most messages one page of [`MessageStore::messages`] returns.
const MAX_PAGE: usize = 1_000;

/// The latest leaf's id: KEYS = order, nodes.
const LATEST_LEAF: &str = r"
local top = redis.call('ZREVRANGE', KEYS[1], 0, 0)
if #top == 0 then return false end
return redis.call('HGET', KEYS[2], top[1]):match('^[^|]*|[^|]*|[^|]*|[^|]*|(.*)$')
";

/// One message's node and JSON: KEYS = ids, nodes, content; ARGV = id. Nil when absent.
const GET: &str = r"
local seq = redis.call('HGET', KEYS[1], ARGV[1])
if not seq then return false end
return {seq, redis.call('HGET', KEYS[2], seq), redis.call('HGET', KEYS[3], seq)}
";

/// Several messages' JSON, in the order asked (nil for an absent one): KEYS = ids, content;
/// ARGV = ids.
const GET_MANY: &str = r"
local out = {}
for i = 1, #ARGV, 1000 do
  local seqs = redis.call('HMGET', KEYS[1], unpack(ARGV, i, math.min(i + 999, #ARGV)))
  for _, seq in ipairs(seqs) do
    if seq then out[#out + 1] = redis.call('HGET', KEYS[2], seq) else out[#out + 1] = false end
  end
end
return out
";

/// A message's children's JSON in insertion order: KEYS = ids, kids, content; ARGV = id.
/// Nil when the message is absent.
const CHILDREN: &str = r"
local seq = redis.call('HGET', KEYS[1], ARGV[1])
if not seq then return false end
local kids = redis.call('HGET', KEYS[2], seq)
local out = {}
if kids then
  for kid in string.gmatch(kids, '[^,]+') do out[#out + 1] = redis.call('HGET', KEYS[3], kid) end
end
return out
";

/// One field of a session hash with the session's version and generation, in one round trip.
async fn field_with_version(
    connection: &mut redis::aio::ConnectionManager,
    keys: &SessionKeys,
    hash: &str,
    field: &str,
) -> Result<(Option<String>, Option<String>, Option<String>)> {
    redis::pipe()
        .cmd("HGET")
        .arg(hash)
        .arg(field)
        .cmd("HMGET")
        .arg(&keys.meta)
        .arg("version")
        .arg("gen")
        .query_async::<(Option<String>, (Option<String>, Option<String>))>(connection)
        .await
        .map(|(value, (version, generation))| (value, version, generation))
        .map_err(crate::error::redis)
}

/// A bounded step of the walk for the newest message under a message: KEYS = kids; ARGV =
/// the most nodes to visit, then the walk's frontier (sequence numbers). Replies with the
/// largest sequence number visited, then the frontier left. Bounded so no call blocks the
/// server for long, whatever the subtree's size.
const SUBTREE_STEP: &str = r"
local budget = tonumber(ARGV[1])
local frontier = {}
for i = 2, #ARGV do frontier[#frontier + 1] = ARGV[i] end
local best = 0
local steps = 0
while #frontier > 0 and steps < budget do
  local seq = table.remove(frontier)
  steps = steps + 1
  if tonumber(seq) > best then best = tonumber(seq) end
  local kids = redis.call('HGET', KEYS[1], seq)
  if kids then
    for kid in string.gmatch(kids, '[^,]+') do frontier[#frontier + 1] = kid end
  end
end
local out = {tostring(best)}
for _, seq in ipairs(frontier) do out[#out + 1] = seq end
return out
";

/// Nodes one [`SUBTREE_STEP`] call visits at most.
const SUBTREE_BUDGET: usize = 5_000;

/// Where the tree forks among some ids: KEYS = ids, kids, nodes; ARGV = the ids. Per id
/// with more than one child: the id, its number of children, then their ids in order.
const FORKS: &str = r"
local out = {}
for _, id in ipairs(ARGV) do
  local seq = redis.call('HGET', KEYS[1], id)
  local kids = seq and redis.call('HGET', KEYS[2], seq)
  if kids and kids:find(',') then
    local names = {}
    for kid in string.gmatch(kids, '[^,]+') do
      local node = redis.call('HGET', KEYS[3], kid)
      if node then names[#names + 1] = node:match('^[^|]*|[^|]*|[^|]*|[^|]*|(.*)$') end
    end
    if #names > 1 then
      out[#out + 1] = id
      out[#out + 1] = tostring(#names)
      for _, name in ipairs(names) do out[#out + 1] = name end
    end
  end
end
return out
";

/// A page of messages after a sequence number: KEYS = order, content, nodes; ARGV = the
/// exclusive lower bound, how many. Three values per message: seq, JSON, parent id (or nil).
const PAGE: &str = r"
local seqs = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. ARGV[1], '+inf', 'LIMIT', 0, ARGV[2])
local out = {}
for _, seq in ipairs(seqs) do
  out[#out + 1] = seq
  out[#out + 1] = redis.call('HGET', KEYS[2], seq)
  local parent = redis.call('HGET', KEYS[3], seq):match('^([^|]*)|')
  if parent == '' then
    out[#out + 1] = false
  else
    out[#out + 1] = redis.call('HGET', KEYS[3], parent):match('^[^|]*|[^|]*|[^|]*|[^|]*|(.*)$')
  end
end
return out
";

/// Replaces a message's JSON if its node is still the one read: KEYS = nodes, content;
/// ARGV = seq, node read, new node, JSON. 1 when replaced.
const UPDATE: &str = r"
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[4])
return 1
";

/// Deletes messages, re-linking each one's children to its parent (children stay in
/// insertion order): KEYS = meta, ids, nodes, content, order, runs, kids; ARGV = ids. How
/// many were deleted.
const DELETE: &str = r"
local deleted = 0
for _, id in ipairs(ARGV) do
  local seq = redis.call('HGET', KEYS[2], id)
  if seq then
    local parent, run = redis.call('HGET', KEYS[3], seq):match('^([^|]*)|([^|]*)|')
    local kids = redis.call('HGET', KEYS[7], seq)
    if kids then
      for kid in string.gmatch(kids, '[^,]+') do
        local rest = redis.call('HGET', KEYS[3], kid):match('^[^|]*(|.*)$')
        redis.call('HSET', KEYS[3], kid, parent .. rest)
      end
      redis.call('HDEL', KEYS[7], seq)
    end
    if parent ~= '' then
      local list = {}
      local siblings = redis.call('HGET', KEYS[7], parent)
      if siblings then
        for k in string.gmatch(siblings, '[^,]+') do
          if k ~= seq then list[#list + 1] = tonumber(k) end
        end
      end
      if kids then
        for k in string.gmatch(kids, '[^,]+') do list[#list + 1] = tonumber(k) end
      end
      table.sort(list)
      if #list == 0 then
        redis.call('HDEL', KEYS[7], parent)
      else
        for i, k in ipairs(list) do list[i] = string.format('%d', k) end
        redis.call('HSET', KEYS[7], parent, table.concat(list, ','))
      end
    end
    redis.call('HDEL', KEYS[2], id)
    redis.call('HDEL', KEYS[3], seq)
    redis.call('HDEL', KEYS[4], seq)
    redis.call('ZREM', KEYS[5], seq)
    redis.call('ZREM', KEYS[6], string.format('%016d:%016d', tonumber(run), tonumber(seq)))
    deleted = deleted + 1
  end
end
if deleted > 0 then redis.call('HINCRBY', KEYS[1], 'version', 1) end
return deleted
";

/// Records an overlay if both ends exist: KEYS = meta, ids, compactions; ARGV = from id, to
/// id, the record. Its number, or the missing id as `missing:<id>`.
const ADD_COMPACTION: &str = r"
for i = 1, 2 do
  if redis.call('HEXISTS', KEYS[2], ARGV[i]) == 0 then return 'missing:' .. ARGV[i] end
end
local seq = redis.call('HINCRBY', KEYS[1], 'cnext', 1)
redis.call('HSET', KEYS[3], seq, ARGV[3])
return tostring(seq)
";

/// The keys of one session's tree.
pub(crate) struct SessionKeys {
    pub(crate) meta: String,
    pub(crate) ids: String,
    pub(crate) nodes: String,
    pub(crate) content: String,
    pub(crate) order: String,
    pub(crate) runs: String,
    pub(crate) kids: String,
    pub(crate) compactions: String,
}

impl SessionKeys {
    fn new(db: &RedisDatabase, session: &SessionId) -> Self {
        // The suffix never holds ':', so no session's keys can be another's.
        let key = |suffix: &str| db.key(&format!("messages:{session}:{suffix}"));
        Self {
            meta: key("meta"),
            ids: key("ids"),
            nodes: key("nodes"),
            content: key("content"),
            order: key("order"),
            runs: key("runs"),
            kids: key("kids"),
            compactions: key("compactions"),
        }
    }

    fn all(&self) -> [&str; 8] {
        [
            &self.meta,
            &self.ids,
            &self.nodes,
            &self.content,
            &self.order,
            &self.runs,
            &self.kids,
            &self.compactions,
        ]
    }
}

/// A message encoded for storage.
pub(crate) struct Encoded {
    pub(crate) id: String,
    pub(crate) role: Role,
    pub(crate) json: String,
}

fn encode(message: &UiMessage) -> Result<Encoded> {
    validate_message_id(&message.id)?;
    let json = serde_json::to_string(message)?;
    check_item_size(&format!("message {:?}", message.id), json.len())?;
    Ok(Encoded {
        id: message.id.clone(),
        role: message.role,
        json,
    })
}

fn decode(json: &str) -> Result<UiMessage> {
    serde_json::from_str(json).map_err(|e| {
        MemoryError::serialization(format!("stored message is not a valid UIMessage: {e}"))
    })
}

/// A stored node: `parent|run|role|bytes|id` (the id last: it may hold `|`).
pub(crate) struct Node {
    pub(crate) parent: Option<i64>,
    pub(crate) run: i64,
    pub(crate) role: Role,
    pub(crate) bytes: u64,
    pub(crate) id: String,
}

/// A message's member in the `runs` set: run and sequence number, 16 digits each, so one
/// lexicographic range holds a run up to a message, in order.
pub(crate) fn run_member(run: i64, seq: i64) -> String {
    format!("{run:016}:{seq:016}")
}

/// The sequence number of a `runs` member.
pub(crate) fn member_seq(member: &str) -> Result<String> {
    member
        .get(17..)
        .and_then(|seq| seq.parse::<i64>().ok())
        .map(|seq| seq.to_string())
        .ok_or_else(|| corrupt("run member", member))
}

impl Node {
    /// The node as a row of a path.
    pub(crate) fn into_path_entry(self) -> PathEntry {
        PathEntry {
            id: self.id,
            role: self.role,
            bytes: self.bytes,
        }
    }

    pub(crate) fn parse(text: &str) -> Result<Self> {
        let bad = || corrupt("message node", text);
        let mut parts = text.splitn(5, '|');
        let mut next = || parts.next().ok_or_else(bad);
        let parent = next()?;
        let parent = if parent.is_empty() {
            None
        } else {
            Some(parent.parse().map_err(|_| bad())?)
        };
        let run = next()?.parse().map_err(|_| bad())?;
        let role = Role::parse(next()?)?;
        let bytes = next()?.parse().map_err(|_| bad())?;
        let id = next()?.to_owned();
        Ok(Self {
            parent,
            run,
            role,
            bytes,
            id,
        })
    }

    pub(crate) fn render(&self) -> String {
        let parent = self.parent.map(|p| p.to_string()).unwrap_or_default();
        format!(
            "{parent}|{}|{}|{}|{}",
            self.run,
            self.role.as_str(),
            self.bytes,
            self.id
        )
    }

    pub(crate) fn tree_node(self, seq: i64) -> TreeNode {
        TreeNode {
            seq,
            run_id: self.run,
            id: self.id,
        }
    }
}

/// An overlay record as stored (its number is the hash field).
#[derive(Serialize, Deserialize)]
struct StoredCompaction {
    summary: String,
    from_message_id: String,
    to_message_id: String,
    created_at: i64,
}

/// The [`MessageStore`] on Redis. Appends are optimistic: a batch is planned on what one
/// script read and written by a second script only if no append or delete of the session
/// came between (else it is read and planned again), so writers in any number of processes
/// lose nothing and leave one latest leaf. Full-text search is not here: pair it with a text
/// index through the engine's `IndexedMessageStore` (`memory-compose` does).
#[derive(Debug, Clone)]
pub struct RedisMessageStore {
    db: RedisDatabase,
    scripts: Scripts,
}

#[derive(Debug, Clone)]
struct Scripts {
    probe: redis::Script,
    commit: redis::Script,
    segments: redis::Script,
    latest_leaf: redis::Script,
    get: redis::Script,
    get_many: redis::Script,
    children: redis::Script,
    forks: redis::Script,
    subtree_step: redis::Script,
    page: redis::Script,
    update: redis::Script,
    delete: redis::Script,
    add_compaction: redis::Script,
}

impl RedisMessageStore {
    /// The message store of `db`.
    pub fn new(db: RedisDatabase) -> Self {
        Self {
            db,
            scripts: Scripts {
                probe: redis::Script::new(append::PROBE),
                commit: redis::Script::new(append::COMMIT),
                segments: redis::Script::new(path::SEGMENTS),
                latest_leaf: redis::Script::new(LATEST_LEAF),
                get: redis::Script::new(GET),
                get_many: redis::Script::new(GET_MANY),
                children: redis::Script::new(CHILDREN),
                forks: redis::Script::new(FORKS),
                subtree_step: redis::Script::new(SUBTREE_STEP),
                page: redis::Script::new(PAGE),
                update: redis::Script::new(UPDATE),
                delete: redis::Script::new(DELETE),
                add_compaction: redis::Script::new(ADD_COMPACTION),
            },
        }
    }

    fn keys(&self, session: &SessionId) -> SessionKeys {
        SessionKeys::new(&self.db, session)
    }

    fn connection(&self) -> redis::aio::ConnectionManager {
        self.db.connection.clone()
    }
}

#[async_trait]
impl MessageStore for RedisMessageStore {
    fn backend_name(&self) -> &'static str {
        "redis"
    }

    fn capabilities(&self) -> StoreCapabilities {
        StoreCapabilities {
            max_message_bytes: Some(crate::MAX_MESSAGE_BYTES),
        }
    }

    async fn append(
        &self,
        session: &SessionId,
        messages: Vec<NewMessage>,
    ) -> Result<Vec<AppendOutcome>> {
        let batch = messages
            .iter()
            .map(|m| encode(&m.message))
            .collect::<Result<Vec<_>>>()?;
        let parents: Vec<Parent> = messages.into_iter().map(|m| m.parent).collect();
        let explicit = append::explicit_parents(&parents);
        let keys = self.keys(session);
        let mut connection = self.connection();
        for attempt in 0..APPEND_ATTEMPTS {
            let probe = append::probe(
                &keys,
                &self.scripts.probe,
                &mut connection,
                &batch,
                &explicit,
            )
            .await?;
            let plan = append::plan(&probe, &batch, parents.clone())?;
            if append::commit(
                &keys,
                &self.scripts.commit,
                &mut connection,
                &probe,
                &batch,
                &plan.rows,
            )
            .await?
            {
                return Ok(plan.outcomes);
            }
            // Another writer of this session came first: back off a little, growing, so
            // that a crowd of writers spreads out.
            tokio::time::sleep(Duration::from_micros(100 * u64::from(attempt + 1))).await;
        }
        Err(MemoryError::Conflict {
            message: format!(
                "append to session {session} lost the race to other writers {APPEND_ATTEMPTS} times; retry"
            ),
        })
    }

    async fn update(&self, session: &SessionId, mut message: UiMessage) -> Result<()> {
        validate_message_id(&message.id)?;
        let keys = self.keys(session);
        for _ in 0..APPEND_ATTEMPTS {
            let found: Option<(String, String, String)> = self
                .db
                .invoke(
                    self.scripts
                        .get
                        .key(&keys.ids)
                        .key(&keys.nodes)
                        .key(&keys.content)
                        .arg(&message.id),
                )
                .await?;
            let (seq, old_node, _) =
                found.ok_or_else(|| MemoryError::not_found("message", message.id.as_str()))?;
            let mut node = Node::parse(&old_node)?;
            message.role = node.role;
            let enc = encode(&message)?;
            node.bytes = enc.json.len() as u64;
            let replaced: i64 = self
                .db
                .invoke(
                    self.scripts
                        .update
                        .key(&keys.nodes)
                        .key(&keys.content)
                        .arg(&seq)
                        .arg(&old_node)
                        .arg(node.render())
                        .arg(&enc.json),
                )
                .await?;
            if replaced == 1 {
                return Ok(());
            }
            // Deleted, re-linked or updated since the read: read again.
        }
        Err(MemoryError::Conflict {
            message: format!(
                "update of message {:?} kept racing other writers; retry",
                message.id
            ),
        })
    }

    async fn delete(&self, session: &SessionId, ids: &[String]) -> Result<u64> {
        if ids.is_empty() {
            return Ok(0);
        }
        let keys = self.keys(session);
        self.db
            .invoke(
                self.scripts
                    .delete
                    .key(&keys.meta)
                    .key(&keys.ids)
                    .key(&keys.nodes)
                    .key(&keys.content)
                    .key(&keys.order)
                    .key(&keys.runs)
                    .key(&keys.kids)
                    .arg(ids),
            )
            .await
    }

    async fn clear(&self, session: &SessionId) -> Result<()> {
        let keys = self.keys(session);
        let _: u64 = redis::cmd("UNLINK")
            .arg(&keys.all()[..])
            .query_async(&mut self.connection())
            .await
            .map_err(redis)?;
        Ok(())
    }

    async fn get(&self, session: &SessionId, id: &str) -> Result<Option<UiMessage>> {
        let keys = self.keys(session);
        let found: Option<(String, String, String)> = self
            .db
            .invoke(
                self.scripts
                    .get
                    .key(&keys.ids)
                    .key(&keys.nodes)
                    .key(&keys.content)
                    .arg(id),
            )
            .await?;
        found.map(|(_, _, json)| decode(&json)).transpose()
    }

    async fn get_many(&self, session: &SessionId, ids: &[String]) -> Result<Vec<UiMessage>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let keys = self.keys(session);
        let found: Vec<Option<String>> = self
            .db
            .invoke(
                self.scripts
                    .get_many
                    .key(&keys.ids)
                    .key(&keys.content)
                    .arg(ids),
            )
            .await?;
        // Each message once, as the other stores answer.
        let mut seen = std::collections::HashSet::new();
        ids.iter()
            .zip(&found)
            .filter(|(id, _)| seen.insert(id.as_str()))
            .filter_map(|(_, json)| json.as_deref())
            .map(decode)
            .collect()
    }

    async fn latest_leaf(&self, session: &SessionId) -> Result<Option<String>> {
        let keys = self.keys(session);
        self.db
            .invoke(self.scripts.latest_leaf.key(&keys.order).key(&keys.nodes))
            .await
    }

    async fn children(&self, session: &SessionId, id: &str) -> Result<Vec<UiMessage>> {
        let keys = self.keys(session);
        let found: Option<Vec<String>> = self
            .db
            .invoke(
                self.scripts
                    .children
                    .key(&keys.ids)
                    .key(&keys.kids)
                    .key(&keys.content)
                    .arg(id),
            )
            .await?;
        let found = found.ok_or_else(|| MemoryError::not_found("message", id))?;
        found.iter().map(|json| decode(json)).collect()
    }

    async fn latest_leaf_under(&self, session: &SessionId, id: &str) -> Result<String> {
        const ATTEMPTS: usize = 4;
        let keys = self.keys(session);
        let mut connection = self.db.connection.clone();
        for attempt in 1..=ATTEMPTS {
            // The session's version (bumped by every append and delete) and generation
            // (new after a clear), read before and after the walk.
            let (start, version, generation) =
                field_with_version(&mut connection, &keys, &keys.ids, id).await?;
            let start = start.ok_or_else(|| MemoryError::not_found("message", id))?;
            // Children are always newer than their parent, so the subtree's newest message
            // is its newest leaf.
            let mut newest: i64 = crate::append::parse_seq(&start)?;
            let mut frontier = vec![start];
            while !frontier.is_empty() {
                let reply: Vec<String> = self
                    .db
                    .invoke(
                        self.scripts
                            .subtree_step
                            .key(&keys.kids)
                            .arg(SUBTREE_BUDGET)
                            .arg(&frontier),
                    )
                    .await?;
                let mut reply = reply.into_iter();
                let best = reply.next().ok_or_else(|| corrupt("subtree walk", id))?;
                newest = newest.max(crate::append::parse_seq(&best)?);
                frontier = reply.collect();
            }
            let (node, version_after, generation_after) =
                field_with_version(&mut connection, &keys, &keys.nodes, &newest.to_string())
                    .await?;
            // A write during the walk may have moved children it had not reached: walk
            // again. On the last attempt a leaf of the same tree (no clear in between) is
            // still an answer that held during the read.
            let same_tree = generation_after == generation;
            let unchanged = same_tree && version_after == version;
            if let Some(node) = node
                && (unchanged || (same_tree && attempt == ATTEMPTS))
            {
                return Ok(Node::parse(&node)?.id);
            }
        }
        Err(MemoryError::Conflict {
            message: format!("the subtree under {id:?} kept changing under the read; retry"),
        })
    }

    async fn path(&self, session: &SessionId, leaf: Option<String>) -> Result<Vec<PathEntry>> {
        let keys = self.keys(session);
        let nodes = path::read(&self.db, &self.scripts.segments, &keys, &leaf, &keys.nodes).await?;
        nodes
            .iter()
            .map(|text| Node::parse(text).map(Node::into_path_entry))
            .collect()
    }

    async fn path_tail(
        &self,
        session: &SessionId,
        leaf: Option<String>,
        limit: usize,
    ) -> Result<PathTail> {
        let keys = self.keys(session);
        let (nodes, total) =
            path::read_tail(&self.db, &self.scripts.segments, &keys, &leaf, limit).await?;
        let entries = nodes
            .iter()
            .map(|text| Node::parse(text).map(Node::into_path_entry))
            .collect::<Result<Vec<_>>>()?;
        Ok(PathTail { entries, total })
    }

    async fn forks(
        &self,
        session: &SessionId,
        ids: &[String],
    ) -> Result<std::collections::BTreeMap<String, Vec<String>>> {
        let mut forks = std::collections::BTreeMap::new();
        if ids.is_empty() {
            return Ok(forks);
        }
        let keys = self.keys(session);
        let reply: Vec<String> = self
            .db
            .invoke(
                self.scripts
                    .forks
                    .key(&keys.ids)
                    .key(&keys.kids)
                    .key(&keys.nodes)
                    .arg(ids),
            )
            .await?;
        let mut items = reply.into_iter();
        while let Some(id) = items.next() {
            let count: usize = items
                .next()
                .and_then(|n| n.parse().ok())
                .ok_or_else(|| corrupt("forks reply", &id))?;
            let children: Vec<String> = items.by_ref().take(count).collect();
            forks.insert(id, children);
        }
        Ok(forks)
    }

    async fn history(&self, session: &SessionId, leaf: Option<String>) -> Result<Vec<UiMessage>> {
        let keys = self.keys(session);
        let contents = path::read(
            &self.db,
            &self.scripts.segments,
            &keys,
            &leaf,
            &keys.content,
        )
        .await?;
        contents.iter().map(|json| decode(json)).collect()
    }

    async fn messages(
        &self,
        session: &SessionId,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<MessagePage> {
        let after = memory_core::cursor::parse_position(cursor.as_deref())?.unwrap_or(0);
        let take = limit.min(MAX_PAGE);
        let keys = self.keys(session);
        let reply: Vec<Option<String>> = self
            .db
            .invoke(
                self.scripts
                    .page
                    .key(&keys.order)
                    .key(&keys.content)
                    .key(&keys.nodes)
                    .arg(after)
                    .arg(take + 1),
            )
            .await?;
        let rows: Vec<&[Option<String>]> = reply.chunks(3).collect();
        let more = rows.len() > take;
        let mut messages = Vec::with_capacity(rows.len().min(take));
        let mut last = None;
        for row in rows.iter().take(take) {
            let [Some(seq), Some(json), parent] = row else {
                return Err(corrupt("message page", "a message without content"));
            };
            last = Some(append::parse_seq(seq)?);
            messages.push(StoredMessage {
                message: decode(json)?,
                parent_id: parent.clone(),
            });
        }
        Ok(MessagePage {
            messages,
            next_cursor: if more {
                last.map(memory_core::cursor::position)
            } else {
                None
            },
        })
    }

    async fn add_compaction(
        &self,
        session: &SessionId,
        compaction: NewCompaction,
    ) -> Result<CompactionRecord> {
        let stored = StoredCompaction {
            summary: compaction.summary,
            from_message_id: compaction.from_message_id,
            to_message_id: compaction.to_message_id,
            created_at: SystemClock.now().millis(),
        };
        let keys = self.keys(session);
        let reply: String = self
            .db
            .invoke(
                self.scripts
                    .add_compaction
                    .key(&keys.meta)
                    .key(&keys.ids)
                    .key(&keys.compactions)
                    .arg(&stored.from_message_id)
                    .arg(&stored.to_message_id)
                    .arg(serde_json::to_string(&stored)?),
            )
            .await?;
        if let Some(missing) = reply.strip_prefix("missing:") {
            return Err(MemoryError::not_found("message", missing));
        }
        let seq = append::parse_seq(&reply)?;
        Ok(compaction_record(seq, stored))
    }

    async fn compactions(&self, session: &SessionId) -> Result<Vec<CompactionRecord>> {
        let keys = self.keys(session);
        let pairs: Vec<String> = redis::cmd("HGETALL")
            .arg(&keys.compactions)
            .query_async(&mut self.connection())
            .await
            .map_err(redis)?;
        let mut records = pairs
            .chunks_exact(2)
            .map(|pair| {
                let seq = append::parse_seq(&pair[0])?;
                let stored: StoredCompaction = serde_json::from_str(&pair[1])
                    .map_err(|e| corrupt("compaction record", e.to_string()))?;
                Ok(compaction_record(seq, stored))
            })
            .collect::<Result<Vec<_>>>()?;
        records.sort_by_key(|r| r.seq);
        Ok(records)
    }
}

fn compaction_record(seq: i64, stored: StoredCompaction) -> CompactionRecord {
    CompactionRecord {
        id: seq.to_string(),
        summary: stored.summary,
        from_message_id: stored.from_message_id,
        to_message_id: stored.to_message_id,
        created_at: Timestamp(stored.created_at),
        seq,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_round_trips_with_a_bar_in_its_id() {
        let text = "12|7|assistant|345|a|b";
        let node = Node::parse(text).unwrap();
        assert_eq!((node.parent, node.run, node.bytes), (Some(12), 7, 345));
        assert_eq!(node.id, "a|b");
        assert_eq!(node.render(), text);
        let root = Node::parse("|3|user|1|r").unwrap();
        assert_eq!(root.parent, None);
        assert!(Node::parse("x|3|user|1|r").is_err());
        assert!(Node::parse("|3|user").is_err());
    }
}
