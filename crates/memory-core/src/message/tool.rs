use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A tool invocation: a `tool-<name>` part, or a `dynamic-tool` part that names its tool in
/// `toolName`. In `UIMessage` form the call and its result are the same part, moving from
/// `input-available` to `output-available`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolPart {
    /// The tool's name (from the part type `tool-<name>`, or `toolName` for dynamic tools).
    #[serde(skip)]
    pub tool_name: String,
    /// Links the call to its result.
    #[serde(rename = "toolCallId")]
    pub tool_call_id: String,
    /// Lifecycle state.
    pub state: ToolState,
    /// The call's arguments.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub input: Option<Value>,
    /// The result, once available.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub output: Option<Value>,
    /// The error, in state `output-error`.
    #[serde(rename = "errorText", skip_serializing_if = "Option::is_none")]
    pub error_text: Option<String>,
    /// Other fields (`providerExecuted`, `callProviderMetadata`, `approval`, ...), kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ToolPart {
    /// True when the call has finished: its output, error or denial is recorded.
    pub fn is_complete(&self) -> bool {
        matches!(
            self.state,
            ToolState::OutputAvailable | ToolState::OutputError | ToolState::OutputDenied
        )
    }
}

/// The state of a tool part. Unknown states are kept as [`ToolState::Other`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum ToolState {
    /// `input-streaming`
    InputStreaming,
    /// `input-available`
    InputAvailable,
    /// `approval-requested`
    ApprovalRequested,
    /// `approval-responded`
    ApprovalResponded,
    /// `output-available`
    OutputAvailable,
    /// `output-error`
    OutputError,
    /// `output-denied`
    OutputDenied,
    /// Any other state string.
    Other(String),
}

impl ToolState {
    /// The wire name.
    pub fn as_str(&self) -> &str {
        match self {
            ToolState::InputStreaming => "input-streaming",
            ToolState::InputAvailable => "input-available",
            ToolState::ApprovalRequested => "approval-requested",
            ToolState::ApprovalResponded => "approval-responded",
            ToolState::OutputAvailable => "output-available",
            ToolState::OutputError => "output-error",
            ToolState::OutputDenied => "output-denied",
            ToolState::Other(s) => s,
        }
    }
}

impl From<String> for ToolState {
    fn from(s: String) -> Self {
        match s.as_str() {
            "input-streaming" => ToolState::InputStreaming,
            "input-available" => ToolState::InputAvailable,
            "approval-requested" => ToolState::ApprovalRequested,
            "approval-responded" => ToolState::ApprovalResponded,
            "output-available" => ToolState::OutputAvailable,
            "output-error" => ToolState::OutputError,
            "output-denied" => ToolState::OutputDenied,
            _ => ToolState::Other(s),
        }
    }
}

impl From<ToolState> for String {
    fn from(state: ToolState) -> Self {
        match state {
            ToolState::Other(s) => s,
            known => known.as_str().to_owned(),
        }
    }
}
