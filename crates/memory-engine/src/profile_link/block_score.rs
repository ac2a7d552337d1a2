//! What matters now, for the profile block: a score per fact and open task from what the
//! profile knows about each (when it was recorded or said again, when recall last returned
//! it, its kind), so the block shows what is current and in use rather than what was
//! learned first. Pure: the same memories at the same instant score the same in any process.
//!
//! `score = kind × (0.6 × said + 0.4 × used)`, where
//! - `said = 0.5 ^ (days since it was recorded or last said again / 30)`,
//! - `used = 0.5 ^ (days since recall last returned it / 7)`, 0 if never,
//! - `kind` is 1.0 for a fact with a key, 0.9 for an open task and 0.7 for a fact without a
//!   key (a keyed fact is one the extraction named as a lasting attribute).

use memory_core::Timestamp;
use memory_core::ports::{MemoryKind, MemoryRecord};
use serde::Serialize;

/// Half-life of a statement's recency, in days.
pub const SAID_HALF_LIFE_DAYS: f64 = 30.0;
/// Half-life of recall's last use, in days.
pub const USED_HALF_LIFE_DAYS: f64 = 7.0;
/// The share of recency in the score.
pub const SAID_WEIGHT: f64 = 0.6;
/// The share of use in recall in the score.
pub const USED_WEIGHT: f64 = 0.4;

const DAY_MILLIS: f64 = 86_400_000.0;

/// A memory's score and its parts.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct BlockScore {
    /// The whole score, `kind × (0.6 × said + 0.4 × used)`.
    pub score: f64,
    /// The kind's weight.
    pub kind: f64,
    /// Recency of recording or confirmation, in `0..=1`.
    pub said: f64,
    /// Recency of use in recall, in `0..=1`.
    pub used: f64,
}

/// `0.5 ^ (age / half_life)`, 1 for an instant at or after `now`.
fn decay(now: Timestamp, at: Timestamp, half_life_days: f64) -> f64 {
    let days = (now.millis().saturating_sub(at.millis())).max(0) as f64 / DAY_MILLIS;
    0.5f64.powf(days / half_life_days)
}

/// The weight of a memory's kind in the block (0 for kinds the block shows apart).
pub fn kind_weight(memory: &MemoryRecord) -> f64 {
    match (memory.kind, memory.key.is_some()) {
        (MemoryKind::Fact, true) => 1.0,
        (MemoryKind::Task, _) => 0.9,
        (MemoryKind::Fact, false) => 0.7,
        (MemoryKind::Instruction | MemoryKind::Event, _) => 0.0,
    }
}

/// The score of `memory` at `now`.
///
/// ```
/// use memory_core::{Timestamp, ports::{MemoryKind, MemoryRecord}};
/// use memory_engine::profile_link::block_score;
/// let day = 86_400_000;
/// let mut fact = MemoryRecord::new("f", MemoryKind::Fact, "Lives in Lisbon.", Timestamp(0));
/// fact.key = Some("user.city".into());
/// let fresh = block_score(&fact, Timestamp(0));
/// assert_eq!((fresh.said, fresh.used, fresh.score), (1.0, 0.0, 0.6));
/// let month = block_score(&fact, Timestamp(30 * day));
/// assert!((month.said - 0.5).abs() < 1e-9);
/// fact.recalled_at = Some(Timestamp(30 * day));
/// assert!(block_score(&fact, Timestamp(30 * day)).score > fresh.score - 0.3);
/// ```
pub fn block_score(memory: &MemoryRecord, now: Timestamp) -> BlockScore {
    let kind = kind_weight(memory);
    let said = decay(now, memory.last_confirmed(), SAID_HALF_LIFE_DAYS);
    let used = memory
        .recalled_at
        .map_or(0.0, |at| decay(now, at, USED_HALF_LIFE_DAYS));
    BlockScore {
        score: kind * (SAID_WEIGHT * said + USED_WEIGHT * used),
        kind,
        said,
        used,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: i64 = 86_400_000;

    fn fact(key: Option<&str>, recorded_day: i64) -> MemoryRecord {
        let mut m = MemoryRecord::new("m", MemoryKind::Fact, "x", Timestamp(recorded_day * DAY));
        m.key = key.map(str::to_owned);
        m
    }

    #[test]
    fn newer_confirmed_and_used_memories_score_higher() {
        let now = Timestamp(100 * DAY);
        let old = fact(Some("k"), 10);
        let new = fact(Some("k"), 90);
        assert!(block_score(&new, now).score > block_score(&old, now).score);
        let mut confirmed = old.clone();
        confirmed.confirmed_at = Some(Timestamp(95 * DAY));
        assert!(block_score(&confirmed, now).score > block_score(&new, now).score);
        let mut used = old.clone();
        used.recalled_at = Some(Timestamp(99 * DAY));
        assert!(block_score(&used, now).score > block_score(&old, now).score);
        assert!(block_score(&used, now).used > 0.9);
    }

    #[test]
    fn the_kind_weighs_keyed_facts_over_tasks_over_unkeyed_facts() {
        let now = Timestamp(0);
        let task = MemoryRecord::new("t", MemoryKind::Task, "x", now);
        let keyed = block_score(&fact(Some("k"), 0), now).score;
        let open = block_score(&task, now).score;
        let loose = block_score(&fact(None, 0), now).score;
        assert!(keyed > open && open > loose, "{keyed} {open} {loose}");
    }

    #[test]
    fn a_future_time_counts_as_now() {
        let m = fact(None, 10);
        assert_eq!(block_score(&m, Timestamp(0)).said, 1.0);
    }
}
