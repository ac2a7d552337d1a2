//! Prometheus metrics of one server: requests by route, method and status, and their
//! latency; LLM calls and tokens, and texts embedded, per stage (`extraction`,
//! `verification`, `synthesis`, `embedding`, `compaction`, ...) for the work this server
//! does (recalls, compactions, and the ingest jobs it runs; a `memory worker` reports its
//! jobs' usage in its log). Served at `/metrics` in the text format.

use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use memory_engine::long_term::UsageReport;
use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounterVec, Opts, Registry, TextEncoder,
};

/// The server's metrics (a registry of its own, so several servers in one process, as in
/// tests, never share counters).
#[derive(Clone)]
pub struct Metrics {
    registry: Registry,
    requests: IntCounterVec,
    latency: HistogramVec,
    llm_calls: IntCounterVec,
    llm_tokens: IntCounterVec,
    embedded_texts: IntCounterVec,
}

impl Metrics {
    /// Fresh counters.
    pub fn new() -> Result<Self, prometheus::Error> {
        let registry = Registry::new();
        let requests = IntCounterVec::new(
            Opts::new("memory_http_requests_total", "HTTP requests answered"),
            &["method", "route", "status"],
        )?;
        let latency = HistogramVec::new(
            HistogramOpts::new(
                "memory_http_request_duration_seconds",
                "Time to answer an HTTP request",
            )
            .buckets(vec![
                0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
            ]),
            &["method", "route"],
        )?;
        let llm_calls = IntCounterVec::new(
            Opts::new(
                "memory_llm_calls_total",
                "LLM and embedder calls, per stage",
            ),
            &["stage"],
        )?;
        let llm_tokens = IntCounterVec::new(
            Opts::new(
                "memory_llm_tokens_total",
                "LLM tokens per stage, `direction` input (prompt) or output (completion)",
            ),
            &["stage", "direction"],
        )?;
        let embedded_texts = IntCounterVec::new(
            Opts::new("memory_embedded_texts_total", "Texts embedded, per stage"),
            &["stage"],
        )?;
        for metric in [&requests, &llm_calls, &llm_tokens, &embedded_texts] {
            registry.register(Box::new(metric.clone()))?;
        }
        registry.register(Box::new(latency.clone()))?;
        Ok(Self {
            registry,
            requests,
            latency,
            llm_calls,
            llm_tokens,
            embedded_texts,
        })
    }

    /// Adds what an operation spent, per stage.
    pub fn record_usage(&self, usage: &UsageReport) {
        for (stage, spent) in &usage.stages {
            self.llm_calls
                .with_label_values(&[stage.as_str()])
                .inc_by(spent.calls);
            self.llm_tokens
                .with_label_values(&[stage.as_str(), "input"])
                .inc_by(spent.input_tokens);
            self.llm_tokens
                .with_label_values(&[stage.as_str(), "output"])
                .inc_by(spent.output_tokens);
            if spent.texts > 0 {
                self.embedded_texts
                    .with_label_values(&[stage.as_str()])
                    .inc_by(spent.texts);
            }
        }
    }

    /// Adds a compaction's tokens (stage `compaction`).
    pub fn record_compaction(&self, usage: &memory_core::ports::TokenUsage) {
        self.llm_calls.with_label_values(&["compaction"]).inc();
        self.llm_tokens
            .with_label_values(&["compaction", "input"])
            .inc_by(usage.input_tokens);
        self.llm_tokens
            .with_label_values(&["compaction", "output"])
            .inc_by(usage.output_tokens);
    }

    /// The text exposition of every metric.
    pub fn render(&self) -> String {
        let mut buffer = Vec::new();
        if let Err(e) = TextEncoder::new().encode(&self.registry.gather(), &mut buffer) {
            tracing::error!(error = %e, "encoding metrics");
        }
        String::from_utf8_lossy(&buffer).into_owned()
    }
}

/// Counts and times every request under its route template (never its raw path, which
/// would make one series per session id).
pub async fn record(State(metrics): State<Metrics>, request: Request, next: Next) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched", |p| p.as_str())
        .to_owned();
    let method = request.method().as_str().to_owned();
    let started = Instant::now();
    let response = next.run(request).await;
    metrics
        .latency
        .with_label_values(&[&method, &route])
        .observe(started.elapsed().as_secs_f64());
    metrics
        .requests
        .with_label_values(&[&method, &route, response.status().as_str()])
        .inc();
    response
}

/// `GET /metrics`.
pub async fn expose(State(metrics): State<Metrics>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        metrics.render(),
    )
}
