//! Long-term memory: isolated profiles with ingest / remember / recall / list / forget /
//! purge / export, typed memories extracted and verified by an LLM, vectors, and recall over
//! six channels fused by weighted reciprocal rank.
//!
//! Start at [`MemoryService`]. Everything that needs no LLM works without one; what did not
//! run is listed in each result's `degraded`.

mod accounting;
mod backends;
mod config;
mod consolidation;
mod content_id;
mod core;
mod degradation;
mod digest;
mod expiry;
mod extraction;
mod fusion;
mod hits;
mod indexed_profile_store;
mod ingest;
mod jobs;
mod keys;
mod memories;
mod one_stage_job;
mod query;
mod query_dates;
mod ranking;
mod recall;
mod recall_scope;
mod render;
mod schemas;
mod service;
mod settings;
mod structured;
mod survivors;
mod synthesis;
mod temporal;
mod tiered_text;
mod transfer;
mod vectorize;

pub use accounting::{StageUsage, UsageReport};
pub use backends::LongTermBackends;
pub use config::{ChannelWeights, KindLifetimes, LongTermConfig, StageModels};
pub use consolidation::{
    CONSOLIDATE_KIND, ConsolidationReport, Contradiction, ContradictionMember, MergeMember,
    PlannedMerge, SimilarityThresholds,
};
pub use content_id::{content_id, occurrence_id};
pub use degradation::Degradation;
pub use digest::{DIGEST_KIND, DigestReport, ProfileDigest};
pub use expiry::{EXPIRE_KIND, EXPIRED_REASON, ExpirySweep};
pub use extraction::{
    Candidate, Draft, ExtractionReport, Pass, TranscriptLine, build_transcript,
    build_transcript_in, chunk_lines, detail_windows, merge_candidates, parse_iso_date,
    render_lines, resolve_relative_dates, resolve_relative_dates_in,
};
pub use fusion::{Channel, ChannelRank, Fused, rrf};
pub use hits::{RecallHit, RecallItem};
pub use indexed_profile_store::IndexedProfileStore;
pub use ingest::{IngestMessage, IngestReport, RememberRequest, Remembered, parse_message_time};
pub use jobs::{IngestJob, JobStatus};
pub use keys::normalize_key;
pub use memories::{MAX_LIST_PAGE, PurgeReport, ReembedReport};
pub use query::{QueryAnalysis, STOP_WORDS, query_terms};
pub use query_dates::{DateWindow, query_window};
pub use ranking::{CandidateItem, Candidates, ChannelHits, rank};
pub use recall::{MAX_RECALL_LIMIT, RecallRequest, RecallResponse};
pub use render::{render_recall, render_recall_with};
pub use service::MemoryService;
pub use settings::{
    CATEGORIES_KEY, Category, MAX_CATEGORIES, MAX_INSTRUCTIONS_CHARS, ProfileSettings,
    text_language_named,
};
pub use synthesis::SynthesizedAnswer;
pub use temporal::{describe_days, temporal_facts};
pub use tiered_text::{SmallProfileText, TieredTextIndexes};
pub use transfer::{
    EXPORT_FORMAT, EXPORT_VERSION, ExportCursor, ExportLine, ImportReport, ProfileExportPage,
};
pub use vectorize::{
    MEMORY_NAMESPACE, RAW_NAMESPACE, is_vectorized, memory_embedding_text, raw_embedding_text,
};

/// Long-term backends over in-memory profiles and their job queue.
#[cfg(test)]
fn in_memory(
    profiles: std::sync::Arc<memory_testkit::in_memory::InMemoryProfiles>,
) -> LongTermBackends {
    let jobs = profiles.jobs();
    let outbox = std::sync::Arc::new(memory_testkit::in_memory::InMemoryKeyValueStore::new());
    LongTermBackends::new(profiles, jobs, outbox)
}

#[cfg(test)]
mod consolidation_tests;
#[cfg(test)]
mod digest_tests;
#[cfg(test)]
mod expiry_tests;
#[cfg(test)]
mod extraction_tests;
#[cfg(test)]
mod recall_tests;
#[cfg(test)]
mod settings_tests;
#[cfg(test)]
mod tests;
