//! LLM extraction of typed memories from a conversation, as the design describes: a
//! structured transcript; a full pass over ~10K-character chunks overlapping by two messages
//! and, for conversations of nine or more messages, a detail pass over small overlapping
//! windows, at most four calls at once; merge and de-duplication; verification on eight
//! checks; classification into fact / event / instruction / task with a topic key and 3-5
//! search questions.

mod chunks;
mod date_phrases;
mod passes;
mod transcript;

pub use chunks::{chunk_lines, detail_windows};
pub use passes::{Candidate, Draft, Pass, merge_candidates};
pub use transcript::{
    TranscriptLine, build_transcript, build_transcript_in, parse_iso_date, render_lines,
    resolve_relative_dates, resolve_relative_dates_in,
};

pub(crate) use passes::{classify, extract, verify};

use serde::{Deserialize, Serialize};

/// What extraction did, for the caller and the job status.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ExtractionReport {
    /// Full-pass chunks.
    pub chunks: u64,
    /// Detail-pass windows.
    pub detail_windows: u64,
    /// Candidates extracted (both passes, before merging).
    pub candidates: u64,
    /// Candidates merged into an earlier identical one.
    pub duplicates: u64,
    /// Passed verification unchanged.
    pub passed: u64,
    /// Corrected by verification.
    pub corrected: u64,
    /// Dropped by verification.
    pub dropped: u64,
    /// Not verified because a call failed or skipped them (not stored).
    pub unverified: u64,
    /// Classified by the model (the rest got typed defaults).
    pub classified: u64,
    /// Model replies that needed the repair round.
    pub repaired_outputs: u64,
    /// Calls that failed even after repair (their output is lost; see `problems`).
    pub failed_calls: u64,
    /// Candidates with no text (dropped).
    pub invalid_candidates: u64,
    /// Candidates without a valid line citation (their provenance is the whole window).
    pub uncited_candidates: u64,
    /// Memories stored.
    pub stored: u64,
    /// Older memories superseded by stored ones.
    pub superseded: u64,
    /// What went wrong, in words.
    pub problems: Vec<String>,
}

impl ExtractionReport {
    /// What went wrong in a run that still finished, in one line: calls that failed and
    /// candidates left unverified (their memories are missing); `None` when nothing did.
    pub fn errors(&self) -> Option<String> {
        if self.failed_calls == 0 && self.unverified == 0 {
            return None;
        }
        let shown: Vec<&str> = self.problems.iter().take(3).map(String::as_str).collect();
        let more = self.problems.len().saturating_sub(shown.len());
        Some(format!(
            "{} LLM call(s) failed and {} candidate(s) were left unverified: {}{}",
            self.failed_calls,
            self.unverified,
            shown.join("; "),
            if more > 0 {
                format!(" (and {more} more)")
            } else {
                String::new()
            }
        ))
    }
}
