//! Micro-compaction: shape-preserving truncation of tool outputs and long text, at read time
//! (`truncate_older_messages`) and before a write that would exceed a row limit
//! (`enforce_row_size`). The reference's markers and budgets.

use memory_core::{Part, Role, UiMessage};
use serde_json::{Map, Value, json};

fn marker(original: usize) -> String {
    format!("... [truncated {original} chars]")
}

fn measure(value: &Value) -> usize {
    match value {
        Value::String(s) => s.chars().count(),
        other => other.to_string().chars().count(),
    }
}

fn cut(s: &str, keep: usize) -> String {
    s.chars().take(keep).collect()
}

fn truncate_string(s: &str, max: usize) -> String {
    let len = s.chars().count();
    if len <= max {
        return s.to_owned();
    }
    let suffix = marker(len);
    let suffix_len = suffix.chars().count();
    if max <= suffix_len {
        return cut(&suffix, max);
    }
    format!("{}{suffix}", cut(s, max - suffix_len))
}

fn child_budget(max: usize, children: usize) -> usize {
    if children <= 1 {
        max
    } else {
        (max / children.min(10)).max(80)
    }
}

fn truncate_value(value: &Value, max: usize, depth: usize) -> Value {
    let original = measure(value);
    if original <= max {
        return value.clone();
    }
    if depth >= 8 {
        return Value::String(format!("[Nested output omitted {}]", marker(original)));
    }
    match value {
        Value::String(s) => Value::String(truncate_string(s, max)),
        Value::Array(items) => {
            let budget = child_budget(max, items.len());
            let mut out: Vec<Value> = items
                .iter()
                .map(|v| truncate_value(v, budget, depth + 1))
                .collect();
            let mut popped = false;
            while out.len() > 1 && measure(&Value::Array(out.clone())) > max {
                out.pop();
                popped = true;
            }
            if popped {
                out.push(Value::String(format!(
                    "Array output truncated {}",
                    marker(original)
                )));
            }
            let array = Value::Array(out);
            if measure(&array) <= max {
                return array;
            }
            let object_marker = json!([{"__truncated": true, "__truncatedChars": original}]);
            if measure(&object_marker) <= max {
                return object_marker;
            }
            let text = json!([format!(
                "Array output omitted because it was too large to preserve structurally {}",
                marker(original)
            )]);
            if measure(&text) <= max {
                return text;
            }
            Value::String(cut(&marker(original), max))
        }
        Value::Object(map) => {
            let budget = child_budget(max, map.len());
            let mut out: Map<String, Value> = map
                .iter()
                .map(|(k, v)| (k.clone(), truncate_value(v, budget, depth + 1)))
                .collect();
            // Shrink string fields, longest first, to a quarter of the budget.
            while measure(&Value::Object(out.clone())) > max {
                let longest = out
                    .iter()
                    .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.chars().count())))
                    .filter(|(_, n)| *n > max / 4)
                    .max_by_key(|(_, n)| *n);
                let Some((key, _)) = longest else { break };
                if let Some(Value::String(s)) = out.get(&key).cloned() {
                    out.insert(key, Value::String(truncate_string(&s, max / 4)));
                }
            }
            if measure(&Value::Object(out.clone())) <= max {
                return Value::Object(out);
            }
            out.insert("__truncated".into(), Value::Bool(true));
            out.insert("__truncatedChars".into(), json!(original));
            if measure(&Value::Object(out.clone())) <= max {
                return Value::Object(out);
            }
            let mut omitted = json!({
                "__truncated": true,
                "__truncatedChars": original,
                "note": "Tool output omitted because it was too large to preserve structurally."
            });
            if measure(&omitted) > max
                && let Some(m) = omitted.as_object_mut()
            {
                m.remove("note");
            }
            omitted
        }
        other => other.clone(),
    }
}

/// Truncates a tool output to about `max_chars`, keeping its shape: strings stay strings,
/// arrays keep their leading items, objects keep their keys with shortened values.
///
/// ```
/// use memory_engine::compaction::truncate_tool_output;
/// let output = serde_json::json!({"path": "src/lib.rs", "content": "x".repeat(5_000)});
/// let small = truncate_tool_output(&output, 500);
/// assert_eq!(small["path"], "src/lib.rs");
/// assert!(small["content"].as_str().unwrap().contains("[truncated 5000 chars]"));
/// ```
pub fn truncate_tool_output(value: &Value, max_chars: usize) -> Value {
    truncate_value(value, max_chars, 0)
}

/// Options of [`truncate_older_messages`] (the reference defaults).
#[derive(Debug, Clone, Copy)]
pub struct TruncateOptions {
    /// Messages at the end returned untouched.
    pub keep_recent: usize,
    /// Budget of each older tool output.
    pub max_tool_output_chars: usize,
    /// Budget of each older text part.
    pub max_text_chars: usize,
}

impl Default for TruncateOptions {
    fn default() -> Self {
        Self {
            keep_recent: 4,
            max_tool_output_chars: 500,
            max_text_chars: 10_000,
        }
    }
}

/// Read-time micro-compaction: older messages get truncated tool outputs and text; the last
/// `keep_recent` messages are returned untouched. Never touches storage.
pub fn truncate_older_messages(history: &[UiMessage], options: TruncateOptions) -> Vec<UiMessage> {
    let older = history.len().saturating_sub(options.keep_recent);
    history
        .iter()
        .enumerate()
        .map(|(i, message)| {
            if i >= older {
                return message.clone();
            }
            let mut m = message.clone();
            for part in &mut m.parts {
                match part {
                    Part::Tool(t) | Part::DynamicTool(t) => {
                        if let Some(output) = &t.output {
                            t.output =
                                Some(truncate_tool_output(output, options.max_tool_output_chars));
                        }
                    }
                    Part::Text(t) if t.text.chars().count() > options.max_text_chars => {
                        let len = t.text.chars().count();
                        t.text = format!(
                            "{}... [truncated {len} chars]",
                            cut(&t.text, options.max_text_chars)
                        );
                    }
                    _ => {}
                }
            }
            m
        })
        .collect()
}

fn json_len(message: &UiMessage) -> usize {
    serde_json::to_vec(message)
        .map(|v| v.len())
        .unwrap_or(usize::MAX)
}

/// Makes a message fit `max_bytes` of stored JSON: completed tool outputs are truncated
/// (shape kept) first, then text parts over 1,000 characters, in order. `metadata` records
/// what was truncated (`compactedToolOutputs`, `compactedTextParts`). A message that fits is
/// returned unchanged.
pub fn enforce_row_size(message: &UiMessage, max_bytes: usize) -> UiMessage {
    if json_len(message) <= max_bytes {
        return message.clone();
    }
    let mut m = message.clone();
    let mut tool_ids = Vec::new();
    if m.role == Role::Assistant {
        for part in &mut m.parts {
            if let Some(t) = part.as_tool_mut()
                && t.is_complete()
                && let Some(output) = &t.output
            {
                t.output = Some(truncate_tool_output(output, 1_000));
                tool_ids.push(Value::String(t.tool_call_id.clone()));
            }
        }
    }
    let mut text_indices = Vec::new();
    if json_len(&m) > max_bytes {
        for i in 0..m.parts.len() {
            if let Part::Text(t) = &mut m.parts[i] {
                let len = t.text.chars().count();
                if len > 1_000 {
                    t.text = format!(
                        "[Text truncated for storage ({len} chars). First 500 chars: {}...]",
                        cut(&t.text, 500)
                    );
                    text_indices.push(json!(i));
                }
            }
            if json_len(&m) <= max_bytes {
                break;
            }
        }
    }
    let metadata = m.metadata.get_or_insert_with(|| json!({}));
    if let Some(map) = metadata.as_object_mut() {
        if !tool_ids.is_empty() {
            map.insert("compactedToolOutputs".into(), Value::Array(tool_ids));
        }
        if !text_indices.is_empty() {
            map.insert("compactedTextParts".into(), Value::Array(text_indices));
        }
    }
    m
}
