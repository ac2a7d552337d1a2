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
    let hits: usize = channels.iter().map(|(_, _, hits)| hits.len()).sum();
    // Items in the order first seen (each id copied once), and where each one is.
    let mut out: Vec<Fused> = Vec::with_capacity(hits);
    let mut position: HashMap<&str, usize> = HashMap::with_capacity(hits);
    for (channel, weight, hits) in channels {
        for (i, (id, score)) in hits.iter().enumerate() {
            let at = *position.entry(id.as_str()).or_insert_with(|| {
                out.push(Fused {
                    id: id.clone(),
                    score: 0.0,
                    ranks: Vec::new(),
                });
                out.len() - 1
            });
            let entry = &mut out[at];
            entry.score += weight / (k + (i + 1) as f64);
            entry.ranks.push(ChannelRank {
                channel,
                rank: i + 1,
                score: *score,
            });
        }
    }
    // Stable: ties keep the order first seen.
    out.sort_by(|a, b| b.score.total_cmp(&a.score));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hits(ids: &[&str]) -> Vec<(String, f64)> {
        ids.iter().map(|id| ((*id).to_owned(), 1.0)).collect()
    }

    #[test]
    fn scores_add_up_across_channels_and_ties_keep_the_order_first_seen() {
        let fused = rrf(
            1.0,
            &[
                ("a", 1.0, hits(&["x", "y", "p"])),
                ("b", 2.0, hits(&["z", "x", "q"])),
            ],
        );
        let order: Vec<&str> = fused.iter().map(|f| f.id.as_str()).collect();
        // x: 1/2 + 2/3; z: 2/2; y: 1/3; q: 2/4 = 1/2 before p's 1/4.
        assert_eq!(order, ["x", "z", "q", "y", "p"]);
        assert!((fused[0].score - (0.5 + 2.0 / 3.0)).abs() < 1e-12);
        let ranks: Vec<(&str, usize)> =
            fused[0].ranks.iter().map(|r| (r.channel, r.rank)).collect();
        assert_eq!(ranks, [("a", 1), ("b", 2)]);

        let tied = rrf(1.0, &[("a", 1.0, hits(&["p"])), ("b", 1.0, hits(&["q"]))]);
        let order: Vec<&str> = tied.iter().map(|f| f.id.as_str()).collect();
        assert_eq!(order, ["p", "q"]);
    }
}
