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
//! - JSON-schema structured output, with one repair-and-retry when the model returns invalid
//!   JSON (fences are stripped first); usage of every call (repairs included) is returned;
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
pub use config::OpenAiConfig;
pub use embeddings::{DEFAULT_EMBEDDING_BATCH, OpenAiEmbedder};
