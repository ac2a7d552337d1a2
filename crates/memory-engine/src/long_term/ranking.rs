//! The stages after the channels, as pure functions: context lent to a top hit's neighbours,
//! the recency channel, the rerank stage's order, session spread, and [`rank`], which
//! composes all but the reranker (it reads the items' texts) with
//! [`rrf`](super::fusion::rrf) over the [`Candidates`] a recall's channels found.
//!
//! A recall runs these same functions (between them it only loads items from the store), so
//! `memory eval fit` can score thousands of ranking settings over candidates collected once,
//! and each score is the one a recall with that setting would get.

use std::collections::{HashMap, HashSet};

use memory_core::{MemoryError, Result, Timestamp};

use super::config::{ChannelWeights, LongTermConfig};
use super::fusion::{Channel, ChannelRank, Fused, rrf};
use super::hits::{RecallHit, RecallItem};

/// Each channel's hits before fusion, best first, in the order fusion takes them (ties keep
/// the order first seen, so the order matters).
pub type ChannelHits = Vec<(&'static str, Vec<(String, f64)>)>;

/// One candidate, as far as ranking needs it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CandidateItem {
    /// When it was true or said.
    pub time: Timestamp,
    /// The conversation it came from, when known.
    pub session: Option<String>,
    /// For a memory consolidation merged into another: the survivor recall returns in its
    /// place (its time and session are the survivor's). `None` for the others.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub survivor: Option<String>,
}

/// What one recall's channels found, with what the stages after fusion need to rank it:
/// collected once by [`MemoryService::recall_candidates`](super::MemoryService::recall_candidates)
/// and ranked under any setting by [`rank`].
#[derive(Debug, Clone, PartialEq)]
pub struct Candidates {
    /// The channels' hits.
    pub channels: ChannelHits,
    /// Every candidate recall could return (forgotten, expired, superseded and out-of-scope
    /// items are absent, as recall skips them), and every raw candidate's neighbours, by
    /// recall id (raw messages carry the `raw:` prefix).
    pub items: HashMap<String, CandidateItem>,
    /// Each raw candidate's conversational neighbours within [`Candidates::radius`].
    pub neighbours: HashMap<String, Vec<String>>,
    /// The context radius the neighbours were collected with.
    pub radius: usize,
}

impl ChannelWeights {
    /// The weight of the channel named `channel` (0 for a name fusion does not know).
    ///
    /// ```
    /// use memory_engine::long_term::ChannelWeights;
    /// assert_eq!(ChannelWeights::default().of("key"), 3.0);
    /// assert_eq!(ChannelWeights::default().of("nonesuch"), 0.0);
    /// ```
    pub fn of(&self, channel: &str) -> f64 {
        match channel {
            "key" => self.key,
            "memory_fts" => self.memory_fts,
            "direct_vector" => self.direct_vector,
            "hyde_vector" => self.hyde_vector,
            "raw_fts" => self.raw_fts,
            "raw_vector" => self.raw_vector,
            "dated" => self.dated,
            "recency" => self.recency,
            _ => 0.0,
        }
    }
}

/// The channels with their weights, ready for [`rrf`].
pub(super) fn weighted(channels: ChannelHits, weights: &ChannelWeights) -> Vec<Channel> {
    channels
        .into_iter()
        .map(|(name, hits)| (name, weights.of(name), hits))
        .collect()
}

/// Whether context expansion runs under `config`.
pub(super) fn context_on(config: &LongTermConfig) -> bool {
    config.context_radius > 0 && config.context_weight > 0.0
}

/// The raw hits among the first `limit` fused items, with each one's rank and score.
pub(super) fn top_raw(
    fused: &[Fused],
    limit: usize,
    raw_prefix: &str,
) -> Vec<(String, usize, f64)> {
    fused
        .iter()
        .take(limit)
        .enumerate()
        .filter(|(_, f)| f.id.starts_with(raw_prefix))
        .map(|(rank, f)| (f.id.clone(), rank + 1, f.score))
        .collect()
}

/// Lends `weight` × a top raw hit's score to each of its neighbours (channel `context`) and
/// re-sorts: `top` is [`top_raw`]'s list, `neighbours` each one's neighbours by recall id.
pub(super) fn lend_context(
    fused: &mut Vec<Fused>,
    top: &[(String, usize, f64)],
    neighbours: &[Vec<String>],
    weight: f64,
) {
    let mut position: HashMap<String, usize> = fused
        .iter()
        .enumerate()
        .map(|(i, f)| (f.id.clone(), i))
        .collect();
    for ((_, rank, score), found) in top.iter().zip(neighbours) {
        for key in found {
            let i = *position.entry(key.clone()).or_insert_with(|| {
                fused.push(Fused {
                    id: key.clone(),
                    score: 0.0,
                    ranks: Vec::new(),
                });
                fused.len() - 1
            });
            fused[i].score += weight * score;
            fused[i].ranks.push(ChannelRank {
                channel: "context",
                rank: *rank,
                score: *score,
            });
        }
    }
    fused.sort_by(|a, b| b.score.total_cmp(&a.score));
}

/// Materialized hits in recall's order: score, then newest first.
pub(super) fn sort_hits(hits: &mut [RecallHit]) {
    hits.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| b.item.time().cmp(&a.item.time()))
    });
}

/// Adds the `recency` channel to materialized hits (newest first, `weight / (k + rank)`,
/// equal times in their current order), re-sorts them and keeps the best `limit`. A weight
/// of 0 or less leaves them as they are (cut to `limit`).
pub(super) fn with_recency(
    mut hits: Vec<RecallHit>,
    weight: f64,
    k: f64,
    limit: usize,
) -> Vec<RecallHit> {
    if weight > 0.0 {
        let mut newest: Vec<usize> = (0..hits.len()).collect();
        newest.sort_by(|a, b| hits[*b].item.time().cmp(&hits[*a].item.time()));
        for (rank, i) in newest.into_iter().enumerate() {
            let hit = &mut hits[i];
            hit.score += weight / (k + (rank + 1) as f64);
            hit.ranks.push(ChannelRank {
                channel: "recency",
                rank: rank + 1,
                score: hit.item.time().0 as f64,
            });
        }
        sort_hits(&mut hits);
    }
    hits.truncate(limit);
    hits
}

/// Orders `hits` so conversations take turns: for the ordering, a hit's score is multiplied
/// by `1 - spread` once for every hit of its session placed before it. Scores themselves are
/// unchanged.
pub(super) fn spread_sessions(hits: Vec<RecallHit>, spread: f64) -> Vec<RecallHit> {
    if spread <= 0.0 || hits.len() < 3 {
        return hits;
    }
    let keep = (1.0 - spread).clamp(0.0, 1.0);
    let mut placed: HashMap<String, i32> = HashMap::new();
    let mut pending = hits;
    let mut out = Vec::with_capacity(pending.len());
    while !pending.is_empty() {
        let effective = |hit: &RecallHit| {
            let seen = hit
                .item
                .session_id()
                .and_then(|s| placed.get(s))
                .copied()
                .unwrap_or(0);
            hit.score * keep.powi(seen)
        };
        let best = pending
            .iter()
            .enumerate()
            .max_by(|(i, a), (j, b)| effective(a).total_cmp(&effective(b)).then(j.cmp(i)))
            .map_or(0, |(i, _)| i);
        let hit = pending.remove(best);
        if let Some(session) = hit.item.session_id() {
            *placed.entry(session.to_owned()).or_insert(0) += 1;
        }
        out.push(hit);
    }
    out
}

/// The rerank stage's order: each hit's score becomes the reranker's (one score per hit, in
/// order), recorded as the `rerank` channel's with its rank; hits are sorted by it (equal
/// scores keep their fused order) and the best `limit` kept.
pub(super) fn reranked(mut hits: Vec<RecallHit>, scores: &[f32], limit: usize) -> Vec<RecallHit> {
    let mut order: Vec<usize> = (0..hits.len()).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    for (rank, &i) in order.iter().enumerate() {
        let hit = &mut hits[i];
        hit.score = f64::from(scores[i]);
        hit.ranks.push(ChannelRank {
            channel: "rerank",
            rank: rank + 1,
            score: f64::from(scores[i]),
        });
    }
    let mut slots: Vec<Option<RecallHit>> = hits.into_iter().map(Some).collect();
    order
        .into_iter()
        .filter_map(|i| slots[i].take())
        .take(limit)
        .collect()
}

/// How many hits the rerank stage reads for a recall of `limit` (the reranker sees at least
/// the hits the recall returns).
pub(super) fn rerank_depth(config: &LongTermConfig, limit: usize) -> usize {
    config.rerank_depth.max(limit)
}

/// How many fused items recall materializes before the recency channel: more than `limit`
/// when recency re-ranks a pool.
pub(super) fn pool(config: &LongTermConfig, limit: usize) -> usize {
    match config.weights.recency > 0.0 {
        true => config.recency_pool.max(limit),
        false => limit,
    }
}

/// The ids (recall ids: raw messages carry the `raw:` prefix) a recall under `config` with
/// `limit` returns for these candidates, best first, when the service has no reranker (the
/// rerank stage reads the items' texts, which candidates do not carry).
///
/// Refused when context expansion is on with another radius than the candidates were
/// collected with.
///
/// ```
/// use std::collections::HashMap;
/// use memory_core::Timestamp;
/// use memory_engine::long_term::{CandidateItem, Candidates, LongTermConfig, rank};
/// let item = |at| CandidateItem { time: Timestamp(at), session: None, survivor: None };
/// let candidates = Candidates {
///     channels: vec![
///         ("raw_fts", vec![("raw:a".into(), 2.0), ("raw:b".into(), 1.0)]),
///         ("raw_vector", vec![("raw:b".into(), 0.9)]),
///     ],
///     items: HashMap::from([("raw:a".into(), item(1)), ("raw:b".into(), item(2))]),
///     neighbours: HashMap::new(),
///     radius: 0,
/// };
/// let mut config = LongTermConfig::default();
/// config.context_radius = 0;
/// assert_eq!(rank(&candidates, &config, 10).unwrap(), ["raw:b", "raw:a"]);
/// config.weights.raw_vector = 0.0;
/// assert_eq!(rank(&candidates, &config, 10).unwrap(), ["raw:a", "raw:b"]);
/// ```
pub fn rank(candidates: &Candidates, config: &LongTermConfig, limit: usize) -> Result<Vec<String>> {
    let context = context_on(config);
    if context && config.context_radius != candidates.radius {
        return Err(MemoryError::invalid(format!(
            "context radius {} asked of candidates collected with radius {}",
            config.context_radius, candidates.radius
        )));
    }
    let mut fused = rrf(
        config.rrf_k,
        &weighted(candidates.channels.clone(), &config.weights),
    );
    if context {
        let top = top_raw(&fused, limit, super::recall_scope::RAW_PREFIX);
        let neighbours: Vec<Vec<String>> = top
            .iter()
            .map(|(id, _, _)| candidates.neighbours.get(id).cloned().unwrap_or_default())
            .collect();
        lend_context(&mut fused, &top, &neighbours, config.context_weight);
    }
    let pool = pool(config, limit);
    // A merged memory's survivor is returned once, at the best score either reached.
    let mut returned = HashSet::new();
    let mut hits: Vec<RecallHit> = fused
        .into_iter()
        .filter_map(|f| {
            let item = candidates.items.get(&f.id)?;
            let id = item.survivor.clone().unwrap_or(f.id);
            if !returned.insert(id.clone()) {
                return None;
            }
            Some(RecallHit {
                item: RecallItem::Raw {
                    id,
                    session_id: item.session.clone().unwrap_or_default(),
                    role: String::new(),
                    content: String::new(),
                    created_at: item.time,
                },
                score: f.score,
                ranks: f.ranks,
            })
        })
        .take(pool)
        .collect();
    sort_hits(&mut hits);
    let hits = with_recency(hits, config.weights.recency, config.rrf_k, limit);
    Ok(spread_sessions(hits, config.session_spread)
        .into_iter()
        .map(|h| h.item.id().to_owned())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(session: &str, score: f64) -> RecallHit {
        RecallHit {
            item: RecallItem::Raw {
                id: format!("{session}-{score}"),
                session_id: session.to_owned(),
                role: "user".into(),
                content: String::new(),
                created_at: Timestamp(0),
            },
            score,
            ranks: Vec::new(),
        }
    }

    fn said_at(id: &str, score: f64, at: i64) -> RecallHit {
        RecallHit {
            item: RecallItem::Raw {
                id: id.to_owned(),
                session_id: "s".into(),
                role: "user".into(),
                content: String::new(),
                created_at: Timestamp(at),
            },
            score,
            ranks: Vec::new(),
        }
    }

    fn order(hits: &[RecallHit]) -> Vec<&str> {
        hits.iter().map(|h| h.item.id()).collect()
    }

    #[test]
    fn recency_favours_the_newest_of_close_hits_and_is_off_at_zero() {
        let hits = vec![
            said_at("old", 0.50, 1_000),
            said_at("new", 0.48, 9_000),
            said_at("middle", 0.30, 5_000),
            said_at("far-below", 0.05, 10_000),
        ];
        let off = with_recency(hits.clone(), 0.0, 5.0, 3);
        assert_eq!(order(&off), ["old", "new", "middle"]);
        assert!(off.iter().all(|h| h.ranks.is_empty()));

        // Weight 1 with k = 5: the newest gains 1/6, the next 1/7, then 1/8 and 1/9; the
        // newest of all is too far below to rise into the limit.
        let on = with_recency(hits, 1.0, 5.0, 3);
        assert_eq!(order(&on), ["new", "old", "middle"]);
        let new = &on[0];
        assert!(
            (new.score - (0.48 + 1.0 / 7.0)).abs() < 1e-9,
            "{}",
            new.score
        );
        assert_eq!(new.ranks[0].channel, "recency");
        assert_eq!(new.ranks[0].rank, 2);
    }

    #[test]
    fn reranking_orders_by_the_rerankers_scores_records_them_and_keeps_the_limit() {
        let hits = vec![
            hit("s1", 0.9),
            hit("s2", 0.8),
            hit("s3", 0.7),
            hit("s4", 0.6),
        ];
        let out = reranked(hits, &[0.1, 0.95, 0.5, 0.5], 3);
        let sessions: Vec<_> = out.iter().filter_map(|h| h.item.session_id()).collect();
        assert_eq!(sessions, ["s2", "s3", "s4"], "ties keep the fused order");
        assert_eq!(out[0].score, f64::from(0.95_f32));
        let rerank = out[1].ranks.last().unwrap();
        assert_eq!((rerank.channel, rerank.rank), ("rerank", 2));
        assert!(reranked(Vec::new(), &[], 3).is_empty());
        let config = LongTermConfig {
            rerank_depth: 30,
            ..LongTermConfig::default()
        };
        assert_eq!(rerank_depth(&config, 10), 30);
        assert_eq!(rerank_depth(&config, 50), 50);
    }

    #[test]
    fn spreading_lets_other_sessions_take_turns_without_changing_scores() {
        let hits = vec![hit("a", 1.0), hit("a", 0.9), hit("a", 0.8), hit("b", 0.6)];
        let plain = spread_sessions(hits.clone(), 0.0);
        assert_eq!(order(&plain), ["a-1", "a-0.9", "a-0.8", "b-0.6"]);
        // 0.9 × 0.5 = 0.45 < 0.6: session b comes second.
        let spread = spread_sessions(hits, 0.5);
        assert_eq!(order(&spread), ["a-1", "b-0.6", "a-0.9", "a-0.8"]);
        assert_eq!(spread[1].score, 0.6);
    }

    fn candidates() -> Candidates {
        let item = |at: i64, session: &str| CandidateItem {
            time: Timestamp(at),
            session: Some(session.to_owned()),
            survivor: None,
        };
        Candidates {
            channels: vec![
                (
                    "raw_fts",
                    vec![("raw:a".into(), 3.0), ("raw:c".into(), 1.0)],
                ),
                ("raw_vector", vec![("raw:c".into(), 0.8)]),
            ],
            items: HashMap::from([
                ("raw:a".into(), item(10, "s1")),
                ("raw:b".into(), item(11, "s1")),
                ("raw:c".into(), item(50, "s2")),
            ]),
            neighbours: HashMap::from([
                ("raw:a".into(), vec!["raw:b".into()]),
                ("raw:c".into(), vec![]),
            ]),
            radius: 1,
        }
    }

    #[test]
    fn context_lends_a_share_to_neighbours_that_no_channel_found() {
        let mut config = LongTermConfig::default();
        config.weights.raw_vector = 0.0;
        // a: 1/6, c: 1/7; b gets half of a's score.
        assert_eq!(
            rank(&candidates(), &config, 10).unwrap(),
            ["raw:a", "raw:c", "raw:b"]
        );
        config.context_weight = 0.0;
        assert_eq!(
            rank(&candidates(), &config, 10).unwrap(),
            ["raw:a", "raw:c"]
        );
    }

    #[test]
    fn items_recall_would_skip_are_skipped_and_the_limit_holds() {
        let mut candidates = candidates();
        candidates.items.remove("raw:a");
        let config = LongTermConfig::default();
        assert_eq!(rank(&candidates, &config, 10).unwrap(), ["raw:c", "raw:b"]);
        assert_eq!(rank(&candidates, &config, 1).unwrap(), ["raw:c"]);
    }

    #[test]
    fn merged_memories_give_their_survivor_one_place_at_the_best_rank() {
        let item = |survivor: Option<&str>| CandidateItem {
            time: Timestamp(5),
            session: None,
            survivor: survivor.map(str::to_owned),
        };
        let candidates = Candidates {
            channels: vec![(
                "memory_fts",
                vec![
                    ("absorbed-1".into(), 4.0),
                    ("other".into(), 3.0),
                    ("survivor".into(), 2.0),
                    ("absorbed-2".into(), 1.0),
                ],
            )],
            items: HashMap::from([
                ("absorbed-1".into(), item(Some("survivor"))),
                ("absorbed-2".into(), item(Some("survivor"))),
                ("survivor".into(), item(None)),
                ("other".into(), item(None)),
            ]),
            neighbours: HashMap::new(),
            radius: 0,
        };
        let config = LongTermConfig {
            context_weight: 0.0,
            ..LongTermConfig::default()
        };
        assert_eq!(
            rank(&candidates, &config, 10).unwrap(),
            ["survivor", "other"]
        );
        assert_eq!(rank(&candidates, &config, 1).unwrap(), ["survivor"]);
    }

    #[test]
    fn another_context_radius_than_collected_is_refused() {
        let mut config = LongTermConfig {
            context_radius: 2,
            ..LongTermConfig::default()
        };
        let error = rank(&candidates(), &config, 10).unwrap_err();
        assert!(error.to_string().contains("radius 2"), "{error}");
        config.context_weight = 0.0;
        assert!(rank(&candidates(), &config, 10).is_ok());
    }
}
