//! Prometheus metrics of one server: requests by route, method and status, and their
//! latency; LLM calls and tokens, and texts embedded, per stage (`extraction`,
//! `verification`, `synthesis`, `embedding`, `compaction`, ...) for the work this server
//! does (recalls, compactions, and the ingest jobs it runs; a `memory worker` reports its
//! jobs' usage in its log); requests refused with 503, by route and reason, each route's
//! refusals logged at most once a second with their count. Served at `/metrics` in the
//! text format.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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
    refused: IntCounterVec,
    refusal_log: Arc<Mutex<HashMap<String, RefusalLine>>>,
}

/// The refusal log of one route: when it last wrote a line, and what was refused since.
struct RefusalLine {
    logged_at: Instant,
    since: u64,
}

/// At most one refusal line per route this often.
const REFUSAL_LOG_EVERY: Duration = Duration::from_secs(1);

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
        let refused = IntCounterVec::new(
            Opts::new(
                "memory_http_refused_total",
                "Requests refused with 503 (overload, a timeout, a backend away), by route and reason",
            ),
            &["route", "reason"],
        )?;
        let embedded_texts = IntCounterVec::new(
            Opts::new("memory_embedded_texts_total", "Texts embedded, per stage"),
            &["stage"],
        )?;
        for metric in [
            &requests,
            &llm_calls,
            &llm_tokens,
            &embedded_texts,
            &refused,
        ] {
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
            refused,
            refusal_log: Arc::default(),
        })
    }

    /// Counts a refused request and logs it, at most one line a second per route, saying
    /// how many were refused since the route's last line (the first is logged at once).
    fn record_refusal(&self, route: &str, refusal: &crate::error::Refusal) {
        self.refused.with_label_values(&[route, refusal.code]).inc();
        let mut lines = self
            .refusal_log
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = Instant::now();
        let line = lines.entry(route.to_owned()).or_insert(RefusalLine {
            logged_at: now.checked_sub(REFUSAL_LOG_EVERY).unwrap_or(now),
            since: 0,
        });
        line.since += 1;
        if now.duration_since(line.logged_at) >= REFUSAL_LOG_EVERY {
            if refusal.code == crate::error::BACKEND_FAILED {
                tracing::error!(
                    route,
                    refused = line.since,
                    reason = refusal.code,
                    cause = %refusal.cause,
                    "requests refused with 503 since this route's last line (at most one line a second per route)"
                );
            } else {
                tracing::warn!(
                    route,
                    refused = line.since,
                    reason = refusal.code,
                    cause = %refusal.cause,
                    "requests refused with 503 since this route's last line (at most one line a second per route)"
                );
            }
            line.logged_at = now;
            line.since = 0;
        }
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
    if let Some(refusal) = response.extensions().get::<crate::error::Refusal>() {
        metrics.record_refusal(&route, refusal);
    }
    response
}

/// `GET /metrics`.
pub async fn expose(State(metrics): State<Metrics>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        metrics.render(),
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::{Arc, Mutex};

    use super::Metrics;
    use crate::error::Refusal;

    /// A log writer the test reads back.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn refusals_are_each_counted_and_logged_at_most_once_a_second_per_route() {
        let log = Captured::default();
        let writer = log.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        let metrics = Metrics::new().unwrap();
        let refusal = Refusal {
            code: "busy",
            cause: "the server is full".into(),
        };
        tracing::subscriber::with_default(subscriber, || {
            for _ in 0..1_000 {
                metrics.record_refusal("/v1/a", &refusal);
            }
            metrics.record_refusal("/v1/b", &refusal);
        });
        let text = String::from_utf8(log.0.lock().unwrap().clone()).unwrap();
        assert_eq!(text.lines().count(), 2, "one line per route: {text}");
        assert!(
            text.contains("route=\"/v1/a\"") || text.contains("route=/v1/a"),
            "{text}"
        );
        assert!(
            text.contains("refused=1"),
            "the first is logged at once: {text}"
        );
        let rendered = metrics.render();
        assert!(
            rendered.contains(r#"memory_http_refused_total{reason="busy",route="/v1/a"} 1000"#),
            "{rendered}"
        );
        assert!(rendered.contains(r#"memory_http_refused_total{reason="busy",route="/v1/b"} 1"#));
    }
}
