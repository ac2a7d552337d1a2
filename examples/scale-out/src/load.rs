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
    /// Microseconds each acknowledged request took.
    pub latencies: Vec<u64>,
    /// Requests that were not acknowledged.
    pub failures: u64,
    /// Requests resent to the other server because theirs could not be reached.
    pub failed_over: u64,
    /// Why requests failed: a status and error code, or the transport error.
    pub reasons: std::collections::BTreeMap<String, u64>,
}

/// One request as the clients saw it, in milliseconds since the load started.
#[derive(Debug, Clone, Copy)]
pub struct Event {
    /// When it was sent.
    pub sent_ms: u64,
    /// When its answer (or its failure) came.
    pub answered_ms: u64,
    /// Whether it was acknowledged.
    pub ok: bool,
}

/// Every operation's stats.
#[derive(Debug, Default)]
pub struct Stats {
    /// Appends of one message.
    pub append: OpStats,
    /// Compactions of a session.
    pub compact: OpStats,
    /// Recalls from the profile.
    pub recall: OpStats,
    /// Memories written.
    pub remember: OpStats,
    /// Conversations queued for ingest.
    pub ingest: OpStats,
    /// Every request, in the order answered.
    pub timeline: Vec<Event>,
    /// Failures a client must never see from a server that is up: a 5xx other than a 503,
    /// a 503 without `Retry-After`, or no answer within the client's timeout (the server's
    /// request timeout and a margin).
    pub violations: std::collections::BTreeMap<String, u64>,
}

impl Stats {
    fn op(&mut self, name: &str) -> &mut OpStats {
        match name {
            "append" => &mut self.append,
            "compact" => &mut self.compact,
            "recall" => &mut self.recall,
            "remember" => &mut self.remember,
            _ => &mut self.ingest,
        }
    }

    /// Each operation by name, in a fixed order.
    pub fn ops(&mut self) -> [(&'static str, &mut OpStats); 5] {
        [
            ("append", &mut self.append),
            ("compact", &mut self.compact),
            ("recall", &mut self.recall),
            ("remember", &mut self.remember),
            ("ingest (202)", &mut self.ingest),
        ]
    }
}

/// Shared by the clients.
#[derive(Clone, Default)]
pub struct Shared {
    /// What the clients were told succeeded.
    pub ledger: Arc<Mutex<Ledger>>,
    /// What they measured.
    pub stats: Arc<Mutex<Stats>>,
    /// Set to stop the clients before their deadline.
    pub stop: Arc<std::sync::atomic::AtomicBool>,
}

fn text(id: &str, text: &str) -> Value {
    json!({"id": id, "role": "user", "parts": [{"type": "text", "text": text}]})
}

/// What the clients do and for how long.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    /// The two servers.
    pub ports: [u16; 2],
    /// When the load began (the timeline's zero).
    pub started: Instant,
    /// When the clients stop sending.
    pub deadline: Instant,
    /// Whether one operation in ten compacts a session (bound to [`PROFILE`], so the
    /// compacted range is shipped there as an ingest job) instead of appending.
    pub compact: bool,
    /// How long a client waits for an answer.
    pub timeout: Duration,
}

impl Plan {
    /// The scale-out run's plan: no compaction, a 5 s client timeout.
    pub fn new(ports: [u16; 2], deadline: Instant) -> Self {
        Self {
            ports,
            started: Instant::now(),
            deadline,
            compact: false,
            timeout: Duration::from_secs(5),
        }
    }
}

fn millis(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// One client: until the plan's deadline, operations in a fixed mix (6 appends, 2 recalls,
/// 1 remember, 1 ingest in 10; with compaction one of the appends compacts), alternating
/// between the servers. A request that cannot reach its server (refused, reset) is sent
/// once to the other one, as a client behind a load balancer would see it; an append is
/// safe to resend (insert-if-absent by message id).
pub async fn client(n: usize, plan: Plan, shared: Shared) {
    let ports = plan.ports;
    let http = reqwest::Client::builder()
        .timeout(plan.timeout)
        .build()
        .unwrap_or_default();
    let mut i = 0usize;
    while Instant::now() < plan.deadline && !shared.stop.load(std::sync::atomic::Ordering::Relaxed)
    {
        let tag = format!("c{n}-{i}");
        let session = format!("s{}", (n * 7 + i) % SESSIONS);
        let (name, path, body) = match i % 10 {
            5 if plan.compact => (
                "compact",
                format!("/v1/sessions/{session}/compact"),
                json!({}),
            ),
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
        let sent_ms = millis(plan.started);
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
        let (answer, reason, violation) = match sent {
            Ok(r) if r.status().is_success() => (r.json::<Value>().await.ok(), None, None),
            Ok(r) => {
                let status = r.status();
                let retry_after = r.headers().contains_key(reqwest::header::RETRY_AFTER);
                let body: Value = r.json().await.unwrap_or_default();
                let reason = format!("{status} {}", body["error"]["code"].as_str().unwrap_or("?"));
                let violation = match status.as_u16() {
                    503 if retry_after => None,
                    503 => Some(format!("{reason} without Retry-After")),
                    500..=599 => Some(format!("{reason}: {}", body["error"]["message"])),
                    _ => None,
                };
                (None, Some(reason), violation)
            }
            Err(e) if e.is_timeout() => (
                None,
                Some("timeout".into()),
                Some(format!("no answer within {:?}", plan.timeout)),
            ),
            Err(_) => {
                // Neither server answered: wait a little before the next request, as a
                // client would, instead of spinning on refused connections.
                tokio::time::sleep(Duration::from_millis(50)).await;
                (None, Some("unreachable".into()), None)
            }
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
            if let Some(violation) = violation {
                *stats
                    .violations
                    .entry(format!("{name}: {violation}"))
                    .or_default() += 1;
            }
            stats.timeline.push(Event {
                sent_ms,
                answered_ms: millis(plan.started),
                ok: answer.is_some(),
            });
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
