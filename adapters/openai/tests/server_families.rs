//! The client against the replies of each family of OpenAI-compatible server, read from
//! `tests/fixtures/server-families/*.json` (each fixture says whether it was recorded from a
//! real server or written from a documented shape). Every family must end in a valid JSON
//! answer, in the strongest format the server takes, learned once per client.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::time::Duration;

use memory_core::ports::{ChatMessage, ChatRequest, ChatRole, LanguageModel, ResponseFormat};
use memory_core::structured::strict_schema_violations;
use memory_openai::{OpenAiChat, OpenAiConfig, StructuredOutput};
use serde_json::{Value, json};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// Answers like the fixture's server: by the request's `response_format` type.
struct Family(Value);

fn format_of(body: &Value) -> &str {
    body["response_format"]["type"].as_str().unwrap_or("text")
}

impl Respond for Family {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let reply = &self.0["replies"][format_of(&body)];
        let strict = body["response_format"]["json_schema"]["strict"] == json!(true);
        let schema = &body["response_format"]["json_schema"]["schema"];
        if reply["strict_rules"] == json!(true)
            && strict
            && !strict_schema_violations(schema).is_empty()
        {
            let refusal = &self.0["refusal"];
            return ResponseTemplate::new(refusal["status"].as_u64().unwrap() as u16)
                .set_body_json(refusal["body"].clone());
        }
        ResponseTemplate::new(reply["status"].as_u64().unwrap() as u16)
            .set_body_json(reply["body"].clone())
    }
}

fn fixtures() -> Vec<(String, Value)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/server-families");
    let mut out: Vec<(String, Value)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                serde_json::from_str(&text).unwrap(),
            )
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The synthesis stage's request shape: a strict-valid schema.
fn synthesis_request(schema: Value) -> ChatRequest {
    ChatRequest {
        messages: vec![
            ChatMessage::new(ChatRole::System, "You answer a question from records."),
            ChatMessage::new(ChatRole::User, "[1] Ada lives in Lisbon.\nQuestion: where?"),
        ],
        max_tokens: Some(256),
        response_format: ResponseFormat::JsonSchema {
            name: "synthesis".into(),
            schema,
        },
        ..ChatRequest::default()
    }
}

fn strict_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "answer": {"type": "string"},
            "citations": {"type": "array", "items": {"type": "integer"}}
        },
        "required": ["answer", "citations"],
        "additionalProperties": false
    })
}

async fn client_for(fixture: &Value, mode: StructuredOutput) -> (MockServer, OpenAiChat) {
    let server = MockServer::start().await;
    Mock::given(wiremock::matchers::method("POST"))
        .respond_with(Family(fixture.clone()))
        .mount(&server)
        .await;
    let config = OpenAiConfig::new(format!("{}/v1", server.uri()), "model")
        .retries(3, Duration::from_millis(5))
        .structured_output(mode);
    let chat = OpenAiChat::new(config).unwrap();
    (server, chat)
}

#[tokio::test]
async fn every_server_family_ends_in_valid_json_in_the_strongest_format_it_takes() {
    let families = fixtures();
    assert!(families.len() >= 5, "fixtures missing: {families:?}");
    for (file, fixture) in families {
        let expect = &fixture["expect"];
        let (server, chat) = client_for(&fixture, StructuredOutput::Auto).await;

        let first = chat
            .complete(synthesis_request(strict_schema()))
            .await
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        let content: Value = serde_json::from_str(&first.content)
            .unwrap_or_else(|e| panic!("{file}: {e}: {:?}", first.content));
        assert_eq!(content, expect["content"], "{file}");
        assert_eq!(
            u64::from(first.requests),
            expect["requests"].as_u64().unwrap(),
            "{file}: requests of the first call (fallbacks included)"
        );
        assert_eq!(chat.structured_format(), expect["format"], "{file}");

        // The format is learned: the next call goes straight to it, and a clone shares it.
        let second = chat
            .clone()
            .complete(synthesis_request(strict_schema()))
            .await
            .unwrap();
        assert_eq!(
            second.requests, 1,
            "{file}: the second call needs no discovery"
        );

        let sent = server.received_requests().await.unwrap();
        let last: Value = serde_json::from_slice(&sent.last().unwrap().body).unwrap();
        assert_eq!(
            format_of(&last),
            expect["format"].as_str().unwrap(),
            "{file}"
        );
        let system = last["messages"][0]["content"].as_str().unwrap();
        let schema_in_prompt = system.contains("JSON Schema");
        assert_eq!(
            schema_in_prompt,
            expect["format"] != "json_schema",
            "{file}: the schema goes in the prompt exactly when the server cannot enforce it"
        );
        assert_eq!(
            last["messages"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|m| m["role"] == "system")
                .count(),
            1,
            "{file}: one system prompt"
        );
        if expect["format"] == "json_object" {
            assert_eq!(
                last["response_format"]["schema"],
                strict_schema(),
                "{file}: the schema rides beside json_object (llama.cpp servers enforce it)"
            );
        }
        let first_sent: Value = serde_json::from_slice(&sent[0].body).unwrap();
        assert_eq!(
            first_sent["response_format"]["json_schema"]["strict"],
            json!(true),
            "{file}: a strict-valid schema is sent strict"
        );
    }
}

/// A schema that breaks strict mode's rules (a caller's own) goes out with `strict: false`,
/// which OpenAI accepts, instead of being refused.
#[tokio::test]
async fn a_schema_outside_strict_rules_is_sent_non_strict() {
    let fixture = fixtures()
        .into_iter()
        .find(|(file, _)| file == "openai-strict.json")
        .unwrap()
        .1;
    let (server, chat) = client_for(&fixture, StructuredOutput::Auto).await;
    let open = json!({"type": "object", "properties": {"answer": {"type": "string"}}});
    let reply = chat.complete(synthesis_request(open)).await.unwrap();
    assert_eq!(reply.requests, 1);
    assert_eq!(chat.structured_format(), "json_schema");
    let sent: Value =
        serde_json::from_slice(&server.received_requests().await.unwrap()[0].body).unwrap();
    assert_eq!(
        sent["response_format"]["json_schema"]["strict"],
        json!(false)
    );
}

/// A configured format is kept: a refusal is a clear error after one request, never a
/// silent switch, and never retried as is.
#[tokio::test]
async fn a_configured_format_that_the_server_refuses_is_a_clear_error() {
    let fixture = fixtures()
        .into_iter()
        .find(|(file, _)| file == "json-object-only.json")
        .unwrap()
        .1;
    let (server, chat) = client_for(&fixture, StructuredOutput::JsonSchema).await;
    let err = chat
        .complete(synthesis_request(strict_schema()))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("json_schema"), "{err}");
    assert!(!err.is_transient());
    assert_eq!(server.received_requests().await.unwrap().len(), 1);

    // Configured to json_object from the start, the same server answers at once.
    let (_, chat) = client_for(&fixture, StructuredOutput::JsonObject).await;
    let reply = chat
        .complete(synthesis_request(strict_schema()))
        .await
        .unwrap();
    assert_eq!(reply.requests, 1);
}

/// Plain-text requests never carry a `response_format` nor fall back.
#[tokio::test]
async fn text_requests_are_sent_as_they_are() {
    let fixture = fixtures()
        .into_iter()
        .find(|(file, _)| file == "text-only.json")
        .unwrap()
        .1;
    let (server, chat) = client_for(&fixture, StructuredOutput::Auto).await;
    let request = ChatRequest {
        messages: vec![ChatMessage::new(ChatRole::User, "summarize")],
        ..ChatRequest::default()
    };
    let reply = chat.complete(request).await.unwrap();
    assert!(reply.content.contains("Lisbon"));
    let sent: Value =
        serde_json::from_slice(&server.received_requests().await.unwrap()[0].body).unwrap();
    assert!(sent.get("response_format").is_none());
    assert_eq!(
        chat.structured_format(),
        "json_schema",
        "nothing was learned"
    );
}

/// What one client learned, a client made from it for another model knows (the extraction
/// and synthesis models of one server discover it once).
#[tokio::test]
async fn clients_of_one_endpoint_share_what_was_learned() {
    let fixture = fixtures()
        .into_iter()
        .find(|(file, _)| file == "llama-cpp-python.json")
        .unwrap()
        .1;
    let (server, first) = client_for(&fixture, StructuredOutput::Auto).await;
    first
        .complete(synthesis_request(strict_schema()))
        .await
        .unwrap();
    let second = first.with_model("another-model");
    assert_eq!(second.structured_format(), "json_object");
    let reply = second
        .complete(synthesis_request(strict_schema()))
        .await
        .unwrap();
    assert_eq!(reply.requests, 1);
    let sent = server.received_requests().await.unwrap();
    let last: Value = serde_json::from_slice(&sent.last().unwrap().body).unwrap();
    assert_eq!(last["model"], "another-model");
}
