//! What did not run, and why: the `degraded` list of every long-term result.

use serde::Serialize;

/// A part of the pipeline that did not run, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Degradation {
    /// The stage or channel (`query_analysis`, `vectors`, `synthesis`, ...).
    pub feature: String,
    /// Why it was skipped or failed.
    pub reason: String,
}
