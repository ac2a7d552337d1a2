//! Tunables of long-term memory: channel weights, extraction sizes, per-stage models.

use std::sync::Arc;

use memory_core::Timestamp;
use memory_core::ports::{LanguageModel, MemoryKind};

/// Reciprocal-rank-fusion weight of each recall channel.
///
/// The memory channels follow the design's order: the exact topic key is the strongest
/// signal, the memory channels (full text, direct vector, HyDE vector) come next, the
/// raw-message channels are the low-weight safety net. The channels a recall runs without an
/// LLM (raw full text at 1, the scale; raw vector, dated, recency) are fitted on both
/// development sets by `memory eval fit` (docs/benchmarks.md), which refits them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChannelWeights {
    /// Exact topic-key lookup.
    pub key: f64,
    /// Full text over memories (Porter stemming).
    pub memory_fts: f64,
    /// The query's embedding against memory vectors.
    pub direct_vector: f64,
    /// The HyDE statement's embedding against memory vectors.
    pub hyde_vector: f64,
    /// Full text over raw messages.
    pub raw_fts: f64,
    /// The query's embedding against raw-message vectors.
    pub raw_vector: f64,
    /// The query's embedding against the vectors dated inside the window its words name
    /// ("two weeks ago", "in May"): raw messages by when they were said, memories by when
    /// they were recorded. No window, no channel; 0 turns it off.
    pub dated: f64,
    /// Newest first among the best [`LongTermConfig::recency_pool`] items the other channels
    /// found (memories by when they were true, raw messages by when they were said): a
    /// re-ranking channel that favours the latest of several relevant items. 0 turns it off;
    /// the default, 0.1, is `memory eval fit`'s.
    pub recency: f64,
}

impl Default for ChannelWeights {
    fn default() -> Self {
        Self {
            key: 3.0,
            memory_fts: 2.0,
            direct_vector: 2.0,
            hyde_vector: 2.0,
            raw_fts: 1.0,
            raw_vector: 0.5,
            dated: 1.0,
            recency: 0.1,
        }
    }
}

/// Everything that can be tuned, with the design's numbers as defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct LongTermConfig {
    /// Channel weights.
    pub weights: ChannelWeights,
    /// The RRF constant `k` (5). The classic 60 was made for fusing long result lists of many
    /// systems; with a few short channel lists a small `k` keeps each channel's top ranks
    /// decisive. Chosen on a development split (LoCoMo conversations 1-2; see
    /// docs/benchmarks.md), where 5, 10, 20 and 60 were compared.
    pub rrf_k: f64,
    /// How many candidates each channel contributes (50).
    pub channel_depth: usize,
    /// Raw hits among the top results pull in this many conversational neighbours on each
    /// side (1); 0 turns context expansion off.
    pub context_radius: usize,
    /// Share of a raw hit's fused score its neighbours inherit (0.25, fitted by `memory eval
    /// fit`).
    pub context_weight: f64,
    /// How many of the best fused items the recency channel re-ranks (30), when its weight
    /// is above 0.
    pub recency_pool: usize,
    /// How many of the best items the reranker (when one is set,
    /// [`super::MemoryService::with_reranker`]) reads and reorders (30; at least the recall's
    /// limit). Each is one cross-encoder pass, so this bounds the stage's cost. Above
    /// `recency_pool`, the recency pass ranks this many items, so the order the reranker
    /// reads (and keeps when it fails) can differ from a recall without one.
    pub rerank_depth: usize,
    /// How much a further hit from a conversation already in the results gives way to hits
    /// from other conversations (0: plain score order). Each earlier hit of the same session
    /// multiplies a hit's score by `1 - session_spread` for the ordering.
    pub session_spread: f64,
    /// Whether the words naming a date ("in March", "two weeks ago") stay in the full-text
    /// query when the `dated` channel searches that window (true, fitted by `memory eval
    /// fit`; false: they leave it, and the window is the dated channel's alone).
    pub text_keeps_date_words: bool,
    /// Header carrying the profile name on every LLM call, so a provider's prompt cache is
    /// reused (`x-session-affinity`); `None` sends none.
    pub affinity_header: Option<String>,
    /// Target characters per extraction chunk (10,000).
    pub chunk_chars: usize,
    /// Messages repeated between consecutive chunks (2).
    pub chunk_overlap: usize,
    /// Chunks extracted at once (4).
    pub max_concurrent_chunks: usize,
    /// Conversations with at least this many messages get the detail pass (9).
    pub detail_min_messages: usize,
    /// Messages per detail window (8), overlapping by `chunk_overlap`.
    pub detail_window: usize,
    /// Texts per embedding call (64).
    pub embed_batch: usize,
    /// How long a worker's claim on an ingest job lasts without a heartbeat (60 s); a worker
    /// that dies loses the job to another after this long. Heartbeats come every third of it.
    pub job_lease_millis: u64,
    /// The waits before each retry, in place, of a job stage that failed on an unavailable
    /// backend ([`memory_core::MemoryError::Transient`]: a restart, a failover, a rate
    /// limit); by default six, about 15 s in all, within a lease.
    pub stage_retry_waits: Vec<std::time::Duration>,
    /// How many runs of a job may end on an unavailable backend (each after its retries in
    /// place) before it is marked failed (5); until then it goes back to the queue at its
    /// last checkpoint, for the next claim.
    pub transient_job_runs: u32,
    /// Default lifetimes per kind (none by default): a new memory of a kind with a lifetime
    /// expires that long after it was recorded, unless it was given its own expiry.
    pub lifetimes: KindLifetimes,
    /// The deployment's extraction steering (instructions, categories, language), under
    /// each profile's own ([`super::ProfileSettings::layered`]).
    pub settings: super::ProfileSettings,
    /// Consolidation runs on its own once a profile has recorded this many memories since its
    /// last run (after an ingest job, and on the schedule of `memory serve` and `memory
    /// worker`); 0: only on demand. 50 by default.
    pub consolidate_after: usize,
    /// The most current memories one consolidation run reads (100,000): a larger profile is
    /// consolidated on its oldest ones, and the report says so.
    pub consolidation_max_memories: usize,
    /// The LLM-free rules' thresholds (see docs/long-term.md).
    pub similarity: super::SimilarityThresholds,
    /// The profile's digest is written again once this many memories were recorded since it
    /// was (20), or when a memory it draws on is no longer current.
    pub digest_after: usize,
}

/// How long memories of each kind stay current by default, in milliseconds (`None`: for
/// ever). A memory given its own `expires_at` keeps it.
///
/// ```
/// use memory_core::{Timestamp, ports::MemoryKind};
/// use memory_engine::long_term::KindLifetimes;
/// let lifetimes = KindLifetimes { task: Some(1_000), ..KindLifetimes::default() };
/// assert_eq!(lifetimes.expiry(MemoryKind::Task, Timestamp(5)), Some(Timestamp(1_005)));
/// assert_eq!(lifetimes.expiry(MemoryKind::Fact, Timestamp(5)), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct KindLifetimes {
    /// Facts.
    pub fact: Option<u64>,
    /// Events.
    pub event: Option<u64>,
    /// Instructions.
    pub instruction: Option<u64>,
    /// Tasks.
    pub task: Option<u64>,
}

impl KindLifetimes {
    /// The lifetime of `kind`.
    pub fn of(&self, kind: MemoryKind) -> Option<u64> {
        match kind {
            MemoryKind::Fact => self.fact,
            MemoryKind::Event => self.event,
            MemoryKind::Instruction => self.instruction,
            MemoryKind::Task => self.task,
        }
    }

    /// When a memory of `kind` recorded at `recorded_at` expires by default (saturating).
    pub fn expiry(&self, kind: MemoryKind, recorded_at: Timestamp) -> Option<Timestamp> {
        self.of(kind).map(|millis| {
            Timestamp(
                recorded_at
                    .millis()
                    .saturating_add(i64::try_from(millis).unwrap_or(i64::MAX)),
            )
        })
    }
}

impl Default for LongTermConfig {
    fn default() -> Self {
        Self {
            weights: ChannelWeights::default(),
            rrf_k: 5.0,
            channel_depth: 50,
            context_radius: 1,
            context_weight: 0.25,
            recency_pool: 30,
            rerank_depth: 30,
            session_spread: 0.0,
            text_keeps_date_words: true,
            affinity_header: Some("x-session-affinity".to_owned()),
            chunk_chars: 10_000,
            chunk_overlap: 2,
            max_concurrent_chunks: 4,
            detail_min_messages: 9,
            detail_window: 8,
            embed_batch: 64,
            job_lease_millis: 60_000,
            stage_retry_waits: [250, 500, 1_000, 2_000, 4_000, 8_000]
                .map(std::time::Duration::from_millis)
                .to_vec(),
            transient_job_runs: 5,
            lifetimes: KindLifetimes::default(),
            settings: super::ProfileSettings::default(),
            consolidate_after: 50,
            consolidation_max_memories: 100_000,
            similarity: super::SimilarityThresholds::default(),
            digest_after: 20,
        }
    }
}

/// The model of each LLM stage; a stage without a model is skipped and reported as degraded.
///
/// As in the design, a small model can serve extraction, verification, classification and
/// query analysis while a larger one writes synthesized answers.
#[derive(Clone, Default)]
pub struct StageModels {
    /// Candidate memories from transcript chunks.
    pub extraction: Option<Arc<dyn LanguageModel>>,
    /// The eight-check filter.
    pub verification: Option<Arc<dyn LanguageModel>>,
    /// Type, topic key and search questions.
    pub classification: Option<Arc<dyn LanguageModel>>,
    /// Topic keys, search terms and the HyDE statement of a query.
    pub query_analysis: Option<Arc<dyn LanguageModel>>,
    /// Natural-language answers.
    pub synthesis: Option<Arc<dyn LanguageModel>>,
}

impl StageModels {
    /// One model for every stage.
    pub fn all(model: Arc<dyn LanguageModel>) -> Self {
        Self {
            extraction: Some(Arc::clone(&model)),
            verification: Some(Arc::clone(&model)),
            classification: Some(Arc::clone(&model)),
            query_analysis: Some(Arc::clone(&model)),
            synthesis: Some(model),
        }
    }

    /// A small model for the structured stages and a larger one for synthesis.
    pub fn split(small: Arc<dyn LanguageModel>, large: Arc<dyn LanguageModel>) -> Self {
        Self {
            synthesis: Some(large),
            ..Self::all(small)
        }
    }

    /// True when no stage has a model.
    pub fn is_empty(&self) -> bool {
        self.extraction.is_none()
            && self.verification.is_none()
            && self.classification.is_none()
            && self.query_analysis.is_none()
            && self.synthesis.is_none()
    }
}

impl std::fmt::Debug for StageModels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StageModels")
            .field("extraction", &self.extraction.is_some())
            .field("verification", &self.verification.is_some())
            .field("classification", &self.classification.is_some())
            .field("query_analysis", &self.query_analysis.is_some())
            .field("synthesis", &self.synthesis.is_some())
            .finish()
    }
}
