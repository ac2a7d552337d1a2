//! The adapter against a local HTTP server: success, retries, exhaustion, malformed JSON,
//! timeouts, tool calls and headers.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use memory_core::ToolDefinition;
use memory_core::ports::{
    ChatMessage, ChatRequest, ChatRole, FinishReason, LanguageModel, ResponseFormat,
};
use memory_openai::{OpenAiChat, OpenAiConfig};
use serde_json::{Value, json};
use wiremock::matchers::{body_partial_json, header, method, path, query_param};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

fn completion(content: Value, prompt: u64, completion: u64) -> Value {
    json!({
        "id": "x", "model": "test-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
    })
}

fn chat(server: &MockServer) -> OpenAiChat {
    let config = OpenAiConfig::new(format!("{}/v1/", server.uri()), "test-model")
        .api_key("sk-test")
        .retries(2, Duration::from_millis(5))
        .timeout(Duration::from_millis(500));
    OpenAiChat::new(config).unwrap()
}

fn ask(text: &str) -> ChatRequest {
    ChatRequest {
        messages: vec![ChatMessage::new(ChatRole::User, text)],
        ..ChatRequest::default()
    }
}

#[tokio::test]
async fn success_returns_content_usage_and_forwards_auth_and_headers() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(header("authorization", "Bearer sk-test"))
        .and(header("x-session-affinity", "profile-a"))
        .and(body_partial_json(
            json!({"model": "test-model", "messages": [{"role": "user", "content": "hello"}]}),
        ))
        .respond_with(ResponseTemplate::new(200).set_body_json(completion(
            json!("hi there"),
            12,
            3,
        )))
        .expect(1)
        .mount(&server)
        .await;
    let mut request = ask("hello");
    request
        .headers
        .push(("x-session-affinity".into(), "profile-a".into()));
    let response = chat(&server).complete(request).await.unwrap();
    assert_eq!(response.content, "hi there");
    assert_eq!(response.model, "test-model");
    assert_eq!(
        (response.usage.input_tokens, response.usage.output_tokens),
        (12, 3)
    );
}

#[tokio::test]
async fn a_429_is_retried_after_retry_after() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "0")
                .set_body_string("slow down"),
        )
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(completion(json!("ok"), 1, 1)))
        .mount(&server)
        .await;
    assert_eq!(
        chat(&server).complete(ask("x")).await.unwrap().content,
        "ok"
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

/// A server that refuses `json_schema` with a 500 (llama-cpp-python does) refuses it again on
/// every retry: the refusal is reported after one request.
#[tokio::test]
async fn a_500_refusing_the_response_format_is_not_retried() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500).set_body_string(
            r#"{"detail":[{"type":"literal_error","loc":["body","response_format","type"],"msg":"Input should be 'text' or 'json_object'"}]}"#,
        ))
        .mount(&server)
        .await;
    let err = chat(&server).complete(ask("x")).await.unwrap_err();
    assert!(err.to_string().contains("after 1 attempt(s)"), "{err}");
    assert!(
        !err.is_transient(),
        "the same request would fail the same way"
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

#[tokio::test]
async fn server_errors_are_retried_then_reported() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503).set_body_string("overloaded"))
        .mount(&server)
        .await;
    let err = chat(&server).complete(ask("x")).await.unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("503") && text.contains("overloaded") && text.contains("after 3 attempt(s)"),
        "{text}"
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 3);
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(401).set_body_string("bad key"))
        .mount(&server)
        .await;
    let err = chat(&server).complete(ask("x")).await.unwrap_err();
    assert!(err.to_string().contains("401"), "{err}");
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

#[tokio::test]
async fn timeouts_are_retried_then_reported() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(completion(json!("late"), 1, 1))
                .set_delay(Duration::from_secs(2)),
        )
        .mount(&server)
        .await;
    let err = chat(&server).complete(ask("x")).await.unwrap_err();
    assert!(
        err.is_transient(),
        "a timeout may pass on a later retry: {err}"
    );
    assert!(err.to_string().contains("after 3 attempt(s)"), "{err}");
    assert!(
        std::error::Error::source(&err).is_some(),
        "the cause is kept"
    );
}

fn structured() -> ChatRequest {
    let mut r = ask("extract");
    r.response_format = ResponseFormat::JsonSchema {
        name: "facts".into(),
        schema: json!({"type": "object"}),
    };
    r
}

/// The adapter cuts the JSON out of a fence and prose, and leaves validating and repairing to
/// the caller: one request, whatever the reply.
#[tokio::test]
async fn structured_replies_lose_fences_and_prose_and_are_never_repaired_here() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(completion(
            json!("Sure! ```json\n{\"facts\": [\"a\"]}\n``` Hope that helps."),
            10,
            5,
        )))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(completion(json!("not json"), 4, 2)))
        .mount(&server)
        .await;
    let client = chat(&server);
    let response = client.complete(structured()).await.unwrap();
    assert_eq!(response.content, "{\"facts\": [\"a\"]}");
    assert_eq!(
        (response.requests, response.finish_reason),
        (1, FinishReason::Stop)
    );
    let response = client.complete(structured()).await.unwrap();
    assert_eq!(
        response.content, "not json",
        "the caller validates and repairs"
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

/// A reply stopped by `max_tokens` says so; its unclosed JSON is not passed on as complete.
#[tokio::test]
async fn a_reply_cut_off_at_max_tokens_says_so() {
    let server = MockServer::start().await;
    let mut body = completion(json!("{\"facts\": [\"a very long"), 3, 64);
    body["choices"][0]["finish_reason"] = json!("length");
    Mock::given(method("POST"))
        .and(body_partial_json(json!({"max_tokens": 64})))
        .respond_with(ResponseTemplate::new(200).set_body_json(body))
        .mount(&server)
        .await;
    let mut request = structured();
    request.max_tokens = Some(64);
    let response = chat(&server).complete(request).await.unwrap();
    assert_eq!(response.finish_reason, FinishReason::Length);
    assert_eq!(response.content, "{\"facts\": [\"a very long");
}

/// Retries count as requests: a 503 then a success is one answer from two requests.
#[tokio::test]
async fn requests_count_every_retry() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503).set_body_string("busy"))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(completion(json!("ok"), 1, 1)))
        .mount(&server)
        .await;
    let response = chat(&server).complete(ask("x")).await.unwrap();
    assert_eq!((response.content.as_str(), response.requests), ("ok", 2));
}

/// The deadline bounds the whole call: a server slower than the deadline costs the deadline,
/// not the retries times the timeout, and the error says so (transient: a later call may pass).
#[tokio::test]
async fn the_deadline_bounds_the_whole_call_retries_included() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(completion(json!("late"), 1, 1))
                .set_delay(Duration::from_secs(5)),
        )
        .mount(&server)
        .await;
    let config = OpenAiConfig::new(format!("{}/v1", server.uri()), "test-model")
        .retries(10, Duration::from_millis(5))
        .timeout(Duration::from_millis(300))
        .deadline(Duration::from_millis(800));
    let started = std::time::Instant::now();
    let err = OpenAiChat::new(config)
        .unwrap()
        .complete(ask("x"))
        .await
        .unwrap_err();
    let elapsed = started.elapsed();
    assert!(elapsed < Duration::from_secs(3), "took {elapsed:?}");
    assert!(err.is_transient(), "{err}");
    assert!(err.to_string().contains("deadline"), "{err}");
}

#[tokio::test]
async fn malformed_bodies_are_errors_not_panics() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_string("<html>"))
        .mount(&server)
        .await;
    assert!(
        chat(&server)
            .complete(ask("x"))
            .await
            .unwrap_err()
            .to_string()
            .contains("not JSON")
    );
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"choices": []})))
        .mount(&server)
        .await;
    assert!(
        chat(&server)
            .complete(ask("x"))
            .await
            .unwrap_err()
            .to_string()
            .contains("malformed")
    );
}

#[tokio::test]
async fn tools_are_sent_and_tool_calls_parsed() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(|r: &Request| {
            let body: Value = serde_json::from_slice(&r.body).unwrap();
            body["tools"][0]["function"]["name"] == "set_context"
        })
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "model": "m",
            "choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "set_context", "arguments": "{\"label\":\"memory\",\"content\":\"x\"}"}}
            ]}}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 9}
        })))
        .mount(&server)
        .await;
    let mut request = ask("remember x");
    request.tools.push(ToolDefinition {
        name: "set_context".into(),
        description: "d".into(),
        parameters: json!({"type": "object"}),
    });
    let response = chat(&server).complete(request).await.unwrap();
    assert_eq!(response.content, "");
    assert_eq!(response.tool_calls[0].id, "call_1");
    assert_eq!(
        response.tool_calls[0].arguments,
        json!({"label": "memory", "content": "x"})
    );
}

#[tokio::test]
async fn azure_style_deployments_use_the_api_version_and_api_key_header() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/openai/deployments/gpt4o/chat/completions"))
        .and(query_param("api-version", "2024-10-21"))
        .and(header("api-key", "azure-key"))
        .respond_with(ResponseTemplate::new(200).set_body_json(completion(
            json!("from azure"),
            1,
            1,
        )))
        .expect(1)
        .mount(&server)
        .await;
    let config = OpenAiConfig::azure(
        format!("{}/openai/deployments/gpt4o", server.uri()),
        "gpt4o",
        "2024-10-21",
    )
    .api_key("azure-key");
    let response = OpenAiChat::new(config)
        .unwrap()
        .complete(ask("x"))
        .await
        .unwrap();
    assert_eq!(response.content, "from azure");
}
