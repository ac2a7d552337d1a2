//! Reciprocal rank fusion with per-channel weights.

use std::collections::HashMap;

/// One item's rank in one channel.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ChannelRank {
    /// Channel name.
    pub channel: &'static str,
    /// 1-based rank in that channel.
    pub rank: usize,
    /// The channel's own score.
    pub score: f64,
}

/// A fused result.
#[derive(Debug, Clone, PartialEq)]
pub struct Fused {
    /// Item id.
    pub id: String,
    /// Fused score: the sum over channels of `weight / (k + rank)`.
    pub score: f64,
    /// Per-channel ranks (the `explain` of a recall).
    pub ranks: Vec<ChannelRank>,
}

/// A ranked channel: name, weight, and `(id, score)` hits best first.
pub type Channel = (&'static str, f64, Vec<(String, f64)>);

/// Fuses ranked lists `(channel, weight, [(id, score)])` with constant `k`. Ties keep the
/// order in which items were first seen (callers pass channels in priority order).
///
/// ```
/// use memory_engine::long_term::rrf;
/// let fused = rrf(60.0, &[("a", 2.0, vec![("x".into(), 1.0)]), ("b", 1.0, vec![("y".into(), 1.0), ("x".into(), 0.5)])]);
/// assert_eq!(fused[0].id, "x");
/// ```
pub fn rrf(k: f64, channels: &[Channel]) -> Vec<Fused> {
    let mut order: Vec<String> = Vec::new();
    let mut fused: HashMap<String, Fused> = HashMap::new();
    for (channel, weight, hits) in channels {
        for (i, (id, score)) in hits.iter().enumerate() {
            let entry = fused.entry(id.clone()).or_insert_with(|| {
                order.push(id.clone());
                Fused {
                    id: id.clone(),
                    score: 0.0,
                    ranks: Vec::new(),
                }
            });
            entry.score += weight / (k + (i + 1) as f64);
            entry.ranks.push(ChannelRank {
                channel,
                rank: i + 1,
                score: *score,
            });
        }
    }
    let mut out: Vec<Fused> = order
        .into_iter()
        .filter_map(|id| fused.remove(&id))
        .collect();
    out.sort_by(|a, b| b.score.total_cmp(&a.score));
    out
}
