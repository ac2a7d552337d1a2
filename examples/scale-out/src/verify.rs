//! The checks after the run: every acknowledged write present exactly once, every job done
//! and run once.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::cluster::Error;
use crate::load::{Ledger, PROFILE, SESSIONS};

/// What the checks found.
#[derive(Debug, Default)]
pub struct Findings {
    /// Messages in the sessions' exports.
    pub messages_stored: usize,
    /// Current memories of the profile.
    pub memories_current: usize,
    /// Jobs of the profile.
    pub jobs: usize,
    /// What is wrong, one line each.
    pub problems: Vec<String>,
}

async fn get(http: &reqwest::Client, url: String) -> Result<reqwest::Response, Error> {
    let response = http.get(&url).send().await?;
    if !response.status().is_success() {
        return Err(format!("GET {url}: {}", response.status()).into());
    }
    Ok(response)
}

/// Waits until no job of the profile is queued or running; returns them all.
pub async fn settled_jobs(base: &str, within: Duration) -> Result<Vec<Value>, Error> {
    let http = reqwest::Client::new();
    let started = Instant::now();
    loop {
        let body: Value = get(&http, format!("{base}/v1/profiles/{PROFILE}/jobs"))
            .await?
            .json()
            .await?;
        let jobs = body["jobs"].as_array().cloned().unwrap_or_default();
        let open: Vec<&Value> = jobs
            .iter()
            .filter(|j| {
                matches!(
                    j["status"].as_str(),
                    Some(
                        "queued"
                            | "running"
                            | "extracting"
                            | "verifying"
                            | "storing"
                            | "vectorizing"
                    )
                )
            })
            .collect();
        if open.is_empty() {
            return Ok(jobs);
        }
        if started.elapsed() > within {
            let first: Vec<String> = open.iter().take(5).map(|j| j.to_string()).collect();
            return Err(format!(
                "{} job(s) still open after {within:?}: {}",
                open.len(),
                first.join("; ")
            )
            .into());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Checks the ledger against what the servers hold (read through `base`); `worker_ran`,
/// when the jobs ran on one worker, is how many job runs it reported.
pub async fn check(
    base: &str,
    ledger: &Ledger,
    jobs: &[Value],
    worker_ran: Option<usize>,
) -> Result<Findings, Error> {
    let http = reqwest::Client::new();
    let mut findings = Findings::default();

    let mut seen: HashMap<(String, String), usize> = HashMap::new();
    for s in 0..SESSIONS {
        let session = format!("s{s}");
        let export = get(&http, format!("{base}/v1/sessions/{session}/export"))
            .await?
            .text()
            .await?;
        for line in export.lines().skip(1) {
            let record: Value = serde_json::from_str(line)?;
            let id = record["message"]["id"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            *seen.entry((session.clone(), id)).or_default() += 1;
            findings.messages_stored += 1;
        }
    }
    for (key, count) in &seen {
        if *count != 1 {
            findings
                .problems
                .push(format!("message {key:?} stored {count} times"));
        }
    }
    for acked in &ledger.appends {
        if !seen.contains_key(acked) {
            findings
                .problems
                .push(format!("acknowledged append {acked:?} is missing"));
        }
    }

    // Keys are stored normalised (`k.c1-8` is `k.c1.8`); ids are compared as given.
    let mut by_key: HashMap<String, Vec<String>> = HashMap::new();
    let mut ids: HashMap<String, usize> = HashMap::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut params = vec![("limit", "1000".to_owned())];
        if let Some(c) = &cursor {
            params.push(("cursor", c.clone()));
        }
        let url = reqwest::Url::parse_with_params(
            &format!("{base}/v1/profiles/{PROFILE}/memories"),
            &params,
        )?;
        let page: Value = get(&http, url.to_string()).await?.json().await?;
        for memory in page["memories"].as_array().cloned().unwrap_or_default() {
            let key = memory["key"].as_str().unwrap_or_default().to_owned();
            let id = memory["id"].as_str().unwrap_or_default().to_owned();
            by_key.entry(key).or_default().push(id.clone());
            *ids.entry(id).or_default() += 1;
            findings.memories_current += 1;
        }
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    for (key, current) in &by_key {
        if current.len() != 1 {
            findings
                .problems
                .push(format!("key {key} has {} current memories", current.len()));
        }
    }
    for (key, id) in &ledger.remembers {
        let count = ids.get(id).copied().unwrap_or(0);
        if count != 1 {
            findings.problems.push(format!(
                "acknowledged memory {key} ({id}) listed {count} times"
            ));
        }
    }

    findings.jobs = jobs.len();
    let listed: HashMap<&str, &str> = jobs
        .iter()
        .map(|j| {
            (
                j["id"].as_str().unwrap_or_default(),
                j["status"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    for id in &ledger.jobs {
        match listed.get(id.as_str()) {
            Some(&"done" | &"done_with_errors") => {}
            other => findings
                .problems
                .push(format!("acknowledged job {id}: {other:?}")),
        }
    }
    if let Some(worker_ran) = worker_ran
        && worker_ran != jobs.len()
    {
        findings.problems.push(format!(
            "the only worker ran {worker_ran} job run(s) for {} job(s): a job was lost or ran twice",
            jobs.len()
        ));
    }
    Ok(findings)
}
