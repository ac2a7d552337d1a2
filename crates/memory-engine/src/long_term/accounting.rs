//! Accounting of every LLM and embedder call: calls, tokens in and out, time, per stage.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use memory_core::Result;
use memory_core::ports::{ChatRequest, ChatResponse, Embedder, LanguageModel, Reranker};
use serde::Serialize;

/// What one stage spent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
pub struct StageUsage {
    /// LLM or embedder calls (failed ones included, a repair round counted as a call).
    pub calls: u64,
    /// Requests an LLM adapter sent over the wire for those calls: retries and
    /// structured-output format fallbacks included (a failed call counts one; its retries are
    /// in its error). Not counted for embedder calls.
    #[serde(default)]
    pub requests: u64,
    /// Structured replies that had to be asked for again (invalid or cut off).
    #[serde(default)]
    pub repairs: u64,
    /// Prompt tokens (LLM) or texts embedded (embedder).
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Texts embedded.
    pub texts: u64,
    /// Wall time spent in calls, milliseconds.
    pub millis: u64,
}

/// Usage per stage (`extraction`, `verification`, `embedding`, ...), returned with every
/// operation's result.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
pub struct UsageReport {
    /// Per stage.
    pub stages: BTreeMap<String, StageUsage>,
}

impl UsageReport {
    /// The sum over stages.
    pub fn total(&self) -> StageUsage {
        self.stages
            .values()
            .fold(StageUsage::default(), |a, b| StageUsage {
                calls: a.calls + b.calls,
                requests: a.requests + b.requests,
                repairs: a.repairs + b.repairs,
                input_tokens: a.input_tokens + b.input_tokens,
                output_tokens: a.output_tokens + b.output_tokens,
                texts: a.texts + b.texts,
                millis: a.millis + b.millis,
            })
    }

    /// Adds another report into this one.
    pub fn merge(&mut self, other: &UsageReport) {
        for (stage, u) in &other.stages {
            let e = self.stages.entry(stage.clone()).or_default();
            e.calls += u.calls;
            e.requests += u.requests;
            e.repairs += u.repairs;
            e.input_tokens += u.input_tokens;
            e.output_tokens += u.output_tokens;
            e.texts += u.texts;
            e.millis += u.millis;
        }
    }
}

/// Records calls as they happen; shared by the concurrent parts of one operation.
#[derive(Debug, Clone, Default)]
pub(crate) struct Meter {
    report: Arc<Mutex<UsageReport>>,
    affinity: Option<(String, String)>,
}

impl Meter {
    /// A meter whose LLM calls carry `header: value` (the session-affinity key).
    pub(crate) fn new(affinity: Option<(String, String)>) -> Self {
        Self {
            report: Arc::default(),
            affinity,
        }
    }

    fn record(&self, stage: &str, f: impl FnOnce(&mut StageUsage)) {
        if let Ok(mut report) = self.report.lock() {
            f(report.stages.entry(stage.to_owned()).or_default());
        }
    }

    /// One chat completion, accounted under `stage`.
    pub(crate) async fn chat(
        &self,
        stage: &str,
        model: &dyn LanguageModel,
        mut request: ChatRequest,
    ) -> Result<ChatResponse> {
        if let Some((name, value)) = &self.affinity {
            request.headers.push((name.clone(), value.clone()));
        }
        let started = Instant::now();
        let result = model.complete(request).await;
        let millis = started.elapsed().as_millis() as u64;
        self.record(stage, |u| {
            u.calls += 1;
            u.millis += millis;
            match &result {
                Ok(response) => {
                    u.requests += u64::from(response.requests.max(1));
                    u.input_tokens += response.usage.input_tokens;
                    u.output_tokens += response.usage.output_tokens;
                }
                Err(_) => u.requests += 1,
            }
        });
        result
    }

    /// Counts a repair round of `stage` (its call is counted by [`Meter::chat`]).
    pub(crate) fn repair(&self, stage: &str) {
        self.record(stage, |u| u.repairs += 1);
    }

    /// One embedding call of documents, accounted under `stage`.
    pub(crate) async fn embed(
        &self,
        stage: &str,
        embedder: &dyn Embedder,
        texts: &[String],
    ) -> Result<Vec<Vec<f32>>> {
        self.timed(stage, texts.len(), embedder.embed(texts)).await
    }

    /// One embedding call of search queries ([`Embedder::embed_queries`]), accounted under
    /// `stage`.
    pub(crate) async fn embed_queries(
        &self,
        stage: &str,
        embedder: &dyn Embedder,
        queries: &[String],
    ) -> Result<Vec<Vec<f32>>> {
        self.timed(stage, queries.len(), embedder.embed_queries(queries))
            .await
    }

    /// One reranker call over `documents`, accounted under `stage`.
    pub(crate) async fn rerank(
        &self,
        stage: &str,
        reranker: &dyn Reranker,
        query: &str,
        documents: &[String],
    ) -> Result<Vec<f32>> {
        self.timed(stage, documents.len(), reranker.score(query, documents))
            .await
    }

    /// Runs a model call over `texts` texts, counting it, its time and its texts.
    async fn timed<T>(
        &self,
        stage: &str,
        texts: usize,
        call: impl std::future::Future<Output = Result<T>>,
    ) -> Result<T> {
        let started = Instant::now();
        let result = call.await;
        let millis = started.elapsed().as_millis() as u64;
        self.record(stage, |u| {
            u.calls += 1;
            u.millis += millis;
            u.texts += texts as u64;
        });
        result
    }

    /// What has been recorded since the last reset, then starts afresh.
    pub(crate) fn report_and_reset(&self) -> UsageReport {
        self.report
            .lock()
            .map(|mut r| std::mem::take(&mut *r))
            .unwrap_or_default()
    }

    /// What has been recorded so far.
    pub(crate) fn report(&self) -> UsageReport {
        self.report.lock().map(|r| r.clone()).unwrap_or_default()
    }
}
