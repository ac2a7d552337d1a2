use std::collections::HashSet;
use std::ops::Range;
use std::path::{Path, PathBuf};

use memory_core::BlockScope;
use serde::Deserialize;

use crate::storage::{RawStorage, StorageConfig};
use toml::Spanned;

use crate::ConfigError;

/// The configuration file's name inside a data dir.
pub const CONFIG_FILE: &str = "memory.toml";

/// The kind of a declared block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BlockKindConfig {
    /// Shown, never written.
    Readonly,
    /// Written by the model (stored in the key-value store).
    Writable,
    /// Keyed entries with full-text search (stored in the search index).
    Searchable,
    /// Loadable documents (a Markdown directory, or the skill store).
    Skill,
    /// The bound long-term profile's current instructions, keyed facts and open tasks,
    /// read-only (empty for a session bound to no profile).
    Profile,
}

/// Where a validated block's content comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlockSource {
    /// Inline text (read-only).
    Text(String),
    /// A file, resolved against the config's directory (read-only).
    File(PathBuf),
    /// A directory of Markdown skills, resolved against the config's directory.
    Directory(PathBuf),
    /// The backend's own store (key-value, search index or skill store, by kind).
    Store,
}

/// A validated block declaration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockDeclaration {
    /// Label.
    pub label: String,
    /// Kind.
    pub kind: BlockKindConfig,
    /// Description.
    pub description: Option<String>,
    /// Token budget (writable blocks).
    pub max_tokens: Option<usize>,
    /// Per session or shared.
    pub scope: BlockScope,
    /// Default content (writable blocks).
    pub default_content: Option<String>,
    /// Content source.
    pub source: BlockSource,
}

/// How tokens are counted.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum TokenizerConfig {
    /// The reference heuristic.
    #[default]
    Heuristic,
    /// tiktoken for an OpenAI-family model.
    Tiktoken {
        /// The model name (`gpt-4o`, ...).
        model: String,
    },
}

/// An OpenAI-compatible endpoint (`[llm]`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmConfig {
    /// Base URL up to the version (`https://api.openai.com/v1`, `http://127.0.0.1:11434/v1`).
    pub base_url: String,
    /// Model name.
    pub model: String,
    /// Environment variable holding the API key (unset: no key is sent).
    #[serde(default = "default_key_env")]
    pub api_key_env: String,
    /// Request timeout in seconds.
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
    /// Retries after the first attempt.
    #[serde(default = "default_retries")]
    pub max_retries: u32,
    /// Query string for every request (Azure: `"api-version=2024-10-21"`).
    pub query: Option<String>,
    /// Header carrying the key instead of `Authorization: Bearer` (Azure: `"api-key"`).
    pub api_key_header: Option<String>,
    /// Limit on one whole call in seconds, every retry and fallback included.
    #[serde(default = "default_deadline")]
    pub deadline_secs: u64,
    /// Which structured-output request the server takes (default `auto`: learned from the
    /// first refusal).
    #[serde(default)]
    pub structured_output: StructuredOutputMode,
}

/// `[llm] structured_output`: how structured stages ask for JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StructuredOutputMode {
    /// `json_schema` first; on a refusal `json_object`, then plain text, remembered.
    #[default]
    Auto,
    /// Always `response_format: json_schema` (OpenAI, recent vLLM and Ollama).
    JsonSchema,
    /// Always `response_format: json_object`, the schema in the prompt (llama.cpp servers).
    JsonObject,
    /// No `response_format`; the schema in the prompt.
    Text,
}

fn default_deadline() -> u64 {
    180
}

fn default_key_env() -> String {
    "OPENAI_API_KEY".into()
}
fn default_timeout() -> u64 {
    60
}
fn default_retries() -> u32 {
    3
}

/// Which embedder long-term memory uses (`[memory] embedder`).
///
/// ```
/// use memory_config::EmbedderChoice;
/// let named = EmbedderChoice::try_from("bge-small-en-v1.5".to_owned()).unwrap();
/// assert_eq!(named, EmbedderChoice::Model("bge-small-en-v1.5".into()));
/// assert_eq!(named.to_string(), "bge-small-en-v1.5");
/// assert_eq!(EmbedderChoice::try_from("local-int8".to_owned()), Ok(EmbedderChoice::LocalInt8));
/// assert!(EmbedderChoice::try_from("no such model!".to_owned()).is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(try_from = "String")]
pub enum EmbedderChoice {
    /// The fastest local embedder that runs on this machine: `local-int8` where ONNX Runtime
    /// runs (Linux on x86-64 or 64-bit ARM), else `local`, with one line saying why. Each
    /// fetches its files on first use.
    #[default]
    Auto,
    /// all-MiniLM-L6-v2 on the CPU with float weights (candle), offline once its files are in
    /// place (fetched on first use, or by `scripts/setup-model.sh`); when they are absent,
    /// vectors are off and every result says so.
    Local,
    /// The same model with int8 weights and products on ONNX Runtime, several times faster on
    /// a CPU (the model and the runtime fetched on first use, or made by
    /// `scripts/setup-onnx.sh`). Its vectors carry their own model id, so a profile embedded
    /// by `local` is re-embedded (`memory profile reembed`) after a switch.
    LocalInt8,
    /// `[llm]`'s endpoint's `/embeddings` with `embedding_model`.
    Openai,
    /// No vectors (full text only).
    None,
    /// A model of the local catalogue by name (`bge-small-en-v1.5`, `bge-base-en-v1.5`,
    /// `gte-small`, `e5-small-v2`, `nomic-embed-text-v1.5`, `multilingual-e5-small`,
    /// `all-MiniLM-L6-v2`), on ONNX Runtime, its files fetched on first use (`memory models
    /// list` shows them; an unknown name is refused when the memory is opened).
    Model(String),
}

impl TryFrom<String> for EmbedderChoice {
    type Error = String;

    fn try_from(name: String) -> Result<Self, Self::Error> {
        Ok(match name.trim() {
            "auto" => Self::Auto,
            "local" => Self::Local,
            "local-int8" => Self::LocalInt8,
            "openai" => Self::Openai,
            "none" => Self::None,
            other if is_model_name(other) => Self::Model(other.to_owned()),
            other => {
                return Err(format!(
                    "embedder {other:?} is neither auto, local, local-int8, openai, none nor a \
                     model name (letters, digits, '.', '_', '-' and one '/'; `memory models \
                     list` shows the catalogue)"
                ));
            }
        })
    }
}

impl std::fmt::Display for EmbedderChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Auto => "auto",
            Self::Local => "local",
            Self::LocalInt8 => "local-int8",
            Self::Openai => "openai",
            Self::None => "none",
            Self::Model(name) => name,
        })
    }
}

/// Whether `name` can name a catalogue model: 1 to 100 of letters, digits, `.`, `_`, `-`,
/// with at most one `/` (an owner).
pub(crate) fn is_model_name(name: &str) -> bool {
    (1..=100).contains(&name.len())
        && name.matches('/').count() <= 1
        && !name.starts_with('/')
        && !name.ends_with('/')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '/'))
}

/// A reranker by name (`[memory] reranker`): a model of the local catalogue
/// (`ms-marco-MiniLM-L-6-v2`, `bge-reranker-base`).
fn reranker_name<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<String>, D::Error> {
    let name = String::deserialize(deserializer)?;
    let name = name.trim();
    if !is_model_name(name) {
        return Err(serde::de::Error::custom(format!(
            "reranker {name:?} is not a model name (`memory models list` shows the catalogue)"
        )));
    }
    Ok(Some(name.to_owned()))
}

/// Long-term memory settings (`[memory]`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LongTermMemoryConfig {
    /// The embedder.
    #[serde(default)]
    pub embedder: EmbedderChoice,
    /// A cross-encoder that reorders recall's best candidates (`ms-marco-MiniLM-L-6-v2`,
    /// `bge-reranker-base`; none by default), its files fetched on first use.
    #[serde(default, deserialize_with = "reranker_name")]
    pub reranker: Option<String>,
    /// How many of recall's best items the reranker reads (default 30).
    pub rerank_depth: Option<usize>,
    /// A profile is consolidated on its own once it has recorded this many memories since
    /// its last run (default 50; 0: only on demand, `memory profile consolidate`).
    pub consolidate_after: Option<usize>,
    /// Embedding model for `embedder = "openai"`.
    pub embedding_model: Option<String>,
    /// Its vector length.
    pub embedding_dimensions: Option<usize>,
    /// Model for extraction, verification, classification and query analysis (default: `[llm]`'s).
    pub extraction_model: Option<String>,
    /// Model for synthesized answers (default: `[llm]`'s).
    pub synthesis_model: Option<String>,
    /// Header carrying the profile name on every LLM call (default `x-session-affinity`;
    /// `""` sends none).
    pub affinity_header: Option<String>,
    /// Default lifetimes per kind (`[memory.lifetimes]`, e.g. `task = "30d"`).
    #[serde(default)]
    pub lifetimes: Lifetimes,
    /// What extraction keeps and ignores, for every profile (each may add its own).
    pub instructions: Option<String>,
    /// Labels the classifier gives memories, for every profile without its own
    /// (`[[memory.categories]]` with `name` and `description`).
    #[serde(default)]
    pub categories: Vec<CategoryConfig>,
    /// The language memories are written in (default: the language of their messages).
    pub language: Option<String>,
}

/// A custom category (`[[memory.categories]]`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CategoryConfig {
    /// Its name (1 to 40 of `a-z 0-9 _ -`).
    pub name: String,
    /// What belongs in it.
    #[serde(default)]
    pub description: String,
}

/// How long new memories of each kind stay current unless given their own expiry
/// (`[memory.lifetimes]`): durations such as `"90m"`, `"12h"`, `"30d"`, `"1y 6months"`
/// (humantime's syntax). A kind left out never expires by default.
///
/// ```toml
/// [memory.lifetimes]
/// task = "30d"
/// event = "1y"
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lifetimes {
    /// Facts.
    #[serde(default, deserialize_with = "duration")]
    pub fact: Option<std::time::Duration>,
    /// Events.
    #[serde(default, deserialize_with = "duration")]
    pub event: Option<std::time::Duration>,
    /// Instructions.
    #[serde(default, deserialize_with = "duration")]
    pub instruction: Option<std::time::Duration>,
    /// Tasks.
    #[serde(default, deserialize_with = "duration")]
    pub task: Option<std::time::Duration>,
}

/// A positive humantime duration (`"30d"`).
fn duration<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<std::time::Duration>, D::Error> {
    let text = String::deserialize(deserializer)?;
    let parsed = humantime::parse_duration(&text).map_err(|e| {
        serde::de::Error::custom(format!(
            "{text:?} is not a duration such as \"12h\" or \"30d\": {e}"
        ))
    })?;
    if parsed.is_zero() {
        return Err(serde::de::Error::custom(
            "a lifetime must be longer than zero (leave the kind out to keep its memories)",
        ));
    }
    Ok(Some(parsed))
}

/// A memory tool a session bound to a profile offers its model (`[sessions] memory_tools`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemoryToolConfig {
    /// Search the profile.
    Recall,
    /// Store a memory in the profile.
    Remember,
    /// Hide a memory of the profile from recall.
    Forget,
}

/// How sessions meet long-term memory (`[sessions]`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionsConfig {
    /// The profile a new session is bound to when its creator names none (`None`: new
    /// sessions are unbound unless bound explicitly).
    pub profile: Option<String>,
    /// The memory tools a bound session's model gets (default: recall and remember;
    /// `forget` only when listed).
    #[serde(default = "default_memory_tools")]
    pub memory_tools: Vec<MemoryToolConfig>,
    /// Whether a bound session's prompt shows its profile in a read-only block labelled
    /// `profile` when no `[[blocks]]` entry of kind `profile` is declared (default true; a
    /// declared one replaces it).
    #[serde(default = "default_true")]
    pub profile_block: bool,
    /// The token budget of that block (default 1,000).
    #[serde(default = "default_profile_block_tokens")]
    pub profile_block_tokens: usize,
}

fn default_memory_tools() -> Vec<MemoryToolConfig> {
    vec![MemoryToolConfig::Recall, MemoryToolConfig::Remember]
}

fn default_true() -> bool {
    true
}

/// The default of `[sessions] profile_block_tokens`.
pub const DEFAULT_PROFILE_BLOCK_TOKENS: usize = 1_000;

fn default_profile_block_tokens() -> usize {
    DEFAULT_PROFILE_BLOCK_TOKENS
}

impl Default for SessionsConfig {
    fn default() -> Self {
        Self {
            profile: None,
            memory_tools: default_memory_tools(),
            profile_block: true,
            profile_block_tokens: DEFAULT_PROFILE_BLOCK_TOKENS,
        }
    }
}

/// Compaction settings (`[compaction]`), the reference defaults when absent.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompactionConfig {
    /// Compact automatically once the estimated prompt exceeds this many tokens.
    pub compact_after: Option<usize>,
    /// Messages at the start never compacted.
    #[serde(default = "default_head")]
    pub protect_head: usize,
    /// Tokens of recent messages kept verbatim.
    #[serde(default = "default_tail")]
    pub tail_token_budget: usize,
    /// Recent messages always kept.
    #[serde(default = "default_min_tail")]
    pub min_tail_messages: usize,
}

fn default_head() -> usize {
    3
}
fn default_tail() -> usize {
    20_000
}
fn default_min_tail() -> usize {
    2
}

impl Default for CompactionConfig {
    fn default() -> Self {
        Self {
            compact_after: None,
            protect_head: default_head(),
            tail_token_budget: default_tail(),
            min_tail_messages: default_min_tail(),
        }
    }
}

/// A validated `memory.toml`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MemoryConfig {
    /// Blocks in prompt order.
    pub blocks: Vec<BlockDeclaration>,
    /// Token counting.
    pub tokenizer: TokenizerConfig,
    /// The language model, if configured.
    pub llm: Option<LlmConfig>,
    /// Compaction settings.
    pub compaction: CompactionConfig,
    /// Long-term memory settings.
    pub memory: LongTermMemoryConfig,
    /// How sessions meet long-term memory.
    pub sessions: SessionsConfig,
    /// `[storage]`, when present; see [`MemoryConfig::storage`].
    pub storage: Option<StorageConfig>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    blocks: Vec<Spanned<RawBlock>>,
    tokenizer: Option<Spanned<String>>,
    llm: Option<Spanned<LlmConfig>>,
    compaction: Option<CompactionConfig>,
    memory: Option<LongTermMemoryConfig>,
    sessions: Option<Spanned<SessionsConfig>>,
    storage: Option<Spanned<RawStorage>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBlock {
    label: Spanned<String>,
    kind: Spanned<BlockKindConfig>,
    description: Option<String>,
    max_tokens: Option<Spanned<i64>>,
    scope: Option<Spanned<String>>,
    default: Option<Spanned<String>>,
    text: Option<Spanned<String>>,
    file: Option<Spanned<String>>,
    directory: Option<Spanned<String>>,
}

pub(crate) struct Checker<'a> {
    pub(crate) path: &'a Path,
    pub(crate) text: &'a str,
}

impl Checker<'_> {
    fn line(&self, span: Range<usize>) -> usize {
        self.text[..span.start.min(self.text.len())]
            .matches('\n')
            .count()
            + 1
    }

    pub(crate) fn error(
        &self,
        span: Range<usize>,
        key: String,
        message: impl Into<String>,
    ) -> ConfigError {
        ConfigError::Invalid {
            path: self.path.to_owned(),
            line: self.line(span),
            key,
            message: message.into(),
        }
    }
}

impl MemoryConfig {
    /// Where each storage role lives: the `[storage]` section, or everything embedded under
    /// `data_dir` when there is none.
    pub fn storage(&self, data_dir: &Path) -> StorageConfig {
        self.storage
            .clone()
            .unwrap_or_else(|| StorageConfig::embedded(data_dir))
    }

    /// Reads and validates a config file; relative paths resolve against its directory.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        Self::parse_named(&text, base, path)
    }

    /// `<dir>/memory.toml` if it exists, else the empty configuration.
    pub fn load_dir(dir: &Path) -> Result<Self, ConfigError> {
        let path = dir.join(CONFIG_FILE);
        if path.exists() {
            Self::load(&path)
        } else {
            Ok(Self::default())
        }
    }

    /// Parses and validates TOML text; relative paths resolve against `base`.
    pub fn parse(text: &str, base: &Path) -> Result<Self, ConfigError> {
        Self::parse_named(text, base, Path::new(CONFIG_FILE))
    }

    fn parse_named(text: &str, base: &Path, path: &Path) -> Result<Self, ConfigError> {
        let raw: RawConfig = toml::from_str(text).map_err(|e| ConfigError::Syntax {
            path: path.to_owned(),
            message: e.to_string().trim_end().replace('\n', " | "),
        })?;
        let check = Checker { path, text };
        let tokenizer = match raw.tokenizer {
            None => TokenizerConfig::Heuristic,
            Some(t) => match t.get_ref().as_str() {
                "heuristic" => TokenizerConfig::Heuristic,
                other => match other.strip_prefix("tiktoken:") {
                    Some(model) if !model.is_empty() => TokenizerConfig::Tiktoken {
                        model: model.to_owned(),
                    },
                    _ => {
                        return Err(check.error(
                            t.span(),
                            "tokenizer".into(),
                            "expected \"heuristic\" or \"tiktoken:<model>\" (e.g. \"tiktoken:gpt-4o\")",
                        ));
                    }
                },
            },
        };
        let mut labels = HashSet::new();
        let mut blocks = Vec::with_capacity(raw.blocks.len());
        for (i, spanned) in raw.blocks.into_iter().enumerate() {
            let block = spanned.into_inner();
            let key = |field: &str| format!("blocks[{i}].{field}");
            let label = block.label.get_ref().clone();
            let label_ok = !label.is_empty()
                && label
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            if !label_ok {
                return Err(check.error(
                    block.label.span(),
                    key("label"),
                    "use letters, digits, '_' or '-'",
                ));
            }
            if !labels.insert(label.clone()) {
                return Err(check.error(
                    block.label.span(),
                    key("label"),
                    format!("block {label:?} is declared twice"),
                ));
            }
            let kind = *block.kind.get_ref();
            let scope = match block
                .scope
                .as_ref()
                .map(|s| (s.get_ref().as_str(), s.span()))
            {
                None | Some(("session", _)) => BlockScope::Session,
                Some(("shared", _)) => BlockScope::Shared,
                Some((_, span)) => {
                    return Err(check.error(
                        span,
                        key("scope"),
                        "expected \"session\" or \"shared\"",
                    ));
                }
            };
            let max_tokens = match &block.max_tokens {
                None => None,
                Some(m) if *m.get_ref() > 0 => Some(*m.get_ref() as usize),
                Some(m) => {
                    return Err(check.error(
                        m.span(),
                        key("max_tokens"),
                        "must be a positive number",
                    ));
                }
            };
            let sources: Vec<(&str, &Spanned<String>)> = [
                ("text", &block.text),
                ("file", &block.file),
                ("directory", &block.directory),
            ]
            .into_iter()
            .filter_map(|(name, v)| v.as_ref().map(|v| (name, v)))
            .collect();
            if let [_, (name, second), ..] = sources.as_slice() {
                return Err(check.error(
                    second.span(),
                    key(name),
                    "give only one of `text`, `file` or `directory`",
                ));
            }
            let resolve = |p: &str| {
                let path = Path::new(p);
                if path.is_absolute() {
                    path.to_owned()
                } else {
                    base.join(path)
                }
            };
            let source = match (kind, sources.first()) {
                (BlockKindConfig::Readonly, Some(("text", v))) => {
                    BlockSource::Text(v.get_ref().clone())
                }
                (BlockKindConfig::Readonly, Some(("file", v))) => {
                    let file = resolve(v.get_ref());
                    if !file.is_file() {
                        return Err(check.error(
                            v.span(),
                            key("file"),
                            format!("no such file: {}", file.display()),
                        ));
                    }
                    BlockSource::File(file)
                }
                (BlockKindConfig::Readonly, other) => {
                    let span = other.map_or(block.kind.span(), |(_, v)| v.span());
                    return Err(check.error(
                        span,
                        key("kind"),
                        "a readonly block needs `text` or `file`",
                    ));
                }
                (BlockKindConfig::Skill, Some(("directory", v))) => {
                    let dir = resolve(v.get_ref());
                    if !dir.is_dir() {
                        return Err(check.error(
                            v.span(),
                            key("directory"),
                            format!("no such directory: {}", dir.display()),
                        ));
                    }
                    BlockSource::Directory(dir)
                }
                (BlockKindConfig::Skill, None) => BlockSource::Store,
                (
                    BlockKindConfig::Writable
                    | BlockKindConfig::Searchable
                    | BlockKindConfig::Profile,
                    None,
                ) => BlockSource::Store,
                (_, Some((name, v))) => {
                    return Err(check.error(
                        v.span(),
                        key(name),
                        format!("not allowed for a {kind:?} block").to_lowercase(),
                    ));
                }
            };
            if let Some(default) = &block.default
                && kind != BlockKindConfig::Writable
            {
                return Err(check.error(
                    default.span(),
                    key("default"),
                    "only writable blocks have a default",
                ));
            }
            if let Some(m) = &block.max_tokens
                && !matches!(kind, BlockKindConfig::Writable | BlockKindConfig::Profile)
            {
                return Err(check.error(
                    m.span(),
                    key("max_tokens"),
                    "only writable and profile blocks have a token budget",
                ));
            }
            blocks.push(BlockDeclaration {
                label,
                kind,
                description: block.description,
                max_tokens,
                scope,
                default_content: block.default.map(Spanned::into_inner),
                source,
            });
        }
        let llm = match raw.llm {
            Some(llm) => {
                let span = llm.span();
                let llm = llm.into_inner();
                if !(llm.base_url.starts_with("http://") || llm.base_url.starts_with("https://")) {
                    return Err(check.error(
                        span,
                        "llm.base_url".into(),
                        "must start with http:// or https://",
                    ));
                }
                Some(llm)
            }
            None => None,
        };
        let sessions = match raw.sessions {
            None => SessionsConfig::default(),
            Some(spanned) => {
                let span = spanned.span();
                let sessions = spanned.into_inner();
                if let Some(profile) = &sessions.profile {
                    memory_core::validate_profile_name(profile).map_err(|e| {
                        check.error(span.clone(), "sessions.profile".into(), e.to_string())
                    })?;
                }
                if sessions.profile_block_tokens == 0 {
                    return Err(check.error(
                        span,
                        "sessions.profile_block_tokens".into(),
                        "must be at least 1 (set profile_block = false to leave the block out)",
                    ));
                }
                sessions
            }
        };
        let storage = match raw.storage {
            None => None,
            Some(spanned) => {
                let span = spanned.span();
                let storage = spanned
                    .into_inner()
                    .validate(base)
                    .map_err(|p| check.error(span, p.key, p.message))?;
                Some(storage)
            }
        };
        Ok(Self {
            blocks,
            tokenizer,
            llm,
            compaction: raw.compaction.unwrap_or_default(),
            memory: raw.memory.unwrap_or_default(),
            sessions,
            storage,
        })
    }
}

#[cfg(test)]
mod tests;
