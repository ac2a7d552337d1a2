//! The merge plan of one consolidation run: candidate pairs from shared rare words, each
//! pair judged by [`super::similarity`]'s rules, and groups in which every two members were
//! judged the same (never a chain: A like B and B like C does not merge A with C unless A is
//! like C), each with its survivor.

use std::collections::{HashMap, HashSet};

use memory_core::ports::MemoryRecord;

use super::similarity::{Features, commoner_differences, cosine, told_apart, word_overlap};

/// The thresholds of the LLM-free rules (fixed defaults, documented in docs/long-term.md).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimilarityThresholds {
    /// The least weighted word overlap (weighted Jaccard of content stems) of two memories.
    pub least_overlap: f32,
    /// How many times commoner in the profile than the rarest word two memories share every
    /// word only one of them says must be (see [`commoner_differences`]).
    pub commoner_by: f32,
    /// The least cosine of their vectors when both have one: a veto of pairs whose words
    /// agree but whose meaning, as the embedding model reads it, does not.
    pub cosine: f32,
    /// The most memories one group may hold.
    pub max_group: usize,
}

impl Default for SimilarityThresholds {
    fn default() -> Self {
        Self {
            least_overlap: 0.25,
            commoner_by: 1.5,
            cosine: 0.7,
            max_group: 8,
        }
    }
}

/// Why a pair was judged the same: the evidence the merge note and the report give.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Evidence {
    /// The weighted word overlap.
    pub overlap: f32,
    /// How much commoner the words only one says are than the rarest they share.
    pub commoner_by: f32,
    /// The cosine of their vectors, when both have one.
    pub cosine: Option<f32>,
    /// Whether their normalised texts are equal.
    pub same_words: bool,
}

/// A planned group: indexes into the run's memories, the survivor first.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Group {
    pub members: Vec<usize>,
    /// The weakest evidence between the survivor and each absorbed member, in member order
    /// (without the survivor).
    pub evidence: Vec<Evidence>,
}

/// Stems held by more than this share of the memories (and more than
/// [`MIN_COMMON_POSTING`] memories) do not propose candidates: a pair that shares only
/// such words cannot reach the overlap threshold.
const COMMON_SHARE: usize = 50;
const MIN_COMMON_POSTING: usize = 64;

/// What the rules know of the profile: each stem's weight and how many memories hold it.
pub(super) struct WordStatistics<'a> {
    /// Each stem's weight, by id.
    pub weights: &'a [f32],
    /// How many memories hold each stem, by id.
    pub document_frequency: &'a [u32],
}

/// Judges the pair `(i, j)`; `None` when they are not the same.
fn judge(
    memories: &[MemoryRecord],
    features: &[Features],
    vectors: &[Option<Vec<f32>>],
    words: &WordStatistics<'_>,
    thresholds: &SimilarityThresholds,
    (i, j): (usize, usize),
) -> Option<Evidence> {
    let (a, b) = (&features[i], &features[j]);
    if told_apart((&memories[i], a), (&memories[j], b)).is_some() {
        return None;
    }
    let overlap = word_overlap(a, b, words.weights);
    let commoner_by = commoner_differences(a, b, words.document_frequency);
    let same_words = a.normalised == b.normalised;
    let cosine = match (&vectors[i], &vectors[j]) {
        (Some(x), Some(y)) => Some(cosine(x, y)),
        _ => None,
    };
    let same = same_words
        || (overlap >= thresholds.least_overlap
            && commoner_by >= thresholds.commoner_by
            && cosine.is_none_or(|c| c >= thresholds.cosine));
    same.then_some(Evidence {
        overlap,
        commoner_by,
        cosine,
        same_words,
    })
}

/// The pairs worth judging: memories sharing a content word that fewer than
/// `max(MIN_COMMON_POSTING, n / COMMON_SHARE)` memories hold, with enough weight in common
/// to reach the lowest overlap threshold.
pub(super) fn candidate_pairs(
    features: &[Features],
    weights: &[f32],
    least_overlap: f32,
) -> Vec<(usize, usize)> {
    let cap = MIN_COMMON_POSTING.max(features.len() / COMMON_SHARE);
    let mut postings: HashMap<u32, Vec<usize>> = HashMap::new();
    for (i, f) in features.iter().enumerate() {
        for &stem in &f.stems {
            postings.entry(stem).or_default().push(i);
        }
    }
    let total = |f: &Features| -> f32 {
        f.stems
            .iter()
            .map(|s| weights.get(*s as usize).copied().unwrap_or(0.0))
            .sum()
    };
    let totals: Vec<f32> = features.iter().map(total).collect();
    let mut pairs = Vec::new();
    let mut shared: HashMap<usize, f32> = HashMap::new();
    for (i, f) in features.iter().enumerate() {
        shared.clear();
        for &stem in &f.stems {
            let Some(posting) = postings.get(&stem) else {
                continue;
            };
            if posting.len() > cap {
                continue;
            }
            let weight = weights.get(stem as usize).copied().unwrap_or(0.0);
            for &j in posting.iter().filter(|&&j| j > i) {
                *shared.entry(j).or_default() += weight;
            }
        }
        for (&j, &rare) in &shared {
            // An upper bound of the overlap: the common words could all be shared too.
            let common: f32 = f
                .stems
                .iter()
                .filter(|s| postings.get(s).is_some_and(|p| p.len() > cap))
                .map(|s| weights.get(*s as usize).copied().unwrap_or(0.0))
                .sum();
            let best = (rare + common) / (totals[i] + totals[j] - rare - common).max(f32::EPSILON);
            if best >= least_overlap || features[i].normalised == features[j].normalised {
                pairs.push((i, j));
            }
        }
    }
    // Memories with no rare word at all (every word common) are paired only by equal text.
    let mut by_text: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, f) in features.iter().enumerate() {
        by_text.entry(f.normalised.as_str()).or_default().push(i);
    }
    for same in by_text.values().filter(|v| v.len() > 1) {
        for (n, &i) in same.iter().enumerate() {
            for &j in &same[n + 1..] {
                pairs.push((i.min(j), i.max(j)));
            }
        }
    }
    pairs.sort_unstable();
    pairs.dedup();
    pairs
}

/// How good a survivor `m` is: a keyed memory first, then the most recently said, then
/// the one with the most sources, then the longest, then the smallest id (so the choice is
/// the same in every process).
fn survivor_rank(m: &MemoryRecord) -> impl Ord + '_ {
    (
        m.key.is_some(),
        m.last_confirmed(),
        m.source_message_ids.len(),
        m.content.len(),
        std::cmp::Reverse(m.id.as_str()),
    )
}

/// The groups of the run: the candidate `pairs` judged the same, joined strongest first
/// into groups whose every two members were judged the same, at most `max_group` each; the
/// survivor first ([`survivor_rank`]). Also every pair judged the same.
pub(super) fn groups(
    memories: &[MemoryRecord],
    features: &[Features],
    vectors: &[Option<Vec<f32>>],
    words: &WordStatistics<'_>,
    thresholds: &SimilarityThresholds,
    pairs: &[(usize, usize)],
) -> (Vec<Group>, HashSet<(usize, usize)>) {
    let mut same: Vec<((usize, usize), Evidence)> = pairs
        .iter()
        .copied()
        .filter_map(|pair| {
            judge(memories, features, vectors, words, thresholds, pair).map(|e| (pair, e))
        })
        .collect();
    // Strongest first; ties in index order, so the plan is deterministic.
    let strength = |e: &Evidence| {
        if e.same_words {
            3.0
        } else {
            e.overlap + e.cosine.unwrap_or(0.0)
        }
    };
    same.sort_by(|(pa, a), (pb, b)| strength(b).total_cmp(&strength(a)).then(pa.cmp(pb)));
    let evidence: HashMap<(usize, usize), Evidence> = same.iter().copied().collect();
    let mut group_of: Vec<usize> = (0..memories.len()).collect();
    let mut members: HashMap<usize, Vec<usize>> = HashMap::new();
    for ((i, j), _) in &same {
        let (gi, gj) = (group_of[*i], group_of[*j]);
        if gi == gj {
            continue;
        }
        let a = members.get(&gi).cloned().unwrap_or_else(|| vec![gi]);
        let b = members.get(&gj).cloned().unwrap_or_else(|| vec![gj]);
        if a.len() + b.len() > thresholds.max_group {
            continue;
        }
        let all_same = a.iter().all(|x| {
            b.iter()
                .all(|y| evidence.contains_key(&(*x.min(y), *x.max(y))))
        });
        if !all_same {
            continue;
        }
        for &m in &b {
            group_of[m] = gi;
        }
        members.remove(&gj);
        members.insert(gi, a.into_iter().chain(b).collect());
    }
    let mut out: Vec<Group> = members
        .into_values()
        .filter(|m| m.len() > 1)
        .map(|mut m| {
            m.sort_by(|x, y| survivor_rank(&memories[*y]).cmp(&survivor_rank(&memories[*x])));
            let survivor = m[0];
            let evidence = m[1..]
                .iter()
                .filter_map(|x| evidence.get(&(survivor.min(*x), survivor.max(*x))).copied())
                .collect();
            Group {
                members: m,
                evidence,
            }
        })
        .collect();
    out.sort_by_key(|g| g.members[0]);
    (out, evidence.into_keys().collect())
}
