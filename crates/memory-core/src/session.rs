//! Session registry records: metadata and usage of each conversation.

use serde::{Deserialize, Serialize};

use crate::{SessionId, Timestamp};

/// What the registry knows about a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionInfo {
    /// The session id.
    pub id: SessionId,
    /// Display name; `None` until named.
    pub name: Option<String>,
    /// The session this one was forked or split from.
    pub parent_session_id: Option<SessionId>,
    /// The model the session talks to.
    pub model: Option<String>,
    /// Where the session came from (an app, a channel, an import).
    pub source: Option<String>,
    /// Accumulated usage.
    pub usage: SessionUsage,
    /// Why the session ended (`compaction`, ...); `None` while open.
    pub end_reason: Option<String>,
    /// The long-term profile the session is bound to: compaction and the end of the
    /// session ship its history there, and its tools recall from it. `None`: unbound.
    #[serde(default)]
    pub profile: Option<String>,
    /// Creation time.
    pub created_at: Timestamp,
    /// Last change to the session or its messages.
    pub updated_at: Timestamp,
}

/// Token and cost accounting of a session.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct SessionUsage {
    /// Input (prompt) tokens.
    pub input_tokens: u64,
    /// Output (completion) tokens.
    pub output_tokens: u64,
    /// Estimated cost in the caller's currency unit.
    pub cost: f64,
}

/// A session to create.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct NewSession {
    /// The id; `None` lets the caller's service generate one.
    pub id: Option<SessionId>,
    /// Display name.
    pub name: Option<String>,
    /// Parent session.
    pub parent_session_id: Option<SessionId>,
    /// Model.
    pub model: Option<String>,
    /// Source.
    pub source: Option<String>,
    /// The long-term profile to bind the session to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
}

/// A change to a session's metadata; `None` fields stay as they are.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SessionPatch {
    /// New name.
    pub name: Option<String>,
    /// New model.
    pub model: Option<String>,
    /// New end reason.
    pub end_reason: Option<String>,
    /// A change of the profile binding: `Some(Some(p))` binds to `p`, `Some(None)` unbinds,
    /// `None` leaves it (in JSON: `"profile": "p"`, `"profile": null`, or absent).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "binding_change"
    )]
    pub profile: Option<Option<String>>,
}

/// A present `profile` field is a change (its `null` unbinds); an absent one is none. Use
/// it with `#[serde(default, deserialize_with = "memory_core::binding_change")]`.
pub fn binding_change<'de, D>(deserializer: D) -> Result<Option<Option<String>>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    Option::<String>::deserialize(deserializer).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_patch_tells_unbinding_from_leaving_the_binding() {
        let leave: SessionPatch = serde_json::from_str("{}").unwrap();
        assert_eq!(leave.profile, None);
        let unbind: SessionPatch = serde_json::from_str(r#"{"profile": null}"#).unwrap();
        assert_eq!(unbind.profile, Some(None));
        let bind: SessionPatch = serde_json::from_str(r#"{"profile": "team"}"#).unwrap();
        assert_eq!(bind.profile, Some(Some("team".into())));
    }

    #[test]
    fn an_exported_record_without_a_profile_reads_as_unbound() {
        let info: SessionInfo = serde_json::from_value(serde_json::json!({
            "id": "s", "name": null, "parent_session_id": null, "model": null, "source": null,
            "usage": {"input_tokens": 0, "output_tokens": 0, "cost": 0.0},
            "end_reason": null, "created_at": 1, "updated_at": 2
        }))
        .unwrap();
        assert_eq!(info.profile, None);
    }
}
