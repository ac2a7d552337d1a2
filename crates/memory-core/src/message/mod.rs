//! The message model: JSON-compatible with the AI SDK `UIMessage` that agent front ends produce.
//!
//! Every field the SDK defines is typed; every field it does not (and every unknown part type)
//! is kept in an `extra` map or [`Part::Unknown`], so a message round-trips through storage
//! byte-for-byte equivalent as JSON.

mod part;
mod role;
mod tool;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

pub use part::{DataPart, FilePart, Part, ReasoningPart, SourcePart, TextPart};
pub use role::Role;
pub use tool::{ToolPart, ToolState};

/// One message of a conversation, as the AI SDK's `UIMessage`.
///
/// ```
/// use memory_core::UiMessage;
/// let json = r#"{"id":"m1","role":"user","parts":[{"type":"text","text":"hello"}]}"#;
/// let message: UiMessage = serde_json::from_str(json).unwrap();
/// assert_eq!(message.text(), "hello");
/// assert_eq!(serde_json::to_string(&message).unwrap(), json);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UiMessage {
    /// Unique within its session.
    pub id: String,
    /// Who produced the message.
    pub role: Role,
    /// The content, in order.
    pub parts: Vec<Part>,
    /// Application metadata, stored as given.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub metadata: Option<Value>,
    /// Creation time as the client sent it (usually an ISO-8601 string), stored as given.
    #[serde(
        rename = "createdAt",
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub created_at: Option<Value>,
    /// Fields this crate does not model; kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl UiMessage {
    /// A message with the given id, role and parts and nothing else.
    pub fn new(id: impl Into<String>, role: Role, parts: Vec<Part>) -> Self {
        Self {
            id: id.into(),
            role,
            parts,
            metadata: None,
            created_at: None,
            extra: Map::new(),
        }
    }

    /// A message holding one text part.
    ///
    /// ```
    /// use memory_core::{Role, UiMessage};
    /// let m = UiMessage::text_message("m1", Role::User, "hi");
    /// assert_eq!(m.text(), "hi");
    /// ```
    pub fn text_message(id: impl Into<String>, role: Role, text: impl Into<String>) -> Self {
        Self::new(id, role, vec![Part::text(text)])
    }

    /// The text parts joined by a newline: what full-text search indexes.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for part in &self.parts {
            if let Part::Text(text) = part {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(&text.text);
            }
        }
        out
    }

    /// The tool parts (static and dynamic) of this message.
    pub fn tool_parts(&self) -> impl Iterator<Item = &ToolPart> {
        self.parts.iter().filter_map(Part::as_tool)
    }

    /// Serializes to compact JSON.
    pub fn to_json(&self) -> crate::Result<String> {
        Ok(serde_json::to_string(self)?)
    }

    /// Parses a message from JSON, with an error that says what is wrong.
    pub fn from_json(json: &str) -> crate::Result<Self> {
        serde_json::from_str(json)
            .map_err(|e| crate::MemoryError::invalid(format!("not a valid UIMessage: {e}")))
    }
}

/// Deserializes a field that is present (even as `null`) into `Some`, so `null` round-trips.
pub(crate) fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

#[cfg(test)]
mod tests;
