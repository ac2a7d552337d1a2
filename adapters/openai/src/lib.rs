//! # memory-openai
//!
//! Chat completions ([`OpenAiChat`], the
//! [`LanguageModel`](memory_core::ports::LanguageModel) port) and embeddings
//! ([`OpenAiEmbedder`], the [`Embedder`](memory_core::ports::Embedder) port, batched) over any
//! OpenAI-compatible endpoint.
//!
//! - configurable base URL, model, API key (read from an environment variable), timeout;
//! - retries with exponential backoff on 429, 5xx, timeouts and connection errors, honouring
//!   `Retry-After`;
//! - structured output in the strongest format the server accepts (`json_schema`, strict when
//!   the schema follows strict mode's rules; else `json_object`; else plain text, with the
//!   schema in the prompt), configured or learned from the first refusal
//!   ([`StructuredOutput`]); the JSON is cut out of fences and prose, and validating and
//!   repairing it is the caller's (one repair layer);
//! - a deadline on every call, retries and fallbacks included; `finish_reason` reported, so a
//!   reply cut off at `max_tokens` is never taken for a complete one; requests counted;
//! - tool definitions and tool calls in the OpenAI format; extra request headers (for
//!   example a session-affinity key) are forwarded.
//!
//! ```no_run
//! # async fn demo() -> memory_core::Result<()> {
//! use memory_core::ports::{ChatMessage, ChatRequest, ChatRole, LanguageModel};
//! use memory_openai::{OpenAiChat, OpenAiConfig};
//! let llm = OpenAiChat::new(OpenAiConfig::new("http://127.0.0.1:11434/v1", "llama3.1"))?;
//! let answer = llm
//!     .complete(ChatRequest { messages: vec![ChatMessage::new(ChatRole::User, "hi")], ..Default::default() })
//!     .await?;
//! # Ok(()) }
//! ```

mod chat;
mod config;
mod embeddings;
mod error;
mod http;
mod wire;

pub use chat::OpenAiChat;
pub use config::{OpenAiConfig, StructuredOutput};
pub use embeddings::{DEFAULT_EMBEDDING_BATCH, OpenAiEmbedder};
