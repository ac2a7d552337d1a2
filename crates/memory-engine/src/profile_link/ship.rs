//! Shipping a session's history into a profile: content-addressed ingest jobs, and a record
//! per session and profile of what was shipped, so nothing is shipped twice.
//!
//! A ship takes the messages not yet recorded as shipped, queues one ingest job whose id is
//! a hash of the profile, the session and those message ids (a retry, or a second server
//! shipping the same range, finds that job and queues nothing), then records the messages
//! with their raw-message addresses. A crash between the job and the record repeats the
//! same job id, so the retry only writes the record. The record also gives recall its
//! provenance: from a raw message's address back to the session's message id.

use std::collections::{BTreeMap, HashMap};

use memory_core::{MemoryError, Result, SessionId, UiMessage};
use serde::Serialize;
use sha2::{Digest, Sha256};
use tracing::{info, warn};

use super::ProfileLink;
use crate::long_term::{IngestJob, IngestMessage, JobStatus};

/// How many times a lost race on the shipped record is retried before `Conflict`.
const RECORD_RETRIES: usize = 16;

/// Which stored messages of a session to ship.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShipSelection {
    /// The path to this leaf (the latest leaf when `None`).
    pub leaf: Option<String>,
    /// Start the range at this message of the path (its root when `None`).
    pub from: Option<String>,
    /// End the range at this message of the path (the leaf when `None`).
    pub to: Option<String>,
}

/// What a ship did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShipReport {
    /// The profile shipped into.
    pub profile: String,
    /// The session shipped from.
    pub session: SessionId,
    /// Messages this ship sent (their text, with their times and the session id).
    pub shipped: usize,
    /// Messages skipped because an earlier ship sent them.
    pub already_shipped: usize,
    /// The ingest job holding them (`None` when there was nothing new to ship).
    pub job: Option<IngestJob>,
    /// False when the job existed already (a retry, or another server shipped the same).
    pub queued: bool,
}

/// The key of what `session` shipped into `profile`. A profile name holds no `:`, so
/// listing `session:<id>:shipped:` and keeping the keys whose rest is a profile name finds
/// this session's records and never a longer session id's.
fn record_key(session: &SessionId, profile: &str) -> String {
    format!("{}{profile}", record_prefix(session))
}

fn record_prefix(session: &SessionId) -> String {
    format!("session:{session}:shipped:")
}

/// The job id of shipping `ids` of `session` into `profile`: a content address.
fn job_id(profile: &str, session: &SessionId, ids: &[String]) -> String {
    let mut hash = Sha256::new();
    for part in [profile, session.as_str()]
        .into_iter()
        .chain(ids.iter().map(String::as_str))
    {
        hash.update((part.len() as u64).to_be_bytes());
        hash.update(part.as_bytes());
    }
    let digest = hash.finalize();
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("ship-{hex}")
}

/// A message as it is ingested: its text and its own time. A time the message carries but
/// that cannot be read is dropped (the ingest time stands in), so one odd message never
/// stops a compaction's history from reaching the profile.
fn ingest_message(message: &UiMessage) -> IngestMessage {
    IngestMessage::from_ui_message(message).unwrap_or_else(|e| {
        warn!(message = %message.id, error = %e, "unreadable message time; shipped with the ingest time");
        IngestMessage::new(message.role.as_str(), message.text())
    })
}

impl ProfileLink {
    /// What `session` shipped into `profile`: session message id → raw-message address.
    async fn shipped(&self, key: &str) -> Result<(Option<String>, BTreeMap<String, String>)> {
        let Some(raw) = self.kv.get(key).await? else {
            return Ok((None, BTreeMap::new()));
        };
        let map = serde_json::from_str(&raw)
            .map_err(|e| MemoryError::serialization(format!("{key}: {e}")))?;
        Ok((Some(raw), map))
    }

    /// Adds `pairs` to the record under `key` (compare-and-set, so concurrent ships of one
    /// session lose nothing).
    /// `read` is the record as the caller last read it (`None`: read it now); a lost race
    /// reads it again.
    async fn record(
        &self,
        key: &str,
        mut read: Option<(Option<String>, BTreeMap<String, String>)>,
        pairs: &[(String, String)],
    ) -> Result<()> {
        for _ in 0..RECORD_RETRIES {
            let (before, mut map) = match read.take() {
                Some(read) => read,
                None => self.shipped(key).await?,
            };
            for (message, raw) in pairs {
                map.insert(message.clone(), raw.clone());
            }
            let value = serde_json::to_string(&map)?;
            if self.kv.compare_and_set(key, before, &value).await? {
                return Ok(());
            }
        }
        Err(MemoryError::Conflict {
            message: format!("{key}: too many concurrent ships of one session"),
        })
    }

    /// Ships `messages` of `session` into `profile`: the ones not shipped before, with text,
    /// as one content-addressed ingest job (started by the runner when one is set). The
    /// job's raw messages are stored, searchable, before this returns; extraction runs in
    /// the job.
    pub async fn ship_messages(
        &self,
        profile: &str,
        session: &SessionId,
        messages: &[UiMessage],
    ) -> Result<ShipReport> {
        memory_core::validate_profile_name(profile)?;
        let key = record_key(session, profile);
        let read = self.shipped(&key).await?;
        let shipped = &read.1;
        let mut ids = Vec::new();
        let mut fresh = Vec::new();
        let mut already_shipped = 0;
        for message in messages {
            if shipped.contains_key(&message.id) {
                already_shipped += 1;
                continue;
            }
            let ingest = ingest_message(message);
            if ingest.content.trim().is_empty() {
                continue;
            }
            ids.push(message.id.clone());
            fresh.push(ingest);
        }
        let mut report = ShipReport {
            profile: profile.to_owned(),
            session: session.clone(),
            shipped: fresh.len(),
            already_shipped,
            job: None,
            queued: false,
        };
        if fresh.is_empty() {
            return Ok(report);
        }
        let id = job_id(profile, session, &ids);
        let (job, queued) = self
            .memory
            .enqueue_ingest_as(profile, session.as_str(), fresh.clone(), id)
            .await?;
        // The job's messages are the addressed ones, in order; a job found done has dropped
        // them, and the first-choice addresses stand in.
        let raw_ids: Vec<String> = if job.messages.len() == ids.len() {
            job.messages.iter().map(|m| m.id.clone()).collect()
        } else {
            self.memory
                .raw_messages(session.as_str(), fresh)?
                .into_iter()
                .map(|m| m.id)
                .collect()
        };
        let pairs: Vec<(String, String)> = ids.into_iter().zip(raw_ids).collect();
        self.record(&key, Some(read), &pairs).await?;
        if queued {
            info!(%session, profile, job = %job.id, messages = pairs.len(), "history shipped");
        }
        // A retry after a crash finds its job still queued: start it too.
        if queued || job.status == JobStatus::Queued {
            self.start(profile, &job.id);
        }
        report.job = Some(job);
        report.queued = queued;
        Ok(report)
    }

    /// Ships a compacted range when `session` is bound (`None` when it is not).
    pub async fn ship_compacted(
        &self,
        session: &SessionId,
        range: &[UiMessage],
    ) -> Result<Option<ShipReport>> {
        match self.profile_of(session).await? {
            Some(profile) => Ok(Some(self.ship_messages(&profile, session, range).await?)),
            None => Ok(None),
        }
    }

    /// The stored messages `selection` names: the raw path to its leaf, cut to its range.
    pub async fn select(
        &self,
        session: &SessionId,
        selection: &ShipSelection,
    ) -> Result<Vec<UiMessage>> {
        let path = self.store.history(session, selection.leaf.clone()).await?;
        let position = |id: &Option<String>, default: usize| -> Result<usize> {
            match id {
                None => Ok(default),
                Some(id) => path.iter().position(|m| &m.id == id).ok_or_else(|| {
                    MemoryError::invalid(format!(
                        "message {id:?} is not on the path of session {session} that was asked for"
                    ))
                }),
            }
        };
        let last = path.len().saturating_sub(1);
        let from = position(&selection.from, 0)?;
        let to = position(&selection.to, last)?;
        if path.is_empty() {
            return Ok(path);
        }
        if from > to {
            return Err(MemoryError::invalid(format!(
                "the range starts at {:?}, after its end {:?}",
                selection.from, selection.to
            )));
        }
        Ok(path[from..=to].to_vec())
    }

    /// Ships the messages `selection` names into `profile`, whether or not the session is
    /// bound to it.
    pub async fn ship_selection(
        &self,
        profile: &str,
        session: &SessionId,
        selection: &ShipSelection,
    ) -> Result<ShipReport> {
        let messages = self.select(session, selection).await?;
        self.ship_messages(profile, session, &messages).await
    }

    /// Session message ids of raw-message addresses that `session` shipped into `profile`
    /// (an address with no record is absent: shipped by an older version, sent over the
    /// ingest API, or its session was deleted).
    pub async fn message_ids(
        &self,
        profile: &str,
        session: &SessionId,
    ) -> Result<HashMap<String, String>> {
        let (_, shipped) = self.shipped(&record_key(session, profile)).await?;
        Ok(shipped.into_iter().map(|(m, raw)| (raw, m)).collect())
    }

    /// Removes what `session` shipped where: the link from the profile's raw messages back
    /// to the session's message ids is cut. The profile's memories and raw messages stay
    /// (a purge with sources erases them).
    pub(crate) async fn forget_session(&self, session: &SessionId) -> Result<()> {
        for (key, _) in self.records_of(session).await? {
            self.kv.delete(&key).await?;
        }
        Ok(())
    }

    /// The keys of `session`'s shipped records, with the profile each one is for.
    async fn records_of(&self, session: &SessionId) -> Result<Vec<(String, String)>> {
        let prefix = record_prefix(session);
        Ok(self
            .kv
            .keys(&prefix)
            .await?
            .into_iter()
            .filter_map(|key| {
                let profile = key.strip_prefix(&prefix)?.to_owned();
                memory_core::validate_profile_name(&profile)
                    .is_ok()
                    .then_some((key, profile))
            })
            .collect())
    }

    /// Records the messages `ids` of `fork` as shipped wherever `source` shipped them (a
    /// fork copies its source's path with the same message ids).
    pub(crate) async fn inherit_shipped(
        &self,
        source: &SessionId,
        fork: &SessionId,
        ids: &[String],
    ) -> Result<()> {
        for (key, profile) in self.records_of(source).await? {
            let (_, shipped) = self.shipped(&key).await?;
            let pairs: Vec<(String, String)> = ids
                .iter()
                .filter_map(|id| shipped.get(id).map(|raw| (id.clone(), raw.clone())))
                .collect();
            if !pairs.is_empty() {
                self.record(&record_key(fork, &profile), None, &pairs)
                    .await?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn the_job_id_is_a_content_address_of_the_work() {
        let s = SessionId::new("s1").unwrap();
        let a = job_id("p", &s, &["m1".into(), "m2".into()]);
        assert_eq!(a, job_id("p", &s, &["m1".into(), "m2".into()]));
        assert_ne!(a, job_id("p", &s, &["m1".into()]));
        assert_ne!(a, job_id("q", &s, &["m1".into(), "m2".into()]));
        // Length prefixes: moving a boundary changes the address.
        assert_ne!(
            job_id("p", &s, &["m1m".into(), "2".into()]),
            job_id("p", &s, &["m1".into(), "m2".into()])
        );
        assert!(a.starts_with("ship-") && a.len() == 5 + 32);
    }

    #[test]
    fn a_record_key_never_belongs_to_a_longer_session_id() {
        let short = SessionId::new("a").unwrap();
        let long = SessionId::new("a:shipped:b").unwrap();
        let key = record_key(&long, "p");
        let rest = &key[record_prefix(&short).len()..];
        assert!(key.starts_with(&record_prefix(&short)));
        assert!(memory_core::validate_profile_name(rest).is_err());
    }
}
