//! `/embeddings` against a local HTTP server: batching, order by index, retries, bad replies.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use memory_core::MemoryError;
use memory_core::ports::Embedder;
use memory_openai::{OpenAiConfig, OpenAiEmbedder};
use serde_json::{Value, json};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// A fake embedding: `[len(text), first byte, 1]`, returned in reverse index order to prove
/// the client reorders by `index`.
struct FakeEmbeddings;

impl Respond for FakeEmbeddings {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let inputs = body["input"].as_array().unwrap();
        let mut data: Vec<Value> = inputs
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let t = t.as_str().unwrap();
                json!({"object": "embedding", "index": i,
                       "embedding": [t.len() as f64, t.as_bytes()[0] as f64, 1.0]})
            })
            .collect();
        data.reverse();
        ResponseTemplate::new(200).set_body_json(json!({
            "object": "list", "data": data, "model": body["model"],
            "usage": {"prompt_tokens": inputs.len(), "total_tokens": inputs.len()}
        }))
    }
}

fn embedder(server: &MockServer) -> OpenAiEmbedder {
    let config = OpenAiConfig::new(format!("{}/v1", server.uri()), "embed-small")
        .api_key("sk-test")
        .retries(2, Duration::from_millis(5));
    OpenAiEmbedder::new(config, 3).unwrap().batch_size(2)
}

#[tokio::test]
async fn batches_and_keeps_input_order() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .and(header("authorization", "Bearer sk-test"))
        .respond_with(FakeEmbeddings)
        .expect(3)
        .mount(&server)
        .await;
    let e = embedder(&server);
    let texts: Vec<String> = ["a", "bb", "ccc", "dddd", "eeeee"]
        .map(String::from)
        .to_vec();
    let vectors = e.embed(&texts).await.unwrap();
    assert_eq!(vectors.len(), 5);
    for (t, v) in texts.iter().zip(&vectors) {
        assert_eq!(v[0] as usize, t.len());
        assert_eq!(v[1] as u8, t.as_bytes()[0]);
    }
    assert_eq!(e.model_id(), "embed-small");
    memory_testkit::contract::embedder::empty_batch_is_empty(&e).await;
}

#[tokio::test]
async fn retries_a_rate_limit_then_succeeds() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "0"))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(FakeEmbeddings)
        .mount(&server)
        .await;
    let v = embedder(&server).embed(&["x".into()]).await.unwrap();
    assert_eq!(v[0][0], 1.0);
}

#[tokio::test]
async fn wrong_dimensions_and_missing_items_are_errors() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"data": [{"index": 0, "embedding": [1.0, 2.0]}]})),
        )
        .mount(&server)
        .await;
    let err = embedder(&server).embed(&["x".into()]).await.unwrap_err();
    assert!(matches!(err, MemoryError::Backend { .. }));
    assert!(err.to_string().contains("2 dimensions"), "{err}");

    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"data": [{"index": 0, "embedding": [1.0, 2.0, 3.0]}]})),
        )
        .mount(&server)
        .await;
    let err = embedder(&server)
        .embed(&["x".into(), "y".into()])
        .await
        .unwrap_err();
    assert!(err.to_string().contains("fewer embeddings"), "{err}");
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(ResponseTemplate::new(400).set_body_string("bad model"))
        .expect(1)
        .mount(&server)
        .await;
    let err = embedder(&server).embed(&["x".into()]).await.unwrap_err();
    assert!(err.to_string().contains("bad model"), "{err}");
}
