//! The message model: JSON-compatible with the AI SDK `UIMessage` that agent front ends produce.
//!
//! Every field the SDK defines is typed; every field it does not (and every unknown part type)
//! is kept in an `extra` map or [`Part::Unknown`], so a message round-trips through storage
//! byte-for-byte equivalent as JSON.

mod part;
mod role;
mod tool;

use serde::de::{Error as _, MapAccess, Visitor};
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
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UiMessage {
    /// Unique within its session.
    pub id: String,
    /// Who produced the message.
    pub role: Role,
    /// The content, in order.
    pub parts: Vec<Part>,
    /// Application metadata, stored as given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    /// Creation time as the client sent it (usually an ISO-8601 string), stored as given.
    #[serde(rename = "createdAt", skip_serializing_if = "Option::is_none")]
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

impl<'de> Deserialize<'de> for UiMessage {
    /// A direct map visitor (no `#[serde(flatten)]` buffering): known keys are typed, every
    /// other key lands in `extra`. A key present with `null` stays `Some(Value::Null)`.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(UiMessageVisitor)
    }
}

struct UiMessageVisitor;

impl<'de> Visitor<'de> for UiMessageVisitor {
    type Value = UiMessage;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a UIMessage object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<UiMessage, A::Error> {
        let mut id = None;
        let mut role = None;
        let mut parts = None;
        let mut metadata = None;
        let mut created_at = None;
        let mut extra = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "id" => id = Some(map.next_value::<String>()?),
                "role" => role = Some(map.next_value::<Role>()?),
                "parts" => parts = Some(map.next_value::<Vec<Part>>()?),
                "metadata" => metadata = Some(map.next_value::<Value>()?),
                "createdAt" => created_at = Some(map.next_value::<Value>()?),
                _ => {
                    let value = map.next_value::<Value>()?;
                    extra.insert(key, value);
                }
            }
        }
        Ok(UiMessage {
            id: id.ok_or_else(|| A::Error::missing_field("id"))?,
            role: role.ok_or_else(|| A::Error::missing_field("role"))?,
            parts: parts.ok_or_else(|| A::Error::missing_field("parts"))?,
            metadata,
            created_at,
            extra,
        })
    }
}

#[cfg(test)]
mod tests;
