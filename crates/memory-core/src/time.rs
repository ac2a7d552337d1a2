//! Timestamps as milliseconds since the Unix epoch (UTC).

use serde::{Deserialize, Serialize};

/// A point in time, in milliseconds since 1970-01-01T00:00:00Z.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Timestamp(pub i64);

impl Timestamp {
    /// Milliseconds since the epoch.
    pub fn millis(self) -> i64 {
        self.0
    }
}
