//! The load generator: clients appending, recalling, remembering and ingesting through
//! both servers at once, bounded in time, loopback only; each acknowledged write goes into
//! the ledger the checks read afterwards.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The sessions the appends go to.
pub const SESSIONS: usize = 20;
/// The profile of every long-term write.
pub const PROFILE: &str = "team";

/// What the clients were told succeeded.
#[derive(Debug, Default)]
pub struct Ledger {
    /// `(session, message id)` of each acknowledged append.
    pub appends: Vec<(String, String)>,
    /// `(key, memory id)` of each acknowledged remember.
    pub remembers: Vec<(String, String)>,
    /// Ids of acknowledged ingest jobs.
    pub jobs: Vec<String>,
}

/// Latencies (µs) and failures of one operation.
#[derive(Debug, Default)]
pub struct OpStats {
    pub latencies: Vec<u64>,
    pub failures: u64,
    /// Requests resent to the other server because theirs could not be reached.
    pub failed_over: u64,
    /// Why requests failed: a status and error code, or the transport error.
    pub reasons: std::collections::BTreeMap<String, u64>,
}

/// Every operation's stats.
#[derive(Debug, Default)]
pub struct Stats {
    pub append: OpStats,
    pub recall: OpStats,
    pub remember: OpStats,
    pub ingest: OpStats,
}

impl Stats {
    fn op(&mut self, name: &str) -> &mut OpStats {
        match name {
            "append" => &mut self.append,
            "recall" => &mut self.recall,
            "remember" => &mut self.remember,
            _ => &mut self.ingest,
        }
    }
}

/// Shared by the clients.
#[derive(Clone, Default)]
pub struct Shared {
    pub ledger: Arc<Mutex<Ledger>>,
    pub stats: Arc<Mutex<Stats>>,
}

fn text(id: &str, text: &str) -> Value {
    json!({"id": id, "role": "user", "parts": [{"type": "text", "text": text}]})
}

/// One client: until `deadline`, operations in a fixed mix (6 appends, 2 recalls, 1
/// remember, 1 ingest in 10), alternating between the servers. A request that cannot reach
/// its server (refused, reset) is sent once to the other one, as a client behind a load
/// balancer would see it; an append is safe to resend (insert-if-absent by message id).
pub async fn client(n: usize, ports: [u16; 2], deadline: Instant, shared: Shared) {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap_or_default();
    let mut i = 0usize;
    while Instant::now() < deadline {
        let tag = format!("c{n}-{i}");
        let session = format!("s{}", (n * 7 + i) % SESSIONS);
        let (name, path, body) = match i % 10 {
            0..=5 => (
                "append",
                format!("/v1/sessions/{session}/messages"),
                json!({"message": text(&tag, &format!("message {tag}"))}),
            ),
            6 | 7 => (
                "recall",
                format!("/v1/profiles/{PROFILE}/recall"),
                json!({"query": "fact from client", "limit": 5}),
            ),
            8 => (
                "remember",
                format!("/v1/profiles/{PROFILE}/memories"),
                json!({"content": format!("fact from client {tag}"), "key": format!("k.{tag}")}),
            ),
            _ => (
                "ingest",
                format!("/v1/profiles/{PROFILE}/ingest"),
                json!({"session": format!("chat-{tag}"),
                       "messages": [{"role": "user", "content": format!("conversation {tag}")}]}),
            ),
        };
        let started = Instant::now();
        let first = ports[(n + i) % 2];
        let mut sent = http
            .post(format!("http://127.0.0.1:{first}{path}"))
            .json(&body)
            .send()
            .await;
        let failed_over = sent.is_err();
        if failed_over {
            let other = ports[(n + i + 1) % 2];
            sent = http
                .post(format!("http://127.0.0.1:{other}{path}"))
                .json(&body)
                .send()
                .await;
        }
        let (answer, reason) = match sent {
            Ok(r) if r.status().is_success() => (r.json::<Value>().await.ok(), None),
            Ok(r) => {
                let status = r.status();
                let body: Value = r.json().await.unwrap_or_default();
                (
                    None,
                    Some(format!(
                        "{status} {}",
                        body["error"]["code"].as_str().unwrap_or("?")
                    )),
                )
            }
            Err(e) => (
                None,
                Some(if e.is_timeout() {
                    "timeout".into()
                } else {
                    "unreachable".into()
                }),
            ),
        };
        let micros = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        {
            let mut stats = shared.stats.lock().unwrap_or_else(|e| e.into_inner());
            let op = stats.op(name);
            match &answer {
                Some(_) => op.latencies.push(micros),
                None => op.failures += 1,
            }
            if let Some(reason) = reason {
                *op.reasons.entry(reason).or_default() += 1;
            }
            if failed_over {
                op.failed_over += 1;
            }
        }
        if let Some(answer) = answer {
            let mut ledger = shared.ledger.lock().unwrap_or_else(|e| e.into_inner());
            match name {
                "append" => ledger.appends.push((session, tag.clone())),
                "remember" => {
                    if let Some(id) = answer["id"].as_str() {
                        ledger.remembers.push((format!("k.{tag}"), id.to_owned()));
                    }
                }
                "ingest" => {
                    if let Some(id) = answer["job"]["id"].as_str() {
                        ledger.jobs.push(id.to_owned());
                    }
                }
                _ => {}
            }
        }
        i += 1;
    }
}
