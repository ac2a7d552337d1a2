//! Identifiers and the rules they follow.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::{MemoryError, Result};

/// Ids starting with this prefix are reserved for synthetic compaction overlay messages and are
/// rejected on every write path.
pub const COMPACTION_PREFIX: &str = "compaction_";

/// The identifier of one conversation (a session). Non-empty, at most 256 bytes, no control
/// characters.
///
/// ```
/// use memory_core::SessionId;
/// let id = SessionId::new("support-42").unwrap();
/// assert_eq!(id.as_str(), "support-42");
/// assert!(SessionId::new("").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct SessionId(String);

impl SessionId {
    /// Validates and wraps a session id.
    pub fn new(id: impl Into<String>) -> Result<Self> {
        let id = id.into();
        check_id("session id", &id)?;
        Ok(Self(id))
    }

    /// The id as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for SessionId {
    type Error = MemoryError;
    fn try_from(value: String) -> Result<Self> {
        Self::new(value)
    }
}

impl TryFrom<&str> for SessionId {
    type Error = MemoryError;
    fn try_from(value: &str) -> Result<Self> {
        Self::new(value)
    }
}

impl From<SessionId> for String {
    fn from(id: SessionId) -> Self {
        id.0
    }
}

impl AsRef<str> for SessionId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// The longest id, in bytes.
pub const MAX_ID_BYTES: usize = 256;

/// The one rule every id follows (sessions, messages): non-empty, at most [`MAX_ID_BYTES`],
/// no control characters (a NUL or a newline in an id could not be typed back on a command
/// line, nor logged unambiguously).
fn check_id(what: &str, id: &str) -> Result<()> {
    if id.is_empty() {
        return Err(MemoryError::invalid(format!("{what} must not be empty")));
    }
    if id.len() > MAX_ID_BYTES {
        return Err(MemoryError::invalid(format!(
            "{what} is {} bytes; the limit is {MAX_ID_BYTES}",
            id.len()
        )));
    }
    if id.chars().any(char::is_control) {
        return Err(MemoryError::invalid(format!(
            "{what} {id:?} must not contain control characters"
        )));
    }
    Ok(())
}

/// Checks a message id for a write: the rule of every id (non-empty, at most 256 bytes, no
/// control characters), and not in the reserved [`COMPACTION_PREFIX`] namespace.
///
/// ```
/// use memory_core::validate_message_id;
/// assert!(validate_message_id("msg-1").is_ok());
/// assert!(validate_message_id("compaction_abc").is_err());
/// assert!(validate_message_id("a\u{0}b").is_err());
/// ```
pub fn validate_message_id(id: &str) -> Result<()> {
    check_id("message id", id)?;
    if id.starts_with(COMPACTION_PREFIX) {
        return Err(MemoryError::invalid(format!(
            "message id {id:?} uses the reserved prefix {COMPACTION_PREFIX:?} (compaction overlays); choose another id"
        )));
    }
    Ok(())
}

/// Checks a memory profile name: 1 to 128 of ASCII letters, digits, `-`, `_` and `.`, not
/// starting with `.` (names become file names on the embedded default).
///
/// ```
/// use memory_core::validate_profile_name;
/// assert!(validate_profile_name("team-alpha_2").is_ok());
/// assert!(validate_profile_name("../etc").is_err());
/// ```
pub fn validate_profile_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 128
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(MemoryError::invalid(format!(
            "profile name {name:?} must be 1-128 letters, digits, '-', '_' or '.', not starting with '.'"
        )))
    }
}
