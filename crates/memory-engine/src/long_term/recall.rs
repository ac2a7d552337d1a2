//! Recall: query analysis and the query embedding concurrently, then every channel
//! concurrently, weighted reciprocal-rank fusion, conversational context for raw hits, ties
//! broken by recency, date facts, and an optional synthesized answer.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use futures::future::{OptionFuture, join};
use memory_core::ports::{
    Embedder, LongTermMemoryStore, MemoryKind, MemoryRecord, TextQuery, VectorFilter, VectorIndex,
    VectorQuery, VectorRecord, namespaces,
};
use memory_core::{MemoryError, MetadataFilter, Result, SearchMode, Timestamp};
use serde::Serialize;

use super::accounting::UsageReport;
use super::core::Core;
use super::degradation::Degradation;
use super::fusion::{Channel, ChannelRank, rrf};
use super::hits::{RecallHit, RecallItem};
use super::keys::normalize_key;
use super::query::{QueryAnalysis, analyze, query_terms};
use super::query_dates::{DateWindow, query_window};
use super::recall_scope::{RAW_PREFIX, Scope, nearest};
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

/// Orders `hits` so conversations take turns: for the ordering, a hit's score is multiplied
/// by `1 - spread` once for every hit of its session placed before it. Scores themselves are
/// unchanged.
/// Adds the `recency` channel to materialized hits (newest first, `weight / (k + rank)`,
/// equal times in their current order), re-sorts them and keeps the best `limit`. A weight
/// of 0 or less leaves them as they are (cut to `limit`).
fn with_recency(mut hits: Vec<RecallHit>, weight: f64, k: f64, limit: usize) -> Vec<RecallHit> {
    if weight > 0.0 {
        let mut newest: Vec<usize> = (0..hits.len()).collect();
        newest.sort_by(|a, b| hits[*b].item.time().cmp(&hits[*a].item.time()));
        for (rank, i) in newest.into_iter().enumerate() {
            let hit = &mut hits[i];
            hit.score += weight / (k + (rank + 1) as f64);
            hit.ranks.push(ChannelRank {
                channel: "recency",
                rank: rank + 1,
                score: hit.item.time().0 as f64,
            });
        }
        hits.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| b.item.time().cmp(&a.item.time()))
        });
    }
    hits.truncate(limit);
    hits
}

fn spread_sessions(hits: Vec<RecallHit>, spread: f64) -> Vec<RecallHit> {
    if spread <= 0.0 || hits.len() < 3 {
        return hits;
    }
    let keep = (1.0 - spread).clamp(0.0, 1.0);
    let mut placed: HashMap<String, i32> = HashMap::new();
    let mut pending = hits;
    let mut out = Vec::with_capacity(pending.len());
    while !pending.is_empty() {
        let effective = |hit: &RecallHit| {
            let seen = hit
                .item
                .session_id()
                .and_then(|s| placed.get(s))
                .copied()
                .unwrap_or(0);
            hit.score * keep.powi(seen)
        };
        let best = pending
            .iter()
            .enumerate()
            .max_by(|(i, a), (j, b)| effective(a).total_cmp(&effective(b)).then(j.cmp(i)))
            .map_or(0, |(i, _)| i);
        let hit = pending.remove(best);
        if let Some(session) = hit.item.session_id() {
            *placed.entry(session.to_owned()).or_insert(0) += 1;
        }
        out.push(hit);
    }
    out
}

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
                meter.embed(
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
        if let Some(w) = searched_window {
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

        // Stage 3: fusion, context, recency.
        let w = self.config.weights;
        let channels: Vec<Channel> = vec![
            ("key", w.key, key_hits),
            ("memory_fts", w.memory_fts, memory_hits),
            ("direct_vector", w.direct_vector, direct_hits),
            ("hyde_vector", w.hyde_vector, hyde_hits),
            ("raw_fts", w.raw_fts, raw_hits),
            ("raw_vector", w.raw_vector, raw_vector_hits),
            ("dated", w.dated, dated_hits),
        ];
        let mut fused = rrf(self.config.rrf_k, &channels);
        self.add_context(store_ref, &mut fused, request.limit)
            .await?;
        // The recency channel re-ranks a pool larger than the limit, so that a newer item
        // just below it can rise into it.
        let pool = match w.recency > 0.0 {
            true => self.config.recency_pool.max(request.limit),
            false => request.limit,
        };
        let hits = self
            .materialize(store_ref, fused, pool, scope.as_ref())
            .await?;
        let hits = with_recency(hits, w.recency, self.config.rrf_k, request.limit);
        let hits = spread_sessions(hits, self.config.session_spread);

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

    /// Raw hits near the top lend part of their score to the messages around them in the
    /// same conversation (channel `context`): a question's answer is often the next turn.
    async fn add_context(
        &self,
        store: &dyn LongTermMemoryStore,
        fused: &mut Vec<super::fusion::Fused>,
        limit: usize,
    ) -> Result<()> {
        if self.config.context_radius == 0 || self.config.context_weight <= 0.0 {
            return Ok(());
        }
        // The raw hits near the top: their ids, and each one's rank and score beside it.
        let (ids, top): (Vec<String>, Vec<(usize, f64)>) = fused
            .iter()
            .take(limit)
            .enumerate()
            .filter_map(|(rank, f)| {
                f.id.strip_prefix(RAW_PREFIX)
                    .map(|id| (id.to_owned(), (rank + 1, f.score)))
            })
            .unzip();
        let neighbours = store
            .raw_neighbors_each(&ids, self.config.context_radius)
            .await?;
        let mut position: HashMap<String, usize> = fused
            .iter()
            .enumerate()
            .map(|(i, f)| (f.id.clone(), i))
            .collect();
        for ((rank, score), found) in top.iter().zip(neighbours) {
            for n in found {
                let key = format!("{RAW_PREFIX}{}", n.id);
                let i = *position.entry(key.clone()).or_insert_with(|| {
                    fused.push(super::fusion::Fused {
                        id: key,
                        score: 0.0,
                        ranks: Vec::new(),
                    });
                    fused.len() - 1
                });
                fused[i].score += self.config.context_weight * score;
                fused[i].ranks.push(ChannelRank {
                    channel: "context",
                    rank: *rank,
                    score: *score,
                });
            }
        }
        fused.sort_by(|a, b| b.score.total_cmp(&a.score));
        Ok(())
    }

    /// Loads the best `limit` items, skipping anything forgotten, expired (whether or not the
    /// sweep has reached it), superseded or purged, with equal scores ordered newest first.
    async fn materialize(
        &self,
        store: &dyn LongTermMemoryStore,
        fused: Vec<super::fusion::Fused>,
        limit: usize,
        scope: Option<&Scope>,
    ) -> Result<Vec<RecallHit>> {
        let now = self.clock.now();
        let mut hits: Vec<RecallHit> = Vec::with_capacity(limit);
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
                    None => match memories.remove(&f.id) {
                        Some(m)
                            if m.forgotten.is_none()
                                && !m.is_expired_at(now)
                                && m.superseded_by.is_none()
                                && scope.is_none_or(|s| s.admits_metadata(&m.metadata)) =>
                        {
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
        hits.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| b.item.time().cmp(&a.item.time()))
        });
        Ok(hits)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn hit(session: &str, score: f64) -> RecallHit {
        RecallHit {
            item: RecallItem::Raw {
                id: format!("{session}-{score}"),
                session_id: session.to_owned(),
                role: "user".into(),
                content: String::new(),
                created_at: Timestamp(0),
            },
            score,
            ranks: Vec::new(),
        }
    }

    fn said_at(id: &str, score: f64, at: i64) -> RecallHit {
        RecallHit {
            item: RecallItem::Raw {
                id: id.to_owned(),
                session_id: "s".into(),
                role: "user".into(),
                content: String::new(),
                created_at: Timestamp(at),
            },
            score,
            ranks: Vec::new(),
        }
    }

    #[test]
    fn recency_favours_the_newest_of_close_hits_and_is_off_at_zero() {
        let hits = vec![
            said_at("old", 0.50, 1_000),
            said_at("new", 0.48, 9_000),
            said_at("middle", 0.30, 5_000),
            said_at("far-below", 0.05, 10_000),
        ];
        let off = with_recency(hits.clone(), 0.0, 5.0, 3);
        assert_eq!(order(&off), ["old", "new", "middle"]);
        assert!(off.iter().all(|h| h.ranks.is_empty()));

        // Weight 1 with k = 5: the newest gains 1/6, the next 1/7, then 1/8 and 1/9; the
        // newest of all is too far below to rise into the limit.
        let on = with_recency(hits, 1.0, 5.0, 3);
        assert_eq!(order(&on), ["new", "old", "middle"]);
        let new = &on[0];
        assert!(
            (new.score - (0.48 + 1.0 / 7.0)).abs() < 1e-9,
            "{}",
            new.score
        );
        assert_eq!(new.ranks[0].channel, "recency");
        assert_eq!(new.ranks[0].rank, 2);
    }

    fn order(hits: &[RecallHit]) -> Vec<&str> {
        hits.iter().map(|h| h.item.id()).collect()
    }

    #[test]
    fn spreading_lets_other_sessions_take_turns_without_changing_scores() {
        let hits = vec![hit("a", 1.0), hit("a", 0.9), hit("a", 0.8), hit("b", 0.6)];
        let plain = spread_sessions(hits.clone(), 0.0);
        assert_eq!(order(&plain), ["a-1", "a-0.9", "a-0.8", "b-0.6"]);
        // 0.9 × 0.5 = 0.45 < 0.6: session b comes second.
        let spread = spread_sessions(hits, 0.5);
        assert_eq!(order(&spread), ["a-1", "b-0.6", "a-0.9", "a-0.8"]);
        assert_eq!(spread[1].score, 0.6);
    }
}
