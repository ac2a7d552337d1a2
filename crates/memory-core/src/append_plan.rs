//! Planning an append in memory, for stores that keep the tree as **linear runs**.
//!
//! A message joins its parent's run when the parent has no children yet, so every run is a
//! chain ordered by insertion sequence, and a root-to-leaf path is a few range scans (one per
//! run), never one lookup per message. A store reads what the plan needs (the next sequence
//! number, the latest leaf, which ids exist, the explicit parents stored before the batch),
//! calls [`plan_append`], and writes the planned rows in the same transaction.
//!
//! ```
//! use std::collections::{HashMap, HashSet};
//! use memory_core::append_plan::{AppendBatch, plan_append};
//! use memory_core::Parent;
//!
//! let ids = ["a", "b"];
//! let parents = vec![Parent::LatestLeaf, Parent::LatestLeaf];
//! let batch = AppendBatch { ids: &ids, parents, existing: &HashSet::new(), latest: None, next_seq: 1 };
//! let plan = plan_append(batch, &HashMap::new()).unwrap();
//! assert_eq!(plan.rows[1].parent_seq, Some(1));
//! assert_eq!(plan.rows[1].run_id, 1); // "b" continues "a"'s run
//! ```

use std::collections::{HashMap, HashSet};

use crate::{AppendOutcome, MemoryError, Parent, Result};

/// A stored message's place in the tree: its sequence number, run and id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeNode {
    /// Insertion sequence number (increasing within a session).
    pub seq: i64,
    /// The run it belongs to (the sequence number of the run's first message).
    pub run_id: i64,
    /// Message id.
    pub id: String,
}

/// An explicit parent stored before the batch, and whether it already had children.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredParent {
    /// Where it is.
    pub node: TreeNode,
    /// True when a child was stored under it before the batch.
    pub has_children: bool,
}

/// What the store read before planning, and the batch itself.
#[derive(Debug)]
pub struct AppendBatch<'a> {
    /// The batch's message ids, in order.
    pub ids: &'a [&'a str],
    /// Where each message attaches (same order as `ids`).
    pub parents: Vec<Parent>,
    /// Ids of the batch that the session already holds.
    pub existing: &'a HashSet<String>,
    /// The session's latest leaf before the batch.
    pub latest: Option<TreeNode>,
    /// The sequence number the first inserted message takes.
    pub next_seq: i64,
}

/// A row to insert.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedRow {
    /// Index into the batch.
    pub index: usize,
    /// Its sequence number.
    pub seq: i64,
    /// Its parent's sequence number (`None`: a root).
    pub parent_seq: Option<i64>,
    /// Its run.
    pub run_id: i64,
}

/// The rows to insert and the outcome of every message of the batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppendPlan {
    /// Rows to insert, in batch order.
    pub rows: Vec<PlannedRow>,
    /// One outcome per message of the batch.
    pub outcomes: Vec<AppendOutcome>,
}

/// The explicit parents the store must look up before planning: those of new messages that
/// the batch itself does not insert earlier.
pub fn parents_to_look_up<'a>(
    ids: &[&str],
    parents: &'a [Parent],
    existing: &HashSet<String>,
) -> HashSet<&'a str> {
    let mut seen: HashSet<&str> = HashSet::new();
    let mut wanted = HashSet::new();
    for (id, parent) in ids.iter().zip(parents) {
        let new = !existing.contains(*id) && seen.insert(id);
        if let (true, Parent::Message(p)) = (new, parent)
            && !seen.contains(p.as_str())
        {
            wanted.insert(p.as_str());
        }
    }
    wanted
}

/// Decides every message's outcome, sequence number, parent and run. `stored` holds the
/// explicit parents named by [`parents_to_look_up`] that exist; a missing one is
/// [`MemoryError::NotFound`] (the store then writes nothing).
pub fn plan_append(
    batch: AppendBatch<'_>,
    stored: &HashMap<String, StoredParent>,
) -> Result<AppendPlan> {
    let mut inserted: HashMap<&str, TreeNode> = HashMap::new();
    let mut has_child: HashSet<String> = HashSet::new();
    let mut latest = batch.latest;
    let mut next_seq = batch.next_seq;
    let mut rows = Vec::new();
    let mut outcomes = Vec::with_capacity(batch.ids.len());
    for (index, (id, parent)) in batch.ids.iter().zip(batch.parents).enumerate() {
        if batch.existing.contains(*id) || inserted.contains_key(id) {
            outcomes.push(AppendOutcome::AlreadyExists);
            continue;
        }
        let parent_node: Option<(TreeNode, bool)> = match parent {
            Parent::Root => None,
            // The latest leaf has no children by definition.
            Parent::LatestLeaf => latest.clone().map(|n| (n, false)),
            Parent::Message(p) => match inserted.get(p.as_str()) {
                Some(node) => Some((node.clone(), has_child.contains(&p))),
                None => match stored.get(&p) {
                    Some(s) => Some((s.node.clone(), s.has_children || has_child.contains(&p))),
                    None => return Err(MemoryError::not_found("parent message", p)),
                },
            },
        };
        let seq = next_seq;
        next_seq += 1;
        let (parent_seq, parent_id, run_id) = match parent_node {
            Some((node, had_children)) => {
                has_child.insert(node.id.clone());
                let run = if had_children { seq } else { node.run_id };
                (Some(node.seq), Some(node.id), run)
            }
            None => (None, None, seq),
        };
        let node = TreeNode {
            seq,
            run_id,
            id: (*id).to_owned(),
        };
        inserted.insert(id, node.clone());
        latest = Some(node);
        rows.push(PlannedRow {
            index,
            seq,
            parent_seq,
            run_id,
        });
        outcomes.push(AppendOutcome::Inserted { parent_id });
    }
    Ok(AppendPlan { rows, outcomes })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(seq: i64, run_id: i64, id: &str) -> TreeNode {
        TreeNode {
            seq,
            run_id,
            id: id.into(),
        }
    }

    #[test]
    fn a_branch_starts_a_run_and_a_continuation_joins_one() {
        let existing = HashSet::from(["a".to_owned()]);
        let ids = ["a", "b", "c", "d"];
        let parents = vec![
            Parent::LatestLeaf,
            Parent::message("x"),
            Parent::message("x"),
            Parent::LatestLeaf,
        ];
        assert_eq!(
            parents_to_look_up(&ids, &parents, &existing),
            HashSet::from(["x"])
        );
        let stored = HashMap::from([(
            "x".to_owned(),
            StoredParent {
                node: node(3, 1, "x"),
                has_children: false,
            },
        )]);
        let batch = AppendBatch {
            ids: &ids,
            parents,
            existing: &existing,
            latest: Some(node(5, 4, "y")),
            next_seq: 10,
        };
        let plan = plan_append(batch, &stored).unwrap();
        assert_eq!(plan.outcomes[0], AppendOutcome::AlreadyExists);
        let runs: Vec<(i64, Option<i64>, i64)> = plan
            .rows
            .iter()
            .map(|r| (r.seq, r.parent_seq, r.run_id))
            .collect();
        // b joins x's run; c is x's second child (a new run); d continues c.
        assert_eq!(
            runs,
            [(10, Some(3), 1), (11, Some(3), 11), (12, Some(11), 11)]
        );
    }

    #[test]
    fn a_missing_parent_fails_the_batch() {
        let ids = ["a"];
        let batch = AppendBatch {
            ids: &ids,
            parents: vec![Parent::message("nope")],
            existing: &HashSet::new(),
            latest: None,
            next_seq: 1,
        };
        assert!(matches!(
            plan_append(batch, &HashMap::new()),
            Err(MemoryError::NotFound { .. })
        ));
    }
}
