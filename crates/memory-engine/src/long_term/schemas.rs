//! The JSON schema of every structured LLM stage, written to strict mode's rules (every object
//! closed, every property required, optional values as a union with `null`, only the keywords
//! strict mode accepts), so that OpenAI enforces them and servers that cannot still get a
//! schema they can follow from the prompt. The test below holds every schema to those rules.

use serde_json::{Value, json};

/// A closed object whose every property is required.
fn object(properties: &[(&str, Value)]) -> Value {
    let names: Vec<&str> = properties.iter().map(|(name, _)| *name).collect();
    let properties: serde_json::Map<String, Value> = properties
        .iter()
        .map(|(name, schema)| ((*name).to_owned(), schema.clone()))
        .collect();
    json!({
        "type": "object",
        "properties": properties,
        "required": names,
        "additionalProperties": false
    })
}

fn array(items: Value) -> Value {
    json!({"type": "array", "items": items})
}

fn typed(name: &str) -> Value {
    json!({"type": name})
}

/// A value of type `name`, or `null`.
fn nullable(name: &str) -> Value {
    json!({"type": [name, "null"]})
}

fn one_of(values: &[&str]) -> Value {
    json!({"type": "string", "enum": values})
}

/// Extraction, full and detail passes: `{"memories": [{content, lines, date}]}`.
pub(crate) fn extraction() -> Value {
    object(&[(
        "memories",
        array(object(&[
            ("content", typed("string")),
            ("lines", array(typed("integer"))),
            ("date", nullable("string")),
        ])),
    )])
}

/// Verification: `{"results": [{index, verdict, content, failed_checks}]}`.
pub(crate) fn verification() -> Value {
    object(&[(
        "results",
        array(object(&[
            ("index", typed("integer")),
            ("verdict", one_of(&["passed", "corrected", "dropped"])),
            ("content", nullable("string")),
            ("failed_checks", array(typed("string"))),
        ])),
    )])
}

/// Classification: `{"results": [{index, kind, key, questions}]}`.
pub(crate) fn classification(categories: &[&str]) -> Value {
    let mut fields = vec![
        ("index", typed("integer")),
        ("kind", one_of(&["fact", "event", "instruction", "task"])),
        ("key", nullable("string")),
        ("questions", array(typed("string"))),
    ];
    if !categories.is_empty() {
        fields.push(("categories", array(one_of(categories))));
    }
    object(&[("results", array(object(&fields)))])
}

/// Query analysis: `{keys, terms, hyde}`.
pub(crate) fn query_analysis() -> Value {
    object(&[
        ("keys", array(typed("string"))),
        ("terms", array(typed("string"))),
        ("hyde", nullable("string")),
    ])
}

/// Synthesis: `{answer, citations}`.
pub(crate) fn synthesis() -> Value {
    object(&[
        ("answer", typed("string")),
        ("citations", array(typed("integer"))),
    ])
}

/// Consolidation's confirmation: `{"groups": [{group, same, reason}]}`.
pub(crate) fn consolidation() -> Value {
    object(&[(
        "groups",
        array(object(&[
            ("group", typed("integer")),
            ("same", typed("boolean")),
            ("reason", typed("string")),
        ])),
    )])
}

/// Contradictions: `{"pairs": [{pair, contradicts, reason}]}`.
pub(crate) fn contradiction() -> Value {
    object(&[(
        "pairs",
        array(object(&[
            ("pair", typed("integer")),
            ("contradicts", typed("boolean")),
            ("reason", typed("string")),
        ])),
    )])
}

/// The profile digest: `{summary, sources}`.
pub(crate) fn digest() -> Value {
    object(&[
        ("summary", typed("string")),
        ("sources", array(typed("integer"))),
    ])
}

#[cfg(test)]
mod tests {
    use memory_core::structured::strict_schema_violations;

    use super::*;

    #[test]
    fn every_schema_the_project_sends_follows_strict_mode_rules() {
        for (stage, schema) in [
            ("extraction", extraction()),
            ("verification", verification()),
            ("classification", classification(&[])),
            ("classification", classification(&["travel", "health"])),
            ("query_analysis", query_analysis()),
            ("synthesis", synthesis()),
            ("consolidation", consolidation()),
            ("contradiction", contradiction()),
            ("digest", digest()),
        ] {
            let problems = strict_schema_violations(&schema);
            assert!(problems.is_empty(), "{stage}: {problems:#?}");
        }
    }

    #[test]
    fn a_missing_optional_value_is_an_explicit_null() {
        let item = &extraction()["properties"]["memories"]["items"];
        assert_eq!(
            item["properties"]["date"]["type"],
            json!(["string", "null"])
        );
        assert_eq!(item["required"], json!(["content", "lines", "date"]));
    }
}
