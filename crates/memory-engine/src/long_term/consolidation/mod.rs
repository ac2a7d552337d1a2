//! Consolidation: memories of a profile that say the same thing, merged into one.
//!
//! A run reads the profile's current memories, plans groups LLM-free ([`plan`], by the rules
//! of [`similarity`]), has an LLM confirm each group when one is configured ([`confirm`]),
//! and writes each group as one [`MemoryMerge`]: the survivor keeps the union of the
//! sources, the others are superseded by it with the evidence as the reason. Nothing is
//! deleted; forgetting or purging a survivor reaches what it absorbed
//! ([`Core::forget`](super::core::Core), [`Core::purge`](super::core::Core)). A dry run plans
//! and reports without writing. A run is a job of kind [`CONSOLIDATE_KIND`] on the queue
//! (its lease renewed as it writes), and it records when it ran, so that the next one is due
//! after [`LongTermConfig::consolidate_after`](super::LongTermConfig) new memories.

mod confirm;
mod contradictions;
mod plan;
mod similarity;

use memory_core::ports::{
    JobLease, MemoryFilter, MemoryKind, MemoryMerge, MemoryRecord, MergeNote, NewJob,
};
use memory_core::{MemoryError, Result, Timestamp};
use serde::{Deserialize, Serialize};

pub(super) use contradictions::CONTRADICTIONS_PREFIX;
pub use contradictions::{Contradiction, ContradictionMember};
pub use plan::SimilarityThresholds;

use super::accounting::UsageReport;
use super::core::Core;
use super::degradation::Degradation;
use super::memories::MAX_LIST_PAGE;
use super::vectorize::MEMORY_NAMESPACE;
use plan::{Evidence, Group};

/// The job kind of a consolidation run.
pub const CONSOLIDATE_KIND: &str = "consolidate";

/// The job's only stage.
const STAGE: &str = "consolidating";

/// Where the time of a profile's last consolidation run is kept in the key-value store.
pub(super) const LAST_RUN_PREFIX: &str = "consolidation/last-run/";

/// Vectors read per round trip.
const VECTOR_BATCH: usize = 512;

/// Merges written at once, between two heartbeats of the job's lease.
const MERGES_IN_FLIGHT: usize = 32;

/// One memory of a planned merge, with the evidence that it says what the survivor says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MergeMember {
    /// The memory.
    pub id: String,
    /// Its text.
    pub content: String,
    /// Its weighted word overlap with the survivor (absent for the survivor).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlap: Option<f32>,
    /// The cosine of its vector and the survivor's, when both have one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cosine: Option<f32>,
}

/// One group: what stays, what is merged into it, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedMerge {
    /// The kind all of them share.
    pub kind: MemoryKind,
    /// The memory that stays current.
    pub survivor: MergeMember,
    /// The memories merged into it.
    pub absorbed: Vec<MergeMember>,
    /// The reason each absorbed memory carries.
    pub reason: String,
}

/// What one consolidation run planned and (unless a dry run) wrote.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ConsolidationReport {
    /// The run's job (none for a dry run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
    /// Planned only; nothing was written.
    pub dry_run: bool,
    /// Current memories read.
    pub considered: u64,
    /// The profile held more current memories than a run reads (the oldest were read).
    pub truncated: bool,
    /// Pairs of memories judged.
    pub pairs_judged: u64,
    /// The merges (written, or planned in a dry run).
    pub merges: Vec<PlannedMerge>,
    /// Memories merged into others (or that would be, in a dry run).
    pub absorbed: u64,
    /// Groups the LLM said do not say the same thing (not merged).
    pub rejected: Vec<PlannedMerge>,
    /// Planned merges not written because a memory changed meanwhile (planned again by the
    /// next run).
    pub stale: u64,
    /// Contradictions the verification model flagged in this run (a run without an LLM, or
    /// a dry run, flags none); all those still current: `contradictions`.
    #[serde(default)]
    pub contradictions: Vec<Contradiction>,
    /// What did not run, and why.
    pub degraded: Vec<Degradation>,
    /// LLM usage (confirmation, contradictions).
    pub usage: UsageReport,
}

/// A run's plan: the report of a dry run, and the pairs to ask about contradictions.
struct Plan {
    report: ConsolidationReport,
    contradiction_candidates: Vec<(MemoryRecord, MemoryRecord)>,
}

/// When a profile was last consolidated and how many memories it had then.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
struct LastRun {
    at: Timestamp,
}

impl Core {
    /// Plans the profile's merges and, unless `dry_run`, writes them as a job.
    pub(super) async fn consolidate(
        &self,
        profile: &str,
        dry_run: bool,
    ) -> Result<ConsolidationReport> {
        memory_core::validate_profile_name(profile)?;
        if !self.backends.records.exists(profile).await? {
            return Err(MemoryError::not_found("profile", profile));
        }
        let started = self.clock.now();
        if dry_run {
            return Ok(self.plan_merges(profile).await?.report);
        }
        let id = format!("consolidate-{profile}-{}", uuid::Uuid::new_v4().simple());
        let job = NewJob {
            id: id.clone(),
            kind: CONSOLIDATE_KIND.to_owned(),
            profile: profile.to_owned(),
            stage: STAGE.to_owned(),
            body: serde_json::json!({}),
        };
        let lease = self.start_fresh_job(job).await?;
        let mut report = ConsolidationReport {
            job_id: Some(id.clone()),
            ..ConsolidationReport::default()
        };
        match self.consolidate_under(profile, lease, &mut report).await {
            Ok(lease) => {
                let body = summary(&report);
                self.backends
                    .jobs
                    .complete(&lease, STAGE, body, self.clock.now())
                    .await?;
                let last = serde_json::to_string(&LastRun { at: started })?;
                self.backends
                    .outbox
                    .set(&format!("{LAST_RUN_PREFIX}{profile}"), &last)
                    .await?;
                tracing::info!(
                    profile,
                    job = %id,
                    considered = report.considered,
                    merges = report.merges.len(),
                    absorbed = report.absorbed,
                    "consolidation"
                );
                Ok(report)
            }
            Err((lease, e)) => {
                let mut body = summary(&report);
                body["error"] = serde_json::Value::String(e.to_string());
                self.record_job_failure(&lease, STAGE, body).await;
                Err(e)
            }
        }
    }

    /// Runs [`Self::consolidate`] when the profile has recorded at least
    /// `consolidate_after` memories since its last run (never when that is 0); `None` when
    /// it was not due or jobs are stopping.
    pub(super) async fn consolidate_if_due(
        &self,
        profile: &str,
    ) -> Result<Option<ConsolidationReport>> {
        let due_after = self.config.consolidate_after;
        if due_after == 0 || self.is_stopping() {
            return Ok(None);
        }
        let last = self.last_run(profile).await?;
        if !self.backends.records.exists(profile).await? {
            return Ok(None);
        }
        let filter = MemoryFilter {
            from: last.map(|l| l.at),
            ..MemoryFilter::default()
        };
        // The records alone: a profile with nothing due costs no open text index.
        let store = self.backends.records.open(profile).await?;
        let recent = store.list(&filter, None, due_after).await?;
        if recent.memories.len() < due_after {
            return Ok(None);
        }
        let report = self.consolidate(profile, false).await?;
        // With a synthesis model, the digest follows what changed (when enough did).
        if self.models.synthesis.is_some()
            && let Err(e) = self.refresh_digest(profile, false).await
        {
            tracing::warn!(profile, error = %e, "writing the profile digest failed; the next run tries again");
        }
        Ok(Some(report))
    }

    /// When the profile was last consolidated, if ever.
    async fn last_run(&self, profile: &str) -> Result<Option<LastRun>> {
        match self
            .backends
            .outbox
            .get(&format!("{LAST_RUN_PREFIX}{profile}"))
            .await?
        {
            Some(text) => Ok(Some(serde_json::from_str(&text)?)),
            None => Ok(None),
        }
    }

    /// The plan of a run over the profile as it is now: a dry run's report.
    async fn plan_merges(&self, profile: &str) -> Result<Plan> {
        let store = self.backends.existing_store(profile).await?;
        let limit = self.config.consolidation_max_memories;
        let mut memories: Vec<MemoryRecord> = Vec::new();
        let mut cursor = None;
        let mut truncated = false;
        let filter = MemoryFilter {
            current_at: Some(self.clock.now()),
            ..MemoryFilter::default()
        };
        loop {
            let page = store
                .list(&filter, cursor, MAX_LIST_PAGE.min(limit.max(1)))
                .await?;
            memories.extend(page.memories);
            match page.next_cursor {
                Some(next) if memories.len() < limit => cursor = Some(next),
                Some(_) => {
                    truncated = true;
                    break;
                }
                None => break,
            }
        }
        memories.truncate(limit);
        let stemmer = rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English);
        let mut vocabulary = similarity::Vocabulary::default();
        let mut features: Vec<similarity::Features> = memories
            .iter()
            .map(|m| similarity::features(&m.content, &stemmer, &mut vocabulary))
            .collect();
        similarity::share_names(&mut features);
        let weights = vocabulary.weights(memories.len());
        let thresholds = &self.config.similarity;
        let pairs = plan::candidate_pairs(&features, &weights, thresholds.least_overlap);
        let mut degraded = Vec::new();
        let vectors = self
            .vectors_of(profile, &memories, &pairs, &mut degraded)
            .await?;
        let pairs_judged = pairs.len() as u64;
        let words = plan::WordStatistics {
            weights: &weights,
            document_frequency: &vocabulary.document_frequency,
        };
        let (groups, same) =
            plan::groups(&memories, &features, &vectors, &words, thresholds, &pairs);
        // Contradictions are asked of the verification model: without one, none are sought.
        let contradiction_candidates = if self.models.verification.is_some() {
            let absorbed: std::collections::HashSet<usize> = groups
                .iter()
                .flat_map(|g| g.members[1..].iter().copied())
                .collect();
            let new_since = self.last_run(profile).await?.map(|l| l.at);
            contradictions::candidates(
                &contradictions::CandidateInput {
                    memories: &memories,
                    features: &features,
                    words: &words,
                    thresholds,
                    pairs: &pairs,
                    absorbed: &absorbed,
                    same: &same,
                    new_since,
                },
                contradictions::PAIRS_PER_RUN,
            )
            .into_iter()
            .map(|(i, j)| {
                let (a, b) = (&memories[i], &memories[j]);
                if (a.recorded_at, &a.id) <= (b.recorded_at, &b.id) {
                    (a.clone(), b.clone())
                } else {
                    (b.clone(), a.clone())
                }
            })
            .collect()
        } else {
            Vec::new()
        };
        let planned: Vec<PlannedMerge> = groups.iter().map(|g| planned(&memories, g)).collect();
        let meter = self.meter(profile);
        let (merges, rejected) = match &self.models.verification {
            Some(model) => match confirm::confirm(&meter, model.as_ref(), planned.clone()).await {
                Ok(split) => split,
                Err(e) => {
                    degraded.push(Degradation {
                        feature: "consolidation_confirmation".into(),
                        reason: format!("failed: {e}; nothing is merged until it runs"),
                    });
                    (Vec::new(), Vec::new())
                }
            },
            None => {
                degraded.push(Degradation {
                    feature: "consolidation_confirmation".into(),
                    reason: "no LLM configured: groups merged on the LLM-free rules alone".into(),
                });
                (planned, Vec::new())
            }
        };
        let report = ConsolidationReport {
            job_id: None,
            dry_run: true,
            considered: memories.len() as u64,
            truncated,
            pairs_judged,
            absorbed: merges.iter().map(|m| m.absorbed.len() as u64).sum(),
            merges,
            rejected,
            stale: 0,
            contradictions: Vec::new(),
            degraded,
            usage: meter.report(),
        };
        Ok(Plan {
            report,
            contradiction_candidates,
        })
    }

    /// The stored vectors of the memories in `pairs` (`None` for the others, and for all
    /// when the profile has no vectors: the rules then ask more of the words).
    async fn vectors_of(
        &self,
        profile: &str,
        memories: &[MemoryRecord],
        pairs: &[(usize, usize)],
        degraded: &mut Vec<Degradation>,
    ) -> Result<Vec<Option<Vec<f32>>>> {
        let mut out: Vec<Option<Vec<f32>>> = vec![None; memories.len()];
        let mut wanted: Vec<usize> = pairs.iter().flat_map(|&(i, j)| [i, j]).collect();
        wanted.sort_unstable();
        wanted.dedup();
        if wanted.is_empty() {
            return Ok(out);
        }
        let index = self.backends.vector_index(profile).await?;
        if index.model(MEMORY_NAMESPACE).await?.is_none() {
            degraded.push(Degradation {
                feature: "consolidation_vectors".into(),
                reason:
                    "the profile's memories have no vectors: pairs are judged by their words alone"
                        .into(),
            });
            return Ok(out);
        }
        let position: std::collections::HashMap<&str, usize> = memories
            .iter()
            .enumerate()
            .map(|(i, m)| (m.id.as_str(), i))
            .collect();
        for batch in wanted.chunks(VECTOR_BATCH) {
            let ids: Vec<String> = batch.iter().map(|&i| memories[i].id.clone()).collect();
            for record in index.get(MEMORY_NAMESPACE, &ids).await? {
                if let Some(&i) = position.get(record.id.as_str()) {
                    out[i] = Some(record.vector);
                }
            }
        }
        Ok(out)
    }

    /// The run's work under `lease`: the plan, then each merge written, the lease renewed as
    /// it goes. Returns the lease to complete the job with.
    async fn consolidate_under(
        &self,
        profile: &str,
        mut lease: JobLease,
        report: &mut ConsolidationReport,
    ) -> std::result::Result<JobLease, (JobLease, MemoryError)> {
        let Plan {
            report: plan,
            contradiction_candidates,
        } = match self.plan_merges(profile).await {
            Ok(plan) => plan,
            Err(e) => return Err((lease, e)),
        };
        *report = ConsolidationReport {
            job_id: report.job_id.clone(),
            dry_run: false,
            merges: Vec::new(),
            absorbed: 0,
            ..plan.clone()
        };
        let store = match self.backends.existing_store(profile).await {
            Ok(store) => store,
            Err(e) => return Err((lease, e)),
        };
        let now = self.clock.now();
        let store = store.as_ref();
        // Several merges at once, so their index updates share the text index's commits (one
        // at a time would pay a commit, and on a profile index a segment rewrite, each). A
        // chunk ends before the lease is renewed: a merge is never left holding a connection
        // while something else waits for one.
        let mut merges = plan.merges.into_iter().peekable();
        while merges.peek().is_some() {
            if self.is_stopping() {
                break;
            }
            let chunk: Vec<PlannedMerge> = merges.by_ref().take(MERGES_IN_FLIGHT).collect();
            let written = futures::future::join_all(chunk.into_iter().map(|merge| async move {
                let write = MemoryMerge {
                    survivor: merge.survivor.id.clone(),
                    absorbed: merge.absorbed.iter().map(|m| m.id.clone()).collect(),
                    note: MergeNote {
                        reason: merge.reason.clone(),
                        at: now,
                    },
                };
                let result = store.merge(&write).await;
                (merge, result)
            }))
            .await;
            for (merge, result) in written {
                match result {
                    Ok(()) => {
                        report.absorbed += merge.absorbed.len() as u64;
                        report.merges.push(merge);
                    }
                    Err(MemoryError::Conflict { .. } | MemoryError::NotFound { .. }) => {
                        report.stale += 1;
                    }
                    Err(e) => return Err((lease, e)),
                }
            }
            lease = match self
                .backends
                .jobs
                .heartbeat(&lease, self.config.job_lease_millis, self.clock.now())
                .await
            {
                Ok(renewed) => renewed,
                Err(e) => return Err((lease, e)),
            };
        }
        if let Err(e) = self
            .check_contradictions(profile, contradiction_candidates, report)
            .await
        {
            return Err((lease, e));
        }
        Ok(lease)
    }

    /// Asks the verification model which `candidates` contradict and keeps those it flags;
    /// without a model, or when the call fails, says so in `degraded`.
    async fn check_contradictions(
        &self,
        profile: &str,
        candidates: Vec<(MemoryRecord, MemoryRecord)>,
        report: &mut ConsolidationReport,
    ) -> Result<()> {
        let Some(model) = &self.models.verification else {
            report.degraded.push(Degradation {
                feature: "contradictions".into(),
                reason: "no LLM configured: contradictions are not looked for".into(),
            });
            return Ok(());
        };
        // A memory merged into another in this run is no longer current.
        let merged: std::collections::HashSet<&str> = report
            .merges
            .iter()
            .flat_map(|m| m.absorbed.iter().map(|a| a.id.as_str()))
            .collect();
        let pairs: Vec<(&MemoryRecord, &MemoryRecord)> = candidates
            .iter()
            .filter(|(a, b)| !merged.contains(a.id.as_str()) && !merged.contains(b.id.as_str()))
            .map(|(a, b)| (a, b))
            .collect();
        if pairs.is_empty() {
            return Ok(());
        }
        let meter = self.meter(profile);
        match contradictions::ask(&meter, model.as_ref(), &pairs).await {
            Ok(flagged) => {
                let now = self.clock.now();
                let member = |m: &MemoryRecord| ContradictionMember {
                    id: m.id.clone(),
                    content: m.content.clone(),
                };
                report.contradictions = flagged
                    .into_iter()
                    .filter_map(|(n, reason)| pairs.get(n).map(|p| (p, reason)))
                    .map(|((a, b), reason)| Contradiction {
                        first: member(a),
                        second: member(b),
                        reason,
                        flagged_at: now,
                    })
                    .collect();
                self.flag_contradictions(profile, &report.contradictions)
                    .await?;
            }
            Err(e) => report.degraded.push(Degradation {
                feature: "contradictions".into(),
                reason: format!("failed: {e}; this run flags none"),
            }),
        }
        report.usage.merge(&meter.report());
        Ok(())
    }
}

/// The job's body: the counts, not the texts.
fn summary(report: &ConsolidationReport) -> serde_json::Value {
    serde_json::json!({
        "considered": report.considered,
        "merges": report.merges.len(),
        "absorbed": report.absorbed,
        "rejected": report.rejected.len(),
        "stale": report.stale,
        "contradictions": report.contradictions.len(),
    })
}

/// A planned group as the report shows it, with its reason.
fn planned(memories: &[MemoryRecord], group: &Group) -> PlannedMerge {
    let member = |i: usize, evidence: Option<&Evidence>| MergeMember {
        id: memories[i].id.clone(),
        content: memories[i].content.clone(),
        overlap: evidence.map(|e| e.overlap),
        cosine: evidence.and_then(|e| e.cosine),
    };
    let survivor = group.members[0];
    let absorbed: Vec<MergeMember> = group.members[1..]
        .iter()
        .zip(&group.evidence)
        .map(|(&i, e)| member(i, Some(e)))
        .collect();
    PlannedMerge {
        kind: memories[survivor].kind,
        survivor: member(survivor, None),
        absorbed,
        reason: reason(&group.evidence),
    }
}

/// The merge note: the weakest evidence of the group, in words.
fn reason(evidence: &[Evidence]) -> String {
    if evidence.iter().all(|e| e.same_words) {
        return "consolidation: the same words once case and punctuation are set aside".into();
    }
    let weakest = |value: fn(&Evidence) -> Option<f32>| {
        evidence
            .iter()
            .filter(|e| !e.same_words)
            .filter_map(value)
            .fold(f32::INFINITY, f32::min)
    };
    let overlap = weakest(|e| Some(e.overlap));
    let mut note =
        format!("consolidation: says the same thing (content words in common {overlap:.2}");
    let commoner = weakest(|e| Some(e.commoner_by));
    if commoner.is_finite() {
        note.push_str(&format!(
            ", what only one says at least {commoner:.1} times as common as the rarest word they share"
        ));
    } else {
        note.push_str(", nothing said by only one");
    }
    if evidence.iter().all(|e| e.same_words || e.cosine.is_some()) {
        let cosine = weakest(|e| e.cosine);
        note.push_str(&format!(", vector similarity {cosine:.2}"));
    }
    note.push_str(", nothing that tells them apart)");
    note
}
