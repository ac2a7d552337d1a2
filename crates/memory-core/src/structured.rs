//! Structured output every kind of server can give: the rules a JSON schema must follow to be
//! enforced in OpenAI's strict mode, the instruction that carries a schema in the prompt when
//! a server cannot enforce one, and how the JSON is found in a reply that came back wrapped in
//! prose or a code fence.
//!
//! ```
//! use memory_core::structured::{json_in_reply, strict_schema_violations};
//! use serde_json::json;
//!
//! let closed = json!({
//!     "type": "object",
//!     "properties": {"answer": {"type": "string"}, "note": {"type": ["string", "null"]}},
//!     "required": ["answer", "note"],
//!     "additionalProperties": false
//! });
//! assert!(strict_schema_violations(&closed).is_empty());
//!
//! let open = json!({"type": "object", "properties": {"answer": {"type": "string"}}});
//! assert_eq!(strict_schema_violations(&open).len(), 2); // not closed, `answer` not required
//!
//! assert_eq!(json_in_reply("Sure! ```json\n{\"a\": 1}\n``` Hope it helps."), "{\"a\": 1}");
//! ```

use serde_json::Value;

/// The keywords strict mode accepts; a schema using any other is refused there.
pub const STRICT_KEYWORDS: &[&str] = &[
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
    "anyOf",
    "description",
    "title",
    "$defs",
    "$ref",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
];

/// The primitive types strict mode accepts in `type`.
const STRICT_TYPES: &[&str] = &[
    "string", "number", "integer", "boolean", "object", "array", "null",
];

/// The deepest nesting of objects strict mode accepts.
pub const STRICT_MAX_DEPTH: usize = 5;

/// Every way `schema` breaks strict mode's rules, each as `path: problem`; empty when an
/// OpenAI-style server accepts it with `strict: true`.
///
/// The rules: the root is an object (not a union); every object lists every property in
/// `required` (an optional field is a union with `null`) and sets `additionalProperties:
/// false`; only [`STRICT_KEYWORDS`] appear; objects nest at most [`STRICT_MAX_DEPTH`] deep.
pub fn strict_schema_violations(schema: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    if !types_of(schema).contains(&"object") || schema.get("anyOf").is_some() {
        problems.push("#: the root must be an object, not a union".to_owned());
    }
    walk(schema, "#", 0, &mut problems);
    problems
}

fn types_of(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

fn walk(schema: &Value, path: &str, depth: usize, problems: &mut Vec<String>) {
    let Some(map) = schema.as_object() else {
        problems.push(format!("{path}: a schema must be an object"));
        return;
    };
    for key in map.keys() {
        if !STRICT_KEYWORDS.contains(&key.as_str()) {
            problems.push(format!("{path}: keyword `{key}` is not supported"));
        }
    }
    for t in types_of(schema) {
        if !STRICT_TYPES.contains(&t) {
            problems.push(format!("{path}: type `{t}` is not supported"));
        }
    }
    if map.get("type").is_none()
        && ["anyOf", "$ref", "enum", "const"]
            .iter()
            .all(|k| map.get(*k).is_none())
    {
        problems.push(format!("{path}: no `type`"));
    }
    let is_object = types_of(schema).contains(&"object");
    if is_object {
        let depth = depth + 1;
        if depth > STRICT_MAX_DEPTH {
            problems.push(format!(
                "{path}: objects nest deeper than {STRICT_MAX_DEPTH}"
            ));
        }
        if map.get("additionalProperties") != Some(&Value::Bool(false)) {
            problems.push(format!("{path}: `additionalProperties` must be false"));
        }
        let required: Vec<&str> = map
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let properties = map.get("properties").and_then(Value::as_object);
        for (name, property) in properties.into_iter().flatten() {
            if !required.contains(&name.as_str()) {
                problems.push(format!(
                    "{path}: property `{name}` is not in `required` (make it nullable instead)"
                ));
            }
            walk(
                property,
                &format!("{path}/properties/{name}"),
                depth,
                problems,
            );
        }
        for name in &required {
            if !properties.is_some_and(|p| p.contains_key(*name)) {
                problems.push(format!(
                    "{path}: `required` names unknown property `{name}`"
                ));
            }
        }
        walk_children(map, path, depth, problems);
    } else {
        walk_children(map, path, depth, problems);
    }
}

fn walk_children(
    map: &serde_json::Map<String, Value>,
    path: &str,
    depth: usize,
    problems: &mut Vec<String>,
) {
    if let Some(items) = map.get("items") {
        walk(items, &format!("{path}/items"), depth, problems);
    }
    if let Some(Value::Array(variants)) = map.get("anyOf") {
        for (i, variant) in variants.iter().enumerate() {
            walk(variant, &format!("{path}/anyOf/{i}"), depth, problems);
        }
    }
    if let Some(Value::Object(defs)) = map.get("$defs") {
        for (name, def) in defs {
            walk(def, &format!("{path}/$defs/{name}"), depth, problems);
        }
    }
}

/// The instruction that carries `schema` in the prompt, for a server that cannot enforce it
/// (one that takes only `json_object`, or only text).
pub fn schema_instruction(schema: &Value) -> String {
    format!(
        "Reply with one JSON object and nothing else (no prose, no code fence). It must match \
         this JSON Schema:\n{schema}"
    )
}

/// The JSON object inside a model's reply: a Markdown code fence and any prose before the
/// first `{` or after the last `}` are dropped. A reply without an object comes back trimmed,
/// for the caller's parser to report.
pub fn json_in_reply(text: &str) -> &str {
    let t = text.trim();
    match (t.find('{'), t.rfind('}')) {
        (Some(start), Some(end)) if start < end => &t[start..=end],
        _ => t
            .strip_prefix("```json")
            .or_else(|| t.strip_prefix("```"))
            .map_or(t, |rest| rest.trim_end_matches("```").trim()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_rule_is_checked() {
        let schema = json!({
            "type": "object",
            "properties": {
                "items": {"type": "array", "minLength": 1, "items": {
                    "type": "object",
                    "properties": {"a": {"type": "string"}},
                    "required": ["a", "b"],
                    "additionalProperties": false
                }},
                "when": {"type": "date"}
            },
            "required": ["items"],
            "additionalProperties": true
        });
        let problems = strict_schema_violations(&schema).join("\n");
        for expected in [
            "#: `additionalProperties` must be false",
            "#: property `when` is not in `required`",
            "#/properties/items: keyword `minLength` is not supported",
            "#/properties/items/items: `required` names unknown property `b`",
            "#/properties/when: type `date` is not supported",
        ] {
            assert!(
                problems.contains(expected),
                "{expected} missing from:\n{problems}"
            );
        }
    }

    #[test]
    fn the_root_must_be_an_object() {
        let union = json!({"anyOf": [{"type": "string"}, {"type": "null"}]});
        assert!(strict_schema_violations(&union)[0].contains("root"));
    }

    #[test]
    fn deep_nesting_is_refused() {
        let mut schema = json!({"type": "string"});
        for _ in 0..6 {
            schema = json!({
                "type": "object",
                "properties": {"x": schema},
                "required": ["x"],
                "additionalProperties": false
            });
        }
        assert!(
            strict_schema_violations(&schema)
                .iter()
                .any(|p| p.contains("nest deeper"))
        );
    }

    #[test]
    fn json_is_found_in_fences_and_prose() {
        assert_eq!(json_in_reply("```json\n{\"a\":1}\n```"), "{\"a\":1}");
        assert_eq!(
            json_in_reply("Sure! {\"a\": {\"b\": 2}} hope it helps"),
            "{\"a\": {\"b\": 2}}"
        );
        assert_eq!(json_in_reply("  nothing "), "nothing");
        assert_eq!(json_in_reply("```\nnot json\n```"), "not json");
    }
}
