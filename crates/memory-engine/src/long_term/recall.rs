//! Recall: query analysis and the query embedding concurrently, then every channel
//! concurrently, weighted reciprocal-rank fusion, conversational context for raw hits, ties
//! broken by recency, date facts, and an optional synthesized answer.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::future::Future;
use std::sync::Arc;

use futures::future::{OptionFuture, join};
use memory_core::ports::{
    Embedder, LongTermMemoryStore, MemoryKind, MemoryRecord, Reranker, TextQuery, VectorFilter,
    VectorIndex, VectorQuery, VectorRecord, namespaces,
};
use memory_core::{MemoryError, MetadataFilter, Result, SearchMode, Timestamp};
use serde::Serialize;

use super::accounting::{Meter, UsageReport};
use super::core::Core;
use super::degradation::Degradation;
use super::fusion::rrf;
use super::hits::{RecallHit, RecallItem};
use super::keys::normalize_key;
use super::query::{QueryAnalysis, analyze, query_terms};
use super::query_dates::{DateWindow, query_window};
use super::ranking::{
    CandidateItem, Candidates, ChannelHits, context_on, lend_context, pool, rerank_depth, reranked,
    sort_hits, spread_sessions, top_raw, weighted, with_recency,
};
use super::recall_scope::{RAW_PREFIX, Scope, nearest};
use super::survivors::{stands_for, survivors};
use super::synthesis::{SynthesizedAnswer, synthesize};
use super::temporal::temporal_facts;
use super::vectorize::{MEMORY_NAMESPACE, RAW_NAMESPACE};

/// A recall request.
#[derive(Debug, Clone, PartialEq)]
pub struct RecallRequest {
    /// The question or topic.
    pub query: String,
    /// How many items to return.
    pub limit: usize,
    /// Ask the synthesis model for an answer.
    pub synthesize: bool,
    /// When the question is asked: relative dates ("3 days ago") are computed against it.
    /// `None` is now (the service's clock).
    pub as_of: Option<Timestamp>,
    /// Only memories whose metadata satisfies this, in every channel (raw messages, which
    /// carry no metadata, only when it admits an empty object).
    pub metadata: Option<MetadataFilter>,
}

impl RecallRequest {
    /// Up to `limit` items for `query`, no synthesis.
    pub fn new(query: impl Into<String>, limit: usize) -> Self {
        Self {
            query: query.into(),
            limit,
            synthesize: false,
            as_of: None,
            metadata: None,
        }
    }

    /// Only memories whose metadata satisfies `filter`.
    ///
    /// ```
    /// use memory_core::MetadataFilter;
    /// use memory_engine::long_term::RecallRequest;
    /// let filter = MetadataFilter::parse(r#"{"project": "apollo"}"#).unwrap();
    /// let request = RecallRequest::new("deadline", 5).filtered(filter);
    /// assert!(request.metadata.is_some());
    /// ```
    pub fn filtered(mut self, filter: MetadataFilter) -> Self {
        self.metadata = Some(filter);
        self
    }

    /// Asked at `at` rather than now (a replayed conversation's question date).
    pub fn as_of(mut self, at: Timestamp) -> Self {
        self.as_of = Some(at);
        self
    }

    /// Also synthesize an answer.
    pub fn with_answer(mut self) -> Self {
        self.synthesize = true;
        self
    }
}

/// Everything a recall produced.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecallResponse {
    /// Best first.
    pub hits: Vec<RecallHit>,
    /// The synthesized answer, when asked for and available.
    pub answer: Option<SynthesizedAnswer>,
    /// Date facts computed for the hits.
    pub temporal_facts: Vec<String>,
    /// The LLM's reading of the query, when one ran.
    pub analysis: Option<QueryAnalysis>,
    /// The full-text terms used.
    pub terms: Vec<String>,
    /// The window of time the question names ("two weeks ago"); the `dated` channel searched
    /// it when vectors were usable and its weight is above 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub date_window: Option<DateWindow>,
    /// What did not run, and why.
    pub degraded: Vec<Degradation>,
    /// LLM and embedder usage.
    pub usage: UsageReport,
}

fn degrade(list: &mut Vec<Degradation>, feature: &str, reason: impl Into<String>) {
    list.push(Degradation {
        feature: feature.to_owned(),
        reason: reason.into(),
    });
}

/// Where a recall's channels look: the whole profile, or a metadata filter's scope (with
/// the vectors of its memories when few enough to score exactly).
#[derive(Clone, Copy)]
struct Within<'a> {
    store: &'a dyn LongTermMemoryStore,
    scope: Option<&'a Scope>,
    exact: Option<&'a [VectorRecord]>,
}

impl Within<'_> {
    /// The channel's best `depth` hits in scope; `search(k)` gives its best `k` (raw
    /// messages when `raw`).
    async fn search<F, Fut>(&self, depth: usize, raw: bool, search: F) -> Result<Vec<(String, f64)>>
    where
        F: Fn(usize) -> Fut,
        Fut: Future<Output = Result<Vec<(String, f64)>>>,
    {
        match self.scope {
            Some(scope) => scope.within(self.store, depth, raw, search).await,
            None => search(depth).await,
        }
    }

    /// False when the scope leaves raw messages out (their channels do not run).
    fn raw(&self) -> bool {
        self.scope.is_none_or(Scope::admits_raw)
    }
}

/// One vector channel; empty when vectors are unusable or there is no vector to search with.
async fn vector_channel(
    index: Option<&dyn VectorIndex>,
    namespace: &str,
    vector: Option<&Vec<f32>>,
    depth: usize,
    within: Within<'_>,
) -> Result<Vec<(String, f64)>> {
    let (Some(index), Some(vector)) = (index, vector) else {
        return Ok(Vec::new());
    };
    let prefix = if namespace == RAW_NAMESPACE {
        if !within.raw() {
            return Ok(Vec::new());
        }
        RAW_PREFIX
    } else if let Some(records) = within.exact {
        return Ok(nearest(records, vector, &VectorFilter::default(), depth));
    } else {
        ""
    };
    within
        .search(depth, namespace == RAW_NAMESPACE, |k| async move {
            Ok(index
                .query(namespace, vector, k)
                .await?
                .into_iter()
                .map(|h| (format!("{prefix}{}", h.id), f64::from(h.score)))
                .collect())
        })
        .await
}

/// The query's nearest memories and raw messages dated inside `window`, closest first;
/// empty without a window or a usable vector.
async fn dated_channel(
    index: Option<&dyn VectorIndex>,
    vector: Option<&Vec<f32>>,
    window: Option<&DateWindow>,
    depth: usize,
    within: Within<'_>,
) -> Result<Vec<(String, f64)>> {
    let (Some(index), Some(vector), Some(window)) = (index, vector, window) else {
        return Ok(Vec::new());
    };
    let filter = VectorFilter {
        from: Some(window.from),
        to: Some(window.to),
        ..VectorFilter::default()
    };
    let search = |namespace: &'static str, prefix: &'static str| {
        let filter = filter.clone();
        move |k: usize| {
            let query = VectorQuery::new(vector, k).filter(filter.clone());
            async move {
                Ok(index
                    .search(namespace, &query)
                    .await?
                    .into_iter()
                    .map(|h| (format!("{prefix}{}", h.id), f64::from(h.score)))
                    .collect::<Vec<_>>())
            }
        }
    };
    let memories = async {
        match within.exact {
            Some(records) => Ok(nearest(records, vector, &filter, depth)),
            None => {
                within
                    .search(depth, false, search(MEMORY_NAMESPACE, ""))
                    .await
            }
        }
    };
    let raw = async {
        if within.raw() {
            within
                .search(depth, true, search(RAW_NAMESPACE, RAW_PREFIX))
                .await
        } else {
            Ok(Vec::new())
        }
    };
    let (memories, raw) = futures::future::try_join(memories, raw).await?;
    let mut hits: Vec<(String, f64)> = memories.into_iter().chain(raw).collect();
    hits.sort_by(|a, b| b.1.total_cmp(&a.1));
    hits.truncate(depth);
    Ok(hits)
}

/// A memory's `recalled_at` is written again only when this much later (an hour): the
/// profile block's score reads it in days, and most recalls then write nothing.
pub const RECALLED_AT_STEP_MILLIS: i64 = 3_600_000;

/// The most items one recall returns; a larger `limit` is refused (every channel is
/// searched that deep, so an unbounded limit was an unbounded allocation).
pub const MAX_RECALL_LIMIT: usize = 1_000;

/// The model that made each namespace's vectors recall searches (`None`: no vectors yet).
async fn vector_models(index: &dyn VectorIndex) -> Result<Vec<(&'static str, Option<String>)>> {
    let namespaces = [MEMORY_NAMESPACE, RAW_NAMESPACE];
    let models = index.models(&namespaces).await?;
    if models.len() != namespaces.len() {
        return Err(MemoryError::backend(
            "vector index",
            format!(
                "answered {} models for {} namespaces",
                models.len(),
                namespaces.len()
            ),
        ));
    }
    Ok(namespaces.into_iter().zip(models).collect())
}

/// What a recall's first two stages leave: the channels' hits and what the answer reports.
struct Gathered {
    store: Arc<dyn LongTermMemoryStore>,
    scope: Option<Scope>,
    channels: ChannelHits,
    meter: super::accounting::Meter,
    asked_at: Timestamp,
    analysis: Option<QueryAnalysis>,
    terms: Vec<String>,
    window: Option<DateWindow>,
    degraded: Vec<Degradation>,
}

/// Whether recall returns `memory` at `now`: not forgotten, expired or superseded, and in
/// scope.
fn recallable(memory: &MemoryRecord, now: Timestamp, scope: Option<&Scope>) -> bool {
    memory.forgotten.is_none()
        && !memory.is_expired_at(now)
        && memory.superseded_by.is_none()
        && scope.is_none_or(|s| s.admits_metadata(&memory.metadata))
}

/// A recall id without the raw prefix.
fn unprefixed(id: &str) -> String {
    id.strip_prefix(RAW_PREFIX).unwrap_or(id).to_owned()
}

impl Core {
    /// Recalls what the profile knows about `request.query`.
    ///
    /// Without an LLM, the query's own words (function words removed) drive full text and the
    /// key lookup, and the HyDE channel and synthesis are reported as degraded. Without an
    /// embedder, the vector channels are reported as degraded.
    pub(super) async fn recall(
        &self,
        profile: &str,
        request: RecallRequest,
    ) -> Result<RecallResponse> {
        let Gathered {
            store,
            scope,
            channels,
            meter,
            asked_at,
            analysis,
            terms,
            window,
            mut degraded,
        } = self.gather(profile, &request).await?;
        let store_ref = store.as_ref();

        // Stage 3: fusion, context, recency, spread ([`super::ranking`], which `rank` composes
        // the same way over collected candidates).
        let mut fused = rrf(self.config.rrf_k, &weighted(channels, &self.config.weights));
        if context_on(&self.config) {
            let top = top_raw(&fused, request.limit, RAW_PREFIX);
            let ids: Vec<String> = top.iter().map(|(id, _, _)| unprefixed(id)).collect();
            let neighbours = self.neighbours(store_ref, &ids).await?;
            lend_context(&mut fused, &top, &neighbours, self.config.context_weight);
        }
        // With a reranker, the best `rerank_depth` items go on to stage 4.
        let keep = match &self.reranker {
            Some(_) => rerank_depth(&self.config, request.limit),
            None => request.limit,
        };
        let hits = self
            .materialize(store_ref, fused, pool(&self.config, keep), scope.as_ref())
            .await?;
        let hits = with_recency(hits, self.config.weights.recency, self.config.rrf_k, keep);
        // Stage 4: the reranker reads each item with the query and reorders them.
        let hits = match &self.reranker {
            Some(reranker) => {
                self.rerank(&meter, reranker.as_ref(), &request, hits, &mut degraded)
                    .await
            }
            None => hits,
        };
        let hits = spread_sessions(hits, self.config.session_spread);
        self.mark_recalled(store_ref, &hits).await;

        let dated: Vec<(String, Timestamp)> = hits
            .iter()
            .enumerate()
            .map(|(n, h)| (format!("[{}]", n + 1), h.item.time()))
            .collect();
        let facts = temporal_facts(asked_at, &dated);
        let answer = if request.synthesize {
            match &self.models.synthesis {
                Some(model) => {
                    match synthesize(&meter, model.as_ref(), &request.query, &hits, &facts).await {
                        Ok(answer) => Some(answer),
                        Err(e) => {
                            degrade(&mut degraded, "synthesis", format!("failed: {e}"));
                            None
                        }
                    }
                }
                None => {
                    degrade(&mut degraded, "synthesis", "no synthesis model configured");
                    None
                }
            }
        } else {
            None
        };
        Ok(RecallResponse {
            hits,
            answer,
            temporal_facts: facts,
            analysis,
            terms,
            date_window: window,
            degraded,
            usage: meter.report(),
        })
    }

    /// Records that recall returned the memories among `hits` (the profile block ranks by
    /// it), at most once per [`RECALLED_AT_STEP_MILLIS`] per memory so that most recalls
    /// write nothing. A failure is logged: recall does not depend on it.
    async fn mark_recalled(&self, store: &dyn LongTermMemoryStore, hits: &[RecallHit]) {
        let now = self.clock.now();
        let due: Vec<String> = hits
            .iter()
            .filter_map(|h| match &h.item {
                RecallItem::Memory(m)
                    if m.recalled_at.is_none_or(|at| {
                        now.millis().saturating_sub(at.millis()) >= RECALLED_AT_STEP_MILLIS
                    }) =>
                {
                    Some(m.id.clone())
                }
                _ => None,
            })
            .collect();
        if due.is_empty() {
            return;
        }
        if let Err(e) = store.mark_recalled(&due, now).await {
            tracing::warn!(error = %e, memories = due.len(), "recording recalled memories failed");
        }
    }

    /// Stage 4: `hits` reordered by the reranker's scores and cut to the request's limit; on
    /// a failure, the fused order cut to the limit, with the reason in `degraded`.
    async fn rerank(
        &self,
        meter: &Meter,
        reranker: &dyn Reranker,
        request: &RecallRequest,
        mut hits: Vec<RecallHit>,
        degraded: &mut Vec<Degradation>,
    ) -> Vec<RecallHit> {
        if hits.is_empty() {
            return hits;
        }
        let texts: Vec<String> = hits.iter().map(|h| h.item.content().to_owned()).collect();
        match meter
            .rerank("rerank", reranker, &request.query, &texts)
            .await
        {
            Ok(scores) if scores.len() == hits.len() && scores.iter().all(|s| s.is_finite()) => {
                reranked(hits, &scores, request.limit)
            }
            Ok(scores) => {
                degrade(
                    degraded,
                    "rerank",
                    format!(
                        "{} gave {} scores for {} items ({} not finite); the fused order is kept",
                        reranker.model_id(),
                        scores.len(),
                        hits.len(),
                        scores.iter().filter(|s| !s.is_finite()).count()
                    ),
                );
                hits.truncate(request.limit);
                hits
            }
            Err(e) => {
                degrade(
                    degraded,
                    "rerank",
                    format!("failed: {e}; the fused order is kept"),
                );
                hits.truncate(request.limit);
                hits
            }
        }
    }

    /// Stages 1 and 2 of a recall: the query's analysis and embedding, then every channel.
    async fn gather(&self, profile: &str, request: &RecallRequest) -> Result<Gathered> {
        if request.limit > MAX_RECALL_LIMIT {
            return Err(MemoryError::invalid(format!(
                "recall limit {} is over the maximum of {MAX_RECALL_LIMIT}",
                request.limit
            )));
        }
        let store = self.backends.existing_store(profile).await?;
        let meter = self.meter(profile);
        let depth = self.config.channel_depth.max(request.limit);
        let vectors: Option<(Arc<dyn Embedder>, Arc<dyn VectorIndex>)> = match &self.embedder {
            Some(e) => Some((Arc::clone(e), self.backends.vector_index(profile).await?)),
            None => None,
        };

        // Stage 1, concurrently: the text index caught up, what failed jobs took away, the
        // vectors' models, the query's analysis and its embedding (each a round trip of its
        // own: side by side, a recall waits for the slowest, not for their sum).
        let analysis_future: OptionFuture<_> = self
            .models
            .query_analysis
            .as_deref()
            .map(|model| analyze(&meter, model, &request.query))
            .into();
        let embed_future: OptionFuture<_> = vectors
            .as_ref()
            .map(|(e, _)| {
                meter.embed_queries(
                    "embedding",
                    e.as_ref(),
                    std::slice::from_ref(&request.query),
                )
            })
            .into();
        let models_future: OptionFuture<_> = vectors
            .as_ref()
            .map(|(_, index)| vector_models(index.as_ref()))
            .into();
        let (text, failed, models, analysis, query_vector) = futures::future::join5(
            self.backends.text_index(profile),
            self.failed_job_degradations(profile),
            models_future,
            analysis_future,
            embed_future,
        )
        .await;
        let text = text?;
        let mut degraded = failed?;
        let models = models.transpose()?;
        if vectors.is_none() {
            degrade(
                &mut degraded,
                "vectors",
                "no embedder configured: the direct, HyDE, raw vector and dated channels did not run",
            );
        }
        let analysis = match analysis {
            Some(Ok(a)) => Some(a),
            Some(Err(e)) => {
                degrade(
                    &mut degraded,
                    "query_analysis",
                    format!("failed: {e}; used the query's own words"),
                );
                None
            }
            None => {
                degrade(
                    &mut degraded,
                    "query_analysis",
                    "no LLM configured: used the query's own words, no HyDE",
                );
                None
            }
        };
        let query_vector = match query_vector {
            Some(Ok(mut v)) if !v.is_empty() => Some(v.swap_remove(0)),
            Some(Ok(_)) => None,
            Some(Err(e)) => {
                degrade(
                    &mut degraded,
                    "vectors",
                    format!("embedding the query failed: {e}"),
                );
                None
            }
            None => None,
        };
        let mut vectors_usable = vectors.is_some() && query_vector.is_some();
        if let (Some((embedder, _)), Some(models)) = (&vectors, models) {
            for (ns, model) in models {
                if let Some(model) = model
                    && model != embedder.model_id()
                {
                    degrade(
                        &mut degraded,
                        "vectors",
                        format!(
                            "the {ns:?} vectors were made by {model:?}, the embedder is {:?}: run `memory profile reembed`",
                            embedder.model_id()
                        ),
                    );
                    vectors_usable = false;
                }
            }
        }
        let hyde_vector = match (&analysis, &vectors) {
            (
                Some(QueryAnalysis {
                    hyde: Some(hyde), ..
                }),
                Some((embedder, _)),
            ) if vectors_usable => {
                match meter
                    .embed("embedding", embedder.as_ref(), std::slice::from_ref(hyde))
                    .await
                {
                    Ok(mut v) if !v.is_empty() => Some(v.swap_remove(0)),
                    Ok(_) => None,
                    Err(e) => {
                        degrade(
                            &mut degraded,
                            "hyde_vector",
                            format!("embedding the HyDE statement failed: {e}"),
                        );
                        None
                    }
                }
            }
            _ => None,
        };

        // Stage 2: the channels, concurrently. A date the question names ("two weeks ago")
        // is resolved here, against when it is asked; when the dated channel searches it,
        // its words leave the full-text query.
        let asked_at = request.as_of.unwrap_or_else(|| self.clock.now());
        let window = query_window(&request.query, asked_at);
        let searched_window = window.as_ref().filter(|_| {
            self.config.weights.dated > 0.0 && vectors_usable && query_vector.is_some()
        });
        let mut terms = query_terms(&request.query);
        let mut keys = vec![normalize_key(&request.query)];
        if let Some(a) = &analysis {
            keys = a.keys.clone();
            for t in a.terms.iter().flat_map(|t| query_terms(t)) {
                if !terms.contains(&t) {
                    terms.push(t);
                }
            }
        }
        keys.retain(|k| !k.is_empty());
        if let Some(w) = searched_window.filter(|_| !self.config.text_keeps_date_words) {
            let undated: Vec<String> = terms
                .iter()
                .filter(|t| !w.words.contains(t))
                .cloned()
                .collect();
            if !undated.is_empty() {
                terms = undated;
            }
        }
        let text_query = terms.join(" ");
        let store_ref = store.as_ref();
        let text_ref = text.as_ref();
        let index = vectors
            .as_ref()
            .filter(|_| vectors_usable)
            .map(|(_, i)| Arc::clone(i));
        let index = index.as_deref();
        let scope = match request.metadata.clone() {
            Some(filter) => {
                let (memories, raw) = futures::future::try_join(
                    text_ref.count(namespaces::MEMORIES),
                    text_ref.count(namespaces::RAW),
                )
                .await?;
                Some(Scope::resolve(store_ref, filter, memories, raw).await?)
            }
            None => None,
        };
        let exact = match (&scope, index) {
            (Some(scope), Some(index)) => scope.exact_vectors(index).await?,
            _ => None,
        };
        let within = Within {
            store: store_ref,
            scope: scope.as_ref(),
            exact: exact.as_deref(),
        };
        let key_channel = async {
            let mut hits = Vec::new();
            for key in &keys {
                let current = store_ref
                    .current_by_keys(&[MemoryKind::Fact, MemoryKind::Instruction], key)
                    .await?;
                for m in current {
                    if !hits.iter().any(|(id, _): &(String, f64)| *id == m.id)
                        && scope
                            .as_ref()
                            .is_none_or(|s| s.admits_metadata(&m.metadata))
                    {
                        hits.push((m.id, 1.0));
                    }
                }
            }
            Result::Ok(hits)
        };
        let text_search = |namespace: &'static str, prefix: &'static str| {
            let text_query = text_query.as_str();
            move |k: usize| async move {
                let query = TextQuery::new(text_query, k).mode(SearchMode::AnyWords);
                Ok(text_ref
                    .search_ids(namespace, &query)
                    .await?
                    .into_iter()
                    .map(|h| (format!("{prefix}{}", h.id), h.score))
                    .collect::<Vec<_>>())
            }
        };
        let memory_fts = within.search(depth, false, text_search(namespaces::MEMORIES, ""));
        let raw_fts = async {
            match within.raw() {
                true => {
                    within
                        .search(depth, true, text_search(namespaces::RAW, RAW_PREFIX))
                        .await
                }
                false => Ok(Vec::new()),
            }
        };
        let direct = vector_channel(
            index,
            MEMORY_NAMESPACE,
            query_vector.as_ref(),
            depth,
            within,
        );
        let hyde = vector_channel(index, MEMORY_NAMESPACE, hyde_vector.as_ref(), depth, within);
        let raw_vector = vector_channel(index, RAW_NAMESPACE, query_vector.as_ref(), depth, within);
        let dated_vector =
            dated_channel(index, query_vector.as_ref(), searched_window, depth, within);
        let (text, vector) = join(
            futures::future::try_join3(key_channel, memory_fts, raw_fts),
            futures::future::try_join4(direct, hyde, raw_vector, dated_vector),
        )
        .await;
        let (key_hits, memory_hits, raw_hits) = text?;
        let (direct_hits, hyde_hits, raw_vector_hits, dated_hits) = vector?;

        let channels: ChannelHits = vec![
            ("key", key_hits),
            ("memory_fts", memory_hits),
            ("direct_vector", direct_hits),
            ("hyde_vector", hyde_hits),
            ("raw_fts", raw_hits),
            ("raw_vector", raw_vector_hits),
            ("dated", dated_hits),
        ];
        Ok(Gathered {
            store,
            scope,
            channels,
            meter,
            asked_at,
            analysis,
            terms,
            window,
            degraded,
        })
    }

    /// The conversational neighbours (recall ids) of each raw message in `ids` (bare ids),
    /// within the configured context radius.
    async fn neighbours(
        &self,
        store: &dyn LongTermMemoryStore,
        ids: &[String],
    ) -> Result<Vec<Vec<String>>> {
        Ok(store
            .raw_neighbors_each(ids, self.config.context_radius)
            .await?
            .into_iter()
            .map(|found| {
                found
                    .into_iter()
                    .map(|n| format!("{RAW_PREFIX}{}", n.id))
                    .collect()
            })
            .collect())
    }

    /// What `request`'s channels find, with every candidate's time and session and each raw
    /// candidate's neighbours: what [`rank`](super::ranking::rank) needs to rank them under
    /// any setting as a recall with `request.limit` would.
    pub(super) async fn recall_candidates(
        &self,
        profile: &str,
        request: &RecallRequest,
    ) -> Result<Candidates> {
        let gathered = self.gather(profile, request).await?;
        let store = gathered.store.as_ref();
        let scope = gathered.scope.as_ref();
        let ids: BTreeSet<&str> = gathered
            .channels
            .iter()
            .flat_map(|(_, hits)| hits.iter().map(|(id, _)| id.as_str()))
            .collect();
        let raw_ids: Vec<String> = ids
            .iter()
            .filter_map(|id| id.strip_prefix(RAW_PREFIX))
            .map(str::to_owned)
            .collect();
        let memory_ids: Vec<String> = ids
            .iter()
            .filter(|id| !id.starts_with(RAW_PREFIX))
            .map(|id| (*id).to_owned())
            .collect();
        let radius = match context_on(&self.config) {
            true => self.config.context_radius,
            false => 0,
        };
        let neighbours = match radius {
            0 => Vec::new(),
            _ => store.raw_neighbors_each(&raw_ids, radius).await?,
        };
        let (raw, memories) =
            futures::future::try_join(store.raw_by_ids(&raw_ids), store.get_memories(&memory_ids))
                .await?;
        let now = self.clock.now();
        let mut items = HashMap::new();
        for m in raw.iter().chain(neighbours.iter().flatten()) {
            if scope.is_none_or(|s| s.admits_metadata(&m.metadata)) {
                items.insert(
                    format!("{RAW_PREFIX}{}", m.id),
                    CandidateItem {
                        time: m.created_at,
                        session: Some(m.session_id.clone()),
                        survivor: None,
                    },
                );
            }
        }
        let survivors = survivors(store, &memories).await?;
        for m in memories {
            let id = m.id.clone();
            let Some(stood_for) = stands_for(m, &survivors) else {
                continue;
            };
            if recallable(&stood_for, now, scope) {
                let survivor = (stood_for.id != id).then(|| stood_for.id.clone());
                let item = RecallItem::Memory(stood_for);
                items.insert(
                    id,
                    CandidateItem {
                        time: item.time(),
                        session: item.session_id().map(str::to_owned),
                        survivor,
                    },
                );
            }
        }
        let neighbours = raw_ids
            .iter()
            .zip(neighbours)
            .map(|(id, found)| {
                (
                    format!("{RAW_PREFIX}{id}"),
                    found
                        .into_iter()
                        .map(|n| format!("{RAW_PREFIX}{}", n.id))
                        .collect(),
                )
            })
            .collect();
        Ok(Candidates {
            channels: gathered.channels,
            items,
            neighbours,
            radius,
        })
    }

    /// Loads the best `limit` items, skipping anything forgotten, expired (whether or not the
    /// sweep has reached it), superseded or purged, with equal scores ordered newest first. A
    /// memory merged into another stands for its survivor, which is returned once, at the
    /// best score either reached ([`super::survivors`]).
    async fn materialize(
        &self,
        store: &dyn LongTermMemoryStore,
        fused: Vec<super::fusion::Fused>,
        limit: usize,
        scope: Option<&Scope>,
    ) -> Result<Vec<RecallHit>> {
        let now = self.clock.now();
        let mut hits: Vec<RecallHit> = Vec::with_capacity(limit);
        let mut returned: HashSet<String> = HashSet::new();
        let mut pending = fused.into_iter().peekable();
        while hits.len() < limit && pending.peek().is_some() {
            let batch: Vec<_> = pending.by_ref().take(limit - hits.len()).collect();
            let raw_ids: Vec<String> = batch
                .iter()
                .filter_map(|f| f.id.strip_prefix(RAW_PREFIX).map(str::to_owned))
                .collect();
            let memory_ids: Vec<String> = batch
                .iter()
                .filter(|f| !f.id.starts_with(RAW_PREFIX))
                .map(|f| f.id.clone())
                .collect();
            let (raw, memories) = futures::future::try_join(
                store.raw_by_ids(&raw_ids),
                store.get_memories(&memory_ids),
            )
            .await?;
            let raw: HashMap<String, _> = raw.into_iter().map(|m| (m.id.clone(), m)).collect();
            let survivors = survivors(store, &memories).await?;
            let mut memories: HashMap<String, MemoryRecord> =
                memories.into_iter().map(|m| (m.id.clone(), m)).collect();
            for f in batch {
                let item = match f.id.strip_prefix(RAW_PREFIX) {
                    Some(id) => match raw.get(id) {
                        Some(m) if scope.is_none_or(|s| s.admits_metadata(&m.metadata)) => {
                            RecallItem::Raw {
                                id: m.id.clone(),
                                session_id: m.session_id.clone(),
                                role: m.role.clone(),
                                content: m.content.clone(),
                                created_at: m.created_at,
                            }
                        }
                        _ => continue,
                    },
                    None => match memories
                        .remove(&f.id)
                        .and_then(|m| stands_for(m, &survivors))
                    {
                        Some(m) if recallable(&m, now, scope) && returned.insert(m.id.clone()) => {
                            RecallItem::Memory(m)
                        }
                        _ => continue,
                    },
                };
                hits.push(RecallHit {
                    item,
                    score: f.score,
                    ranks: f.ranks,
                });
            }
        }
        sort_hits(&mut hits);
        Ok(hits)
    }
}
