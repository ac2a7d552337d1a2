//! Tool definitions the model can call, and the calls it makes.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// A tool: a name, a description and a JSON Schema of its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// Unique name.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema (an object schema) of the arguments.
    pub parameters: Value,
}

impl ToolDefinition {
    /// OpenAI function-calling format: `{"type":"function","function":{...}}`.
    pub fn to_openai(&self) -> Value {
        json!({
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            }
        })
    }

    /// Anthropic tool format: `{"name","description","input_schema"}`.
    pub fn to_anthropic(&self) -> Value {
        json!({
            "name": self.name,
            "description": self.description,
            "input_schema": self.parameters,
        })
    }

    /// MCP tool format: `{"name","description","inputSchema"}`.
    pub fn to_mcp(&self) -> Value {
        json!({
            "name": self.name,
            "description": self.description,
            "inputSchema": self.parameters,
        })
    }
}

/// A model's request to run a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Provider-assigned call id.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// Arguments as JSON.
    pub arguments: Value,
}
