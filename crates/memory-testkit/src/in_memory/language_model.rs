use std::collections::VecDeque;
use std::sync::Mutex;

use async_trait::async_trait;
use memory_core::ports::{ChatRequest, ChatResponse, FinishReason, LanguageModel, TokenUsage};
use memory_core::{MemoryError, Result, ToolCall};

use super::lock;

/// One scripted answer: text, tool calls and why it stopped, or a failure message.
type Scripted = Result<(String, Vec<ToolCall>, FinishReason), String>;

/// A [`LanguageModel`] that answers from a script and records every request.
///
/// ```
/// # tokio_test_block(async {
/// use memory_core::ports::{ChatRequest, LanguageModel};
/// use memory_testkit::in_memory::ScriptedLanguageModel;
/// let model = ScriptedLanguageModel::new(["first answer"]);
/// let answer = model.complete(ChatRequest::default()).await.unwrap();
/// assert_eq!(answer.content, "first answer");
/// assert!(model.complete(ChatRequest::default()).await.is_err()); // script exhausted
/// assert_eq!(model.requests().len(), 2);
/// # });
/// # fn tokio_test_block<F: std::future::Future>(f: F) { tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f); }
/// ```
#[derive(Default)]
pub struct ScriptedLanguageModel {
    answers: Mutex<VecDeque<Scripted>>,
    requests: Mutex<Vec<ChatRequest>>,
}

impl ScriptedLanguageModel {
    /// A model that gives these answers in order, then fails.
    pub fn new<I: IntoIterator<Item = S>, S: Into<String>>(answers: I) -> Self {
        Self {
            answers: Mutex::new(
                answers
                    .into_iter()
                    .map(|a| Ok((a.into(), Vec::new(), FinishReason::Stop)))
                    .collect(),
            ),
            requests: Mutex::new(Vec::new()),
        }
    }

    /// Queues an answer.
    pub fn push_answer(&self, answer: impl Into<String>) {
        lock(&self.answers).push_back(Ok((answer.into(), Vec::new(), FinishReason::Stop)));
    }

    /// Queues an answer cut off by the output limit (`finish_reason: length`).
    pub fn push_cut_off(&self, partial: impl Into<String>) {
        lock(&self.answers).push_back(Ok((partial.into(), Vec::new(), FinishReason::Length)));
    }

    /// Queues an answer that asks to run tools.
    pub fn push_tool_calls(&self, calls: Vec<ToolCall>) {
        lock(&self.answers).push_back(Ok((String::new(), calls, FinishReason::ToolCalls)));
    }

    /// Queues a failure.
    pub fn push_failure(&self, message: impl Into<String>) {
        lock(&self.answers).push_back(Err(message.into()));
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<ChatRequest> {
        lock(&self.requests).clone()
    }
}

#[async_trait]
impl LanguageModel for ScriptedLanguageModel {
    async fn complete(&self, request: ChatRequest) -> Result<ChatResponse> {
        let input_chars: usize = request.messages.iter().map(|m| m.content.len()).sum();
        let model = request.model.clone().unwrap_or_else(|| "scripted".into());
        lock(&self.requests).push(request);
        match lock(&self.answers).pop_front() {
            Some(Ok((content, tool_calls, finish_reason))) => Ok(ChatResponse {
                tool_calls,
                finish_reason,
                ..ChatResponse::new(content.clone(), model, usage(input_chars, &content))
            }),
            Some(Err(message)) => Err(MemoryError::backend("scripted-llm", message)),
            None => Err(MemoryError::backend(
                "scripted-llm",
                "the script has no more answers",
            )),
        }
    }
}

/// A token estimate of four characters per token.
fn usage(input_chars: usize, content: &str) -> TokenUsage {
    TokenUsage {
        input_tokens: input_chars.div_ceil(4) as u64,
        output_tokens: content.len().div_ceil(4) as u64,
    }
}

/// The answer function of a [`RoutedLanguageModel`].
type Route = dyn Fn(&ChatRequest) -> std::result::Result<String, String> + Send + Sync;

/// A [`LanguageModel`] that answers each request with a function of the request: a fixture
/// for pipelines that call the model concurrently, where a script's order is not defined.
///
/// ```
/// # tokio_test_block(async {
/// use memory_core::ports::{ChatMessage, ChatRequest, ChatRole, LanguageModel};
/// use memory_testkit::in_memory::RoutedLanguageModel;
/// let model = RoutedLanguageModel::new(|r| Ok(r.messages[0].content.to_uppercase()));
/// let request = ChatRequest { messages: vec![ChatMessage::new(ChatRole::User, "hi")], ..Default::default() };
/// assert_eq!(model.complete(request).await.unwrap().content, "HI");
/// # });
/// # fn tokio_test_block<F: std::future::Future>(f: F) { tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f); }
/// ```
pub struct RoutedLanguageModel {
    route: Box<Route>,
    requests: Mutex<Vec<ChatRequest>>,
}

impl RoutedLanguageModel {
    /// A model answering with `route` (an `Err` becomes a backend failure).
    pub fn new(
        route: impl Fn(&ChatRequest) -> std::result::Result<String, String> + Send + Sync + 'static,
    ) -> Self {
        Self {
            route: Box::new(route),
            requests: Mutex::new(Vec::new()),
        }
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<ChatRequest> {
        lock(&self.requests).clone()
    }
}

#[async_trait]
impl LanguageModel for RoutedLanguageModel {
    async fn complete(&self, request: ChatRequest) -> Result<ChatResponse> {
        let input_chars: usize = request.messages.iter().map(|m| m.content.len()).sum();
        let answer = (self.route)(&request);
        lock(&self.requests).push(request);
        match answer {
            Ok(content) => {
                let usage = usage(input_chars, &content);
                Ok(ChatResponse::new(content, "routed", usage))
            }
            Err(message) => Err(MemoryError::backend("routed-llm", message)),
        }
    }
}
