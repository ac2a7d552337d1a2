//! Long-term memory (the first, LLM-free slice): content-addressed raw-message ingest,
//! `remember` with supersession by key, list / forget / purge, and recall over the text
//! channels fused by reciprocal rank. Extraction, verification, vectors and synthesis build
//! on these ports next.

mod content_id;
mod fusion;
mod service;
mod transfer;

pub use content_id::content_id;
pub use fusion::{Channel, ChannelRank, Fused, rrf};
pub use service::{
    IngestReport, MemoryService, RecallHit, RecallItem, RememberRequest, normalize_key,
};
pub use transfer::{EXPORT_FORMAT, EXPORT_VERSION, ExportLine, ImportReport};

#[cfg(test)]
mod tests;
