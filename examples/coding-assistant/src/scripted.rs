//! A scripted model: it answers each request with the next planned step, and checks that the
//! tools it is about to call were offered (as a real model only sees what it is given).

use std::collections::VecDeque;
use std::sync::Mutex;

use async_trait::async_trait;
use memory_core::ports::{ChatRequest, ChatResponse, LanguageModel, TokenUsage};
use memory_core::{MemoryError, Result, ToolCall};
use serde_json::{Value, json};

/// One planned step.
enum Step {
    /// Call these tools (name, arguments).
    Calls(Vec<(String, Value)>),
    /// Answer with this text.
    Answer(String),
}

/// Plays back planned steps.
pub struct ScriptedModel {
    steps: Mutex<VecDeque<Step>>,
}

impl ScriptedModel {
    /// A session that uses every context tool once, and `session_search`.
    pub fn coding_session() -> Self {
        let calls = |list: Vec<(&str, Value)>| {
            Step::Calls(list.into_iter().map(|(n, a)| (n.to_owned(), a)).collect())
        };
        Self {
            steps: Mutex::new(VecDeque::from([
                calls(vec![
                    ("set_context", json!({"label": "memory", "content": "Prefers tabs over spaces.", "action": "append"})),
                    ("set_context", json!({"label": "todos", "content": "- [ ] review the parser change"})),
                    ("set_context", json!({"label": "knowledge", "content": "CI runs on every push.", "metadata": {"title": "CI policy"}})),
                ]),
                calls(vec![("load_context", json!({"label": "skills", "key": "code-review"}))]),
                calls(vec![
                    ("search_context", json!({"label": "knowledge", "query": "push"})),
                    ("session_search", json!({"query": "parser"})),
                ]),
                calls(vec![
                    ("set_context", json!({"label": "todos", "content": "- [x] review the parser change"})),
                    ("unload_context", json!({"label": "skills", "key": "code-review"})),
                ]),
                Step::Answer("Reviewed: the parser change looks right; I noted your tab preference and the CI policy.".into()),
            ])),
        }
    }
}

#[async_trait]
impl LanguageModel for ScriptedModel {
    async fn complete(&self, request: ChatRequest) -> Result<ChatResponse> {
        let step = self
            .steps
            .lock()
            .map_err(|_| MemoryError::backend("scripted", "poisoned"))?
            .pop_front()
            .ok_or_else(|| MemoryError::backend("scripted", "the script is over"))?;
        let (content, tool_calls) = match step {
            Step::Answer(text) => (text, Vec::new()),
            Step::Calls(calls) => {
                let mut out = Vec::new();
                for (i, (name, arguments)) in calls.into_iter().enumerate() {
                    if !request.tools.iter().any(|t| t.name == name) {
                        return Err(MemoryError::invalid(format!(
                            "the model was not offered {name}"
                        )));
                    }
                    out.push(ToolCall {
                        id: format!("call_{}_{i}", request.messages.len()),
                        name,
                        arguments,
                    });
                }
                (String::new(), out)
            }
        };
        Ok(ChatResponse {
            tool_calls,
            ..ChatResponse::new(content, "scripted", TokenUsage::default())
        })
    }
}
