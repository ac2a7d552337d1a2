//! The run's language model: a loopback stand-in for an OpenAI-compatible server, so that
//! compaction (which summarises through `[llm]`) runs under the load. The faults are in the
//! backends, not in the model: it answers at once, a summary for a summary request and, for a
//! structured request, the smallest value its JSON schema allows (no memories extracted), so
//! ingest jobs still run every stage the queue and stores see.

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

/// Starts the stand-in; its base URL (`.../v1`) goes into `[llm] base_url`.
pub async fn start() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(|request: &Request| {
            let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
            let content = match body["response_format"]["json_schema"].get("schema") {
                Some(schema) => smallest(schema).to_string(),
                None => "The user and the assistant exchanged numbered test messages.".to_owned(),
            };
            ResponseTemplate::new(200).set_body_json(json!({
                "id": "stand-in",
                "object": "chat.completion",
                "model": "stand-in",
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": content}}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
            }))
        })
        .mount(&server)
        .await;
    server
}

/// The smallest value a JSON schema allows: empty arrays, zero, false, the first of an enum,
/// every required property of an object.
fn smallest(schema: &Value) -> Value {
    if let Some(first) = schema["enum"].as_array().and_then(|e| e.first()) {
        return first.clone();
    }
    if let Some(first) = schema["anyOf"]
        .as_array()
        .or(schema["oneOf"].as_array())
        .and_then(|options| options.first())
    {
        return smallest(first);
    }
    let kind = match &schema["type"] {
        Value::Array(kinds) if kinds.iter().any(|k| k == "null") => "null",
        Value::Array(kinds) => kinds.first().and_then(Value::as_str).unwrap_or("null"),
        Value::String(kind) => kind.as_str(),
        _ => "null",
    };
    match kind {
        "object" => {
            let mut out = serde_json::Map::new();
            let required: Vec<&str> = schema["required"]
                .as_array()
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if let Some(properties) = schema["properties"].as_object() {
                for (name, property) in properties {
                    if required.contains(&name.as_str()) {
                        out.insert(name.clone(), smallest(property));
                    }
                }
            }
            Value::Object(out)
        }
        "array" => json!([]),
        "string" => json!(""),
        "integer" | "number" => schema.get("minimum").cloned().unwrap_or(json!(0)),
        "boolean" => json!(false),
        _ => Value::Null,
    }
}
