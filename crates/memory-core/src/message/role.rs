use serde::{Deserialize, Serialize};

/// The author of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions from the application.
    System,
    /// The human (or calling program).
    User,
    /// The model.
    Assistant,
}

impl Role {
    /// The wire name: `system`, `user` or `assistant`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }

    /// Parses the wire name.
    pub fn parse(s: &str) -> crate::Result<Self> {
        match s {
            "system" => Ok(Role::System),
            "user" => Ok(Role::User),
            "assistant" => Ok(Role::Assistant),
            other => Err(crate::MemoryError::invalid(format!(
                "unknown role {other:?}: expected system, user or assistant"
            ))),
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
