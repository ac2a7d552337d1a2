//! Tools generated from the blocks present: `set_context`, `load_context`,
//! `unload_context`, `search_context`, with the reference's names, schemas and result
//! strings. Every failure comes back as a string the model can act on; nothing panics.

use memory_core::{BlockKind, MemoryError, Result, ToolDefinition};
use serde::Deserialize;
use serde_json::{Value, json};

use super::blocks::{ContextBlocks, Unloaded};

/// A wire format for tool definitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolFormat {
    /// OpenAI function calling.
    OpenAi,
    /// Anthropic tools.
    Anthropic,
    /// Model Context Protocol.
    Mcp,
}

impl ToolFormat {
    /// Parses `openai`, `anthropic` or `mcp`.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "openai" => Ok(Self::OpenAi),
            "anthropic" => Ok(Self::Anthropic),
            "mcp" => Ok(Self::Mcp),
            other => Err(MemoryError::invalid(format!(
                "unknown tool format {other:?}: expected openai, anthropic or mcp"
            ))),
        }
    }

    /// The definitions in this format, as a JSON array.
    pub fn export(self, tools: &[ToolDefinition]) -> Value {
        Value::Array(
            tools
                .iter()
                .map(|t| match self {
                    Self::OpenAi => t.to_openai(),
                    Self::Anthropic => t.to_anthropic(),
                    Self::Mcp => t.to_mcp(),
                })
                .collect(),
        )
    }
}

/// The start of every tool result that reports a failure (the reference's convention): the
/// model reads the reason; a caller tells failures apart with [`is_tool_error`].
pub const TOOL_ERROR_PREFIX: &str = "Error: ";

/// True when a tool result reports a failure (see [`TOOL_ERROR_PREFIX`]).
///
/// ```
/// use memory_engine::context::is_tool_error;
/// assert!(is_tool_error("Error: unknown tool \"x\""));
/// assert!(!is_tool_error("No results found."));
/// ```
pub fn is_tool_error(output: &str) -> bool {
    output.starts_with(TOOL_ERROR_PREFIX)
}

/// The most characters a search tool's result carries: a match in a huge message must not
/// flood the model's context (one 50 MB message came back whole).
pub const MAX_TOOL_RESULT_CHARS: usize = 16_000;

/// `output` cut to [`MAX_TOOL_RESULT_CHARS`], with a marker saying how much was left out.
pub fn bounded_tool_result(output: String) -> String {
    match output.char_indices().nth(MAX_TOOL_RESULT_CHARS) {
        None => output,
        Some((cut, _)) => {
            let left = output[cut..].chars().count();
            format!("{}\n[... {left} more characters not shown]", &output[..cut])
        }
    }
}

/// What running a context tool produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolExecution {
    /// The string result for the model.
    pub output: String,
    /// A skill that left the loaded set (the caller may reclaim its history output).
    pub unloaded: Option<Unloaded>,
}

impl ToolExecution {
    fn text(output: impl Into<String>) -> Self {
        Self {
            output: output.into(),
            unloaded: None,
        }
    }
}

/// Tool generation and execution over a session's [`ContextBlocks`].
pub struct ContextTools;

/// Names of the generated tools.
impl ContextTools {
    /// Writes a block or a keyed entry.
    pub const SET: &'static str = "set_context";
    /// Loads a skill.
    pub const LOAD: &'static str = "load_context";
    /// Unloads a skill.
    pub const UNLOAD: &'static str = "unload_context";
    /// Searches a searchable block.
    pub const SEARCH: &'static str = "search_context";

    /// True for a name this module executes.
    pub fn handles(name: &str) -> bool {
        matches!(name, Self::SET | Self::LOAD | Self::UNLOAD | Self::SEARCH)
    }

    /// The tools the blocks call for, with label enums so models cannot invent labels.
    pub async fn definitions(blocks: &ContextBlocks) -> Result<Vec<ToolDefinition>> {
        let configs = blocks.configs();
        let of_kind = |pred: &dyn Fn(BlockKind) -> bool| -> Vec<String> {
            configs
                .iter()
                .filter(|c| pred(c.kind()))
                .map(|c| c.label.clone())
                .collect()
        };
        let writable = of_kind(&|k| k.is_writable());
        let skills = of_kind(&|k| k == BlockKind::Skill);
        let searchable = of_kind(&|k| k == BlockKind::Searchable);
        let mut tools = Vec::new();
        if !writable.is_empty() {
            tools.push(set_definition(blocks));
        }
        if !skills.is_empty() {
            let quoted = quote_list(&skills);
            tools.push(ToolDefinition {
                name: Self::LOAD.into(),
                description: format!(
                    "Load a document from a skill block by key. Available skill blocks: {quoted}. Check the system prompt for available keys."
                ),
                parameters: label_key_schema(&skills, "Skill block label", "Skill key to load"),
            });
            let loaded = blocks.loaded_skills().await?;
            let status = if loaded.is_empty() {
                " No skills currently loaded.".to_owned()
            } else {
                format!(" Currently loaded: {}.", loaded.join(", "))
            };
            tools.push(ToolDefinition {
                name: Self::UNLOAD.into(),
                description: format!(
                    "Unload a previously loaded skill to free context space. The skill remains available for re-loading.{status}"
                ),
                parameters: label_key_schema(&skills, "Skill block label", "Skill key to unload"),
            });
        }
        if !searchable.is_empty() {
            tools.push(ToolDefinition {
                name: Self::SEARCH.into(),
                description: format!(
                    "Search for information in a searchable context block. ONLY these blocks are searchable: {}. Other blocks cannot be searched.",
                    quote_list(&searchable)
                ),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "label": {"type": "string", "enum": searchable, "description": "Searchable block label"},
                        "query": {"type": "string", "description": "Search query"}
                    },
                    "required": ["label", "query"]
                }),
            });
        }
        Ok(tools)
    }

    /// Runs a tool call; `None` when `name` is not a context tool.
    pub async fn execute(
        blocks: &ContextBlocks,
        name: &str,
        args: &Value,
    ) -> Option<ToolExecution> {
        let result = match name {
            Self::SET => set(blocks, args).await,
            Self::LOAD => load(blocks, args).await,
            Self::UNLOAD => unload(blocks, args).await,
            Self::SEARCH => search(blocks, args).await,
            _ => return None,
        };
        Some(result.unwrap_or_else(|e| ToolExecution::text(format!("Error: {e}"))))
    }
}

fn quote_list(labels: &[String]) -> String {
    labels
        .iter()
        .map(|l| format!("\"{l}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

fn label_key_schema(labels: &[String], label_description: &str, key_description: &str) -> Value {
    json!({
        "type": "object",
        "properties": {
            "label": {"type": "string", "enum": labels, "description": label_description},
            "key": {"type": "string", "description": key_description}
        },
        "required": ["label", "key"]
    })
}

fn set_definition(blocks: &ContextBlocks) -> ToolDefinition {
    let mut lines = vec!["Write to a context block. Available blocks:".to_owned()];
    let mut labels = Vec::new();
    let mut keyed = false;
    for config in blocks.configs().iter().filter(|c| c.kind().is_writable()) {
        let kind = match config.kind() {
            BlockKind::Skill => "skill collection, keyed entries",
            BlockKind::Searchable => "searchable, keyed entries",
            _ => "writable",
        };
        keyed |= config.kind().is_keyed();
        let description = config.description.as_deref().unwrap_or("no description");
        lines.push(format!("- \"{}\" ({kind}): {description}", config.label));
        labels.push(config.label.clone());
    }
    lines.push("Writes are durable and persist across sessions.".into());
    let mut properties = json!({
        "label": {"type": "string", "enum": labels, "description": "Block label to write to"},
        "content": {"type": "string", "description": "The main content to write to the block."},
        "action": {"type": "string", "enum": ["replace", "append"], "description": "replace (default) or append"}
    });
    if keyed {
        lines.push(
            "For keyed blocks, metadata: { title, description } is optional: the title is a stable identifier (writing the same title again updates that entry in place) and the description is a one-line summary that helps pick the entry later."
                .into(),
        );
        properties["metadata"] = json!({
            "type": "object",
            "description": "For keyed blocks (skills, searchable entries).",
            "properties": {
                "title": {"type": "string", "description": "Stable identifier: the same title updates the entry in place."},
                "description": {"type": "string", "description": "One-line summary shown in the prompt."}
            }
        });
    }
    ToolDefinition {
        name: ContextTools::SET.into(),
        description: lines.join("\n"),
        parameters: json!({"type": "object", "properties": properties, "required": ["label", "content"]}),
    }
}

fn parse<T: for<'de> Deserialize<'de>>(tool: &str, args: &Value) -> Result<T> {
    T::deserialize(args)
        .map_err(|e| MemoryError::invalid(format!("invalid arguments for {tool}: {e}")))
}

#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum Action {
    Replace,
    Append,
}

#[derive(Deserialize, Default)]
struct Metadata {
    title: Option<String>,
    description: Option<String>,
}

#[derive(Deserialize)]
struct SetArgs {
    label: String,
    content: String,
    action: Option<Action>,
    metadata: Option<Metadata>,
}

async fn set(blocks: &ContextBlocks, args: &Value) -> Result<ToolExecution> {
    let args: SetArgs = parse(ContextTools::SET, args)?;
    let Some(config) = blocks.configs().iter().find(|c| c.label == args.label) else {
        return Ok(ToolExecution::text(format!(
            "Error: block \"{}\" not found",
            args.label
        )));
    };
    if config.kind().is_keyed() {
        let meta = args.metadata.unwrap_or_default();
        let key = blocks
            .set_entry(
                &args.label,
                &args.content,
                meta.title.as_deref(),
                meta.description.as_deref(),
            )
            .await?;
        return Ok(ToolExecution::text(format!(
            "Indexed \"{key}\" in {}.",
            args.label
        )));
    }
    let block = match args.action {
        Some(Action::Append) => blocks.append(&args.label, &args.content).await?,
        _ => blocks.replace(&args.label, &args.content).await?,
    };
    let usage = match block.max_tokens.filter(|m| *m > 0) {
        Some(max) => {
            let pct = ((block.tokens as f64 / max as f64) * 100.0 + 0.5).floor() as i64;
            format!("{pct}% ({}/{max} tokens)", block.tokens)
        }
        None => format!("{} tokens", block.tokens),
    };
    Ok(ToolExecution::text(format!(
        "Written to {}. Usage: {usage}",
        args.label
    )))
}

#[derive(Deserialize)]
struct LabelKey {
    label: String,
    key: String,
}

fn skill_labels(blocks: &ContextBlocks) -> Vec<String> {
    blocks
        .configs()
        .iter()
        .filter(|c| c.kind() == BlockKind::Skill)
        .map(|c| c.label.clone())
        .collect()
}

fn not_a_skill(blocks: &ContextBlocks, label: &str) -> Option<ToolExecution> {
    let skills = skill_labels(blocks);
    (!skills.iter().any(|s| s == label)).then(|| {
        ToolExecution::text(format!(
            "Error: \"{label}\" is not a skill block. Skill blocks: {}",
            skills.join(", ")
        ))
    })
}

async fn load(blocks: &ContextBlocks, args: &Value) -> Result<ToolExecution> {
    let args: LabelKey = parse(ContextTools::LOAD, args)?;
    if let Some(error) = not_a_skill(blocks, &args.label) {
        return Ok(error);
    }
    Ok(match blocks.load_skill(&args.label, &args.key).await? {
        Some(content) => ToolExecution::text(content),
        None => ToolExecution::text(format!("Not found: {}", args.key)),
    })
}

async fn unload(blocks: &ContextBlocks, args: &Value) -> Result<ToolExecution> {
    let args: LabelKey = parse(ContextTools::UNLOAD, args)?;
    if let Some(error) = not_a_skill(blocks, &args.label) {
        return Ok(error);
    }
    Ok(match blocks.unload_skill(&args.label, &args.key).await? {
        Some(unloaded) => ToolExecution {
            output: format!(
                "Unloaded \"{}\" from {}. Context reclaimed.",
                args.key, args.label
            ),
            unloaded: Some(unloaded),
        },
        None => ToolExecution::text(format!(
            "Skill \"{}\" is not currently loaded in \"{}\".",
            args.key, args.label
        )),
    })
}

#[derive(Deserialize)]
struct SearchArgs {
    label: String,
    query: String,
}

async fn search(blocks: &ContextBlocks, args: &Value) -> Result<ToolExecution> {
    let args: SearchArgs = parse(ContextTools::SEARCH, args)?;
    let searchable: Vec<String> = blocks
        .configs()
        .iter()
        .filter(|c| c.kind() == BlockKind::Searchable)
        .map(|c| c.label.clone())
        .collect();
    if !searchable.contains(&args.label) {
        return Ok(ToolExecution::text(format!(
            "Error: \"{}\" is not searchable. Searchable blocks: {}",
            args.label,
            searchable.join(", ")
        )));
    }
    Ok(match blocks.search(&args.label, &args.query).await? {
        Some(hits) => ToolExecution::text(bounded_tool_result(hits)),
        None => ToolExecution::text("No results found."),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A search result over a huge message is cut to the bound, with a marker saying how
    /// much was left out (one 52 MB result came back whole).
    #[test]
    fn tool_results_are_bounded() {
        let short = "a short result".to_owned();
        assert_eq!(bounded_tool_result(short.clone()), short);
        let huge = "é".repeat(MAX_TOOL_RESULT_CHARS + 500);
        let cut = bounded_tool_result(huge);
        assert!(
            cut.ends_with("[... 500 more characters not shown]"),
            "{}",
            &cut[cut.len() - 60..]
        );
        assert!(cut.chars().count() < MAX_TOOL_RESULT_CHARS + 50);
    }
}
