//! `profile` commands end to end.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::{Value, json};

fn memory(dir: &std::path::Path) -> Command {
    let mut cmd = Command::cargo_bin("memory").unwrap();
    cmd.arg("--data-dir").arg(dir).env_remove("MEMORY_DATA_DIR");
    cmd
}

/// A one-message UIMessage JSONL file in `dir`.
fn one_message_file(dir: &std::path::Path, text: &str) -> std::path::PathBuf {
    let file = dir.join("chat.jsonl");
    let line = json!({"id": "m1", "role": "user", "parts": [{"type": "text", "text": text}]});
    std::fs::write(&file, line.to_string()).unwrap();
    file
}

fn json_out(cmd: &mut Command) -> Value {
    serde_json::from_slice(&cmd.assert().success().get_output().stdout).unwrap()
}

#[test]
fn ingest_remember_recall_forget() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let file = d.join("chat.jsonl");
    let lines = [
        json!({"id": "m1", "role": "user", "parts": [{"type": "text", "text": "We adopted a cat named Miso."}]}),
        json!({"id": "m2", "role": "assistant", "parts": [{"type": "text", "text": "Miso is a lovely name."}]}),
    ];
    std::fs::write(
        &file,
        lines
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join("\n"),
    )
    .unwrap();
    memory(d)
        .args(["profile", "ingest", "ada"])
        .arg(&file)
        .assert()
        .failure()
        .stderr(predicate::str::contains("pass --session"));
    let first = json_out(
        memory(d)
            .args([
                "profile",
                "ingest",
                "ada",
                "--session",
                "c1",
                "--wait",
                "--json",
            ])
            .arg(&file),
    );
    assert_eq!(first["jobs"][0]["status"], "done");
    assert_eq!(
        (first["new"].as_u64(), first["known"].as_u64()),
        (Some(2), Some(0))
    );
    let again = json_out(
        memory(d)
            .args([
                "profile",
                "ingest",
                "ada",
                "--session",
                "c1",
                "--wait",
                "--json",
            ])
            .arg(&file),
    );
    assert_eq!(again["known"], 2);
    let record = json_out(memory(d).args([
        "profile",
        "remember",
        "ada",
        "Has a cat called Miso",
        "--key",
        "pets",
        "--json",
    ]));
    let id = record["id"].as_str().unwrap().to_owned();
    let recalled = json_out(memory(d).args(["profile", "recall", "ada", "Miso", "--json"]));
    let results = recalled["response"]["hits"].as_array().unwrap();
    assert_eq!(results[0]["item"]["type"], "memory");
    assert!(results.iter().any(|r| r["item"]["type"] == "raw"));
    assert!(
        results[0]["ranks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["channel"] == "memory_fts")
    );
    memory(d)
        .args(["profile", "recall", "ada", "Miso", "--explain"])
        .assert()
        .success()
        .stdout(predicate::str::contains("memory_fts #1"));
    memory(d)
        .args(["profile", "forget", "ada", &id])
        .assert()
        .success();
    let after = json_out(memory(d).args(["profile", "recall", "ada", "Miso", "--json"]));
    assert!(
        after["response"]["hits"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["item"]["type"] == "raw")
    );
    let audit = json_out(memory(d).args(["profile", "list", "ada", "--all", "--json"]));
    assert_eq!(
        audit["memories"][0]["forgotten"]["reason"],
        "forgotten by request"
    );
    memory(d)
        .args(["profile", "purge", "ada", &id])
        .assert()
        .success();
    memory(d)
        .args(["profile", "purge", "ada", &id])
        .assert()
        .failure()
        .stderr(predicate::str::contains("memory not found"));
    assert!(
        d.join("profiles/ada.db").exists(),
        "one database file per profile"
    );
    let listed = json_out(memory(d).args(["profile", "profiles", "--json"]));
    assert_eq!(listed["profiles"], json!(["ada"]));
    for other in ["cy", "bo"] {
        memory(d)
            .args(["profile", "remember", other, "Tea"])
            .assert()
            .success();
    }
    let page = json_out(memory(d).args(["profile", "profiles", "--limit", "2", "--json"]));
    assert_eq!(page["profiles"], json!(["ada", "bo"]));
    assert_eq!(page["next"], json!("bo"));
    let rest = json_out(memory(d).args([
        "profile", "profiles", "--limit", "2", "--after", "bo", "--json",
    ]));
    assert_eq!(rest["profiles"], json!(["cy"]));
    assert!(rest.get("next").is_none(), "{rest}");
    for other in ["cy", "bo"] {
        memory(d)
            .args(["profile", "delete", other])
            .assert()
            .success();
    }
    memory(d)
        .args(["profile", "remember", "ada", "Porto", "--key", "home"])
        .assert()
        .success();
    memory(d)
        .args(["profile", "remember", "ada", "Lisbon", "--key", "Home"])
        .assert()
        .success();
    let chain =
        json_out(memory(d).args(["profile", "list", "ada", "--key", "home", "--all", "--json"]));
    let chain = chain["memories"].as_array().unwrap();
    assert_eq!(chain.len(), 2, "the key's version chain");
    assert_eq!(chain[0]["superseded_by"], chain[1]["id"]);
    let current = json_out(memory(d).args(["profile", "list", "ada", "--kind", "fact", "--json"]));
    assert_eq!(current["memories"].as_array().unwrap().len(), 1);
    memory(d)
        .args(["profile", "delete", "ada"])
        .assert()
        .success();
    assert!(!d.join("profiles/ada.db").exists());
    memory(d)
        .args(["profile", "delete", "ada"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("profile not found"));
    memory(d)
        .args(["profile", "remember", "../x", "y"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("profile name"));
}

#[test]
fn background_jobs_finish_and_are_listed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let file = one_message_file(d, "The boiler was serviced in May.");
    let out = json_out(
        memory(d)
            .args(["profile", "ingest", "bob", "--session", "s1", "--json"])
            .arg(&file),
    );
    let id = out["jobs"][0]["id"].as_str().unwrap().to_owned();
    // Searchable at once, before the background worker has run.
    let recalled = json_out(memory(d).args(["profile", "recall", "bob", "boiler", "--json"]));
    assert_eq!(recalled["response"]["hits"].as_array().unwrap().len(), 1);
    let mut status = String::new();
    for _ in 0..100 {
        let jobs = json_out(memory(d).args(["profile", "jobs", "bob", "--json"]));
        status = jobs["jobs"][0]["status"].as_str().unwrap().to_owned();
        assert_eq!(jobs["jobs"][0]["id"], id.as_str());
        if status == "done" {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(status, "done", "the background worker finished the job");
    memory(d)
        .args(["profile", "jobs", "bob", "--run"])
        .assert()
        .success()
        .stdout(predicate::str::contains("[done]"));
}

/// A one-session conversation in LoCoMo's format: Ann's greyhound Pixel, Bo's cello.
fn tiny_conversation() -> Value {
    json!({
        "speaker_a": "Ann", "speaker_b": "Bo",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a greyhound called Pixel."},
            {"speaker": "Bo", "dia_id": "D1:2", "text": "Lovely! I started learning the cello."}
        ]
    })
}

#[test]
fn eval_locomo_runs_on_a_data_set_in_its_format() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let data = d.join("tiny.json");
    let mut conversation = tiny_conversation();
    conversation["session_1"].as_array_mut().unwrap().push(
        json!({"speaker": "Ann", "dia_id": "D1:3", "text": "We are off to Porto next week."}),
    );
    let sample = json!([{
        "sample_id": "tiny-1",
        "conversation": conversation,
        "qa": [
            {"question": "What is the name of Ann's dog?", "answer": "Pixel", "evidence": ["D1:1"], "category": 4},
            {"question": "Which instrument does Bo play?", "answer": "cello", "evidence": ["D:1:02"], "category": 4},
            {"question": "Unanswerable", "evidence": ["D9:9"], "category": 3}
        ]
    }]);
    std::fs::write(&data, sample.to_string()).unwrap();
    let report = json_out(
        memory(d)
            .args(["eval", "locomo", "--json", "--data"])
            .arg(&data),
    );
    assert_eq!(report["questions"], 2);
    assert_eq!(report["skipped"], 1);
    assert_eq!(report["turns"], 3);
    assert_eq!(report["bm25"]["overall"]["recall_at_5"], 1.0);
    assert_eq!(report["pipeline"]["overall"]["recall_at_10"], 1.0);

    // --keep: the first run ingests and records, the second scores the kept profile with
    // other settings and ingests nothing.
    // Kept profiles live where a data dir keeps its own, so the CLI can open them.
    let kept_dir = d.join("kept");
    let keep = kept_dir.join("profiles");
    let kept_run = |data: &std::path::Path, extra: &[&str]| {
        json_out(
            memory(d)
                .args(["eval", "locomo", "--json", "--keep"])
                .arg(&keep)
                .args(extra)
                .arg("--data")
                .arg(data),
        )
    };
    let first = kept_run(&data, &[]);
    assert_eq!(first["pipeline"], report["pipeline"]);
    assert!(keep.join("locomo").join("tiny-1.json").is_file());
    // The same conversation id with other words in its turns: were it ingested again, the
    // profile would hold them.
    let emptied = d.join("emptied.json");
    let text = sample
        .to_string()
        .replace("Pixel", "Rex")
        .replace("cello", "oboe");
    std::fs::write(&emptied, text).unwrap();
    let second = kept_run(&emptied, &["--dated-weight", "0", "--context-radius", "0"]);
    assert_eq!(second["questions"], 2);
    let recalled = memory(&kept_dir)
        .args(["profile", "recall", "tiny-1", "Rex Pixel greyhound"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let recalled = String::from_utf8(recalled).unwrap();
    assert!(
        recalled.contains("Pixel") && !recalled.contains("Rex"),
        "the kept profile was scored, not a new ingest: {recalled}"
    );
    memory(d)
        .args(["eval", "locomo", "--data"])
        .arg(d.join("missing.json"))
        .assert()
        .failure();
}

/// A question in LongMemEval's format: three dated sessions, the evidence in the second.
fn longmemeval_question(id: &str, question: &str, evidence: &str) -> Value {
    json!({
        "question_id": id, "question_type": "single-session-user", "question": question,
        "question_date": "2023/05/20 (Sat) 10:00", "answer": "x",
        "answer_session_ids": ["answer_1"],
        "haystack_dates": ["2023/05/01 (Mon) 09:00", "2023/05/08 (Mon) 09:00", "2023/05/15 (Mon) 09:00"],
        "haystack_session_ids": ["other_1", "answer_1", "other_2"],
        "haystack_sessions": [
            [{"role": "user", "content": "I repainted the kitchen a pale green."},
             {"role": "assistant", "content": "Green kitchens feel calm."}],
            [{"role": "user", "content": evidence, "has_answer": true},
             {"role": "assistant", "content": "Noted.", "has_answer": false}],
            [{"role": "user", "content": "My sister visits in June."},
             {"role": "assistant", "content": "Enjoy the visit."}]
        ]
    })
}

#[test]
fn eval_longmemeval_scores_resumes_and_shards() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let data = d.join("tiny.json");
    let questions = json!([
        longmemeval_question(
            "q1",
            "What breed is my dog?",
            "My dog is a greyhound named Pixel."
        ),
        longmemeval_question(
            "q2_abs",
            "Which cello teacher do I have?",
            "I started cello lessons with Mrs Alvarez."
        ),
    ]);
    std::fs::write(&data, questions.to_string()).unwrap();
    let results = d.join("runs").join("r.jsonl");
    let run = |extra: &[&str]| {
        json_out(
            memory(d)
                .args(["eval", "longmemeval", "--json", "--data"])
                .arg(&data)
                .arg("--results")
                .arg(&results)
                .args(extra),
        )
    };
    let report = run(&[]);
    assert_eq!(
        (report["selected"].clone(), report["done"].clone()),
        (json!(2), json!(2))
    );
    for system in ["pipeline", "bm25"] {
        let overall = &report[system]["overall"];
        assert_eq!(overall["n"], 1, "{report}");
        assert_eq!(overall["sessions"]["recall_any_at_5"], 1.0, "{report}");
        assert_eq!(overall["turn_recall_at_10"], 1.0, "{report}");
        assert_eq!(report[system]["abstention"]["n"], 1, "{report}");
        assert_eq!(report[system]["single-session-user"]["n"], 1, "{report}");
    }
    let lines = || std::fs::read_to_string(&results).unwrap().lines().count();
    assert_eq!(lines(), 2);
    // A second run resumes: nothing new is run, the report is the same.
    assert_eq!(run(&[])["pipeline"], report["pipeline"]);
    assert_eq!(lines(), 2);
    // Shards split the questions; --fresh starts over.
    let second = run(&["--fresh", "--shard", "1/2"]);
    assert_eq!(
        (second["selected"].clone(), second["done"].clone()),
        (json!(1), json!(1))
    );
    assert_eq!(second["pipeline"]["abstention"]["n"], 1, "{second}");
    assert_eq!(lines(), 1);
    assert_eq!(run(&["--types", "multi-session"])["selected"], 0);
    // Kept haystacks are scored again without ingesting: same scores, a record per question.
    // Kept profiles live where a data dir keeps its own, so the CLI can open them.
    let kept_dir = d.join("kept");
    let keep = kept_dir.join("profiles");
    let kept = run(&["--fresh", "--keep", keep.to_str().unwrap()]);
    assert_eq!(kept["pipeline"], report["pipeline"]);
    assert_eq!(
        std::fs::read_dir(keep.join("haystacks")).unwrap().count(),
        2
    );
    let again = run(&["--fresh", "--keep", keep.to_str().unwrap()]);
    assert_eq!(again["pipeline"], report["pipeline"]);
    assert_eq!(again["bm25"], report["bm25"]);
    // Not ingested again: the ingest time is the first run's, read from its record.
    assert_eq!(
        again["seconds_per_question"][0],
        kept["seconds_per_question"][0]
    );
    for bad in [["--shard", "2/2"], ["--shard", "x"]] {
        memory(d)
            .args(["eval", "longmemeval", "--data"])
            .arg(&data)
            .args(bad)
            .assert()
            .failure()
            .stderr(predicate::str::contains("--shard"));
    }
}

#[test]
fn the_memory_section_chooses_the_embedder() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("memory.toml"), "[memory]\nembedder = \"none\"\n").unwrap();
    let file = one_message_file(d, "Tabs over spaces.");
    let out = json_out(
        memory(d)
            .args([
                "profile",
                "ingest",
                "p",
                "--session",
                "s",
                "--wait",
                "--json",
            ])
            .arg(&file),
    );
    let job = &out["jobs"][0];
    assert_eq!(job["status"], "done");
    assert_eq!(job["vectorized"], 0);
    assert!(
        job["degraded"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["feature"] == "vectors")
    );
    let recalled = json_out(memory(d).args(["profile", "recall", "p", "tabs", "--json"]));
    assert_eq!(recalled["response"]["hits"].as_array().unwrap().len(), 1);
    std::fs::write(d.join("memory.toml"), "[memory]\nembedder = \"openai\"\n").unwrap();
    memory(d)
        .args(["profile", "recall", "p", "tabs"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("needs an [llm] endpoint"));
}

/// `ingest --wait` exits non-zero when a job it waited for failed, and `--json` still
/// carries each job's status and error.
#[test]
fn ingest_wait_fails_when_a_job_failed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // An [llm] nobody listens on: extraction fails at once (no retries).
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    std::fs::write(
        d.join("memory.toml"),
        format!(
            "[llm]\nbase_url = \"http://127.0.0.1:{port}/v1\"\nmodel = \"m\"\nmax_retries = 0\ntimeout_secs = 5\n\n[memory]\nembedder = \"none\"\n"
        ),
    )
    .unwrap();
    let file = one_message_file(d, "Deploys happen on Fridays.");
    let out = memory(d)
        .args([
            "profile",
            "ingest",
            "p",
            "--session",
            "s",
            "--wait",
            "--json",
        ])
        .arg(&file)
        .assert()
        .failure()
        .stderr(predicate::str::contains("1 of 1 ingest job(s) failed"))
        // The job's warning is logged, without colour codes off a terminal.
        .stderr(predicate::str::contains("WARN"))
        .stderr(predicate::str::contains("\u{1b}[").not())
        .get_output()
        .stdout
        .clone();
    let out: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(out["jobs"][0]["status"], "failed");
    assert_eq!(out["jobs"][0]["failed_stage"], "extracting");
    assert!(
        out["jobs"][0]["error"]
            .as_str()
            .unwrap()
            .contains("127.0.0.1")
    );
    // The raw message is stored and searchable all the same.
    let recalled = json_out(memory(d).args(["profile", "recall", "p", "fridays", "--json"]));
    assert_eq!(recalled["response"]["hits"].as_array().unwrap().len(), 1);
}

/// Reading a profile that does not exist fails and creates nothing; deleting a profile
/// removes its background worker's log.
#[test]
fn missing_profiles_are_not_created_and_delete_removes_the_worker_log() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for args in [
        vec!["profile", "recall", "nosuch", "anything"],
        vec!["profile", "list", "nosuch"],
        vec!["profile", "forget", "nosuch", "some-id"],
    ] {
        memory(d)
            .args(&args)
            .assert()
            .failure()
            .stderr(predicate::str::contains("not found"));
    }
    let listed = json_out(memory(d).args(["profile", "profiles", "--json"]));
    assert!(
        !listed.to_string().contains("nosuch"),
        "a read created the profile: {listed}"
    );

    let file = one_message_file(d, "Deploys happen on Fridays.");
    memory(d)
        .args(["profile", "ingest", "team", "--session", "s"])
        .arg(&file)
        .assert()
        .success();
    let log = d.join("profiles").join("team.jobs.log");
    assert!(log.exists(), "the background worker logs here");
    memory(d)
        .args(["profile", "delete", "team"])
        .assert()
        .success();
    assert!(!log.exists());
}

/// Ingest keeps each message's own time (`createdAt`, or `metadata.createdAt`), and refuses
/// an unreadable one with its line number, before storing anything.
#[test]
fn ingest_keeps_message_times_and_names_the_line_of_a_bad_one() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("memory.toml"), "[memory]\nembedder = \"none\"\n").unwrap();
    let file = d.join("dated.jsonl");
    std::fs::write(
        &file,
        [
            json!({"id": "m1", "role": "user", "createdAt": "2024-03-10T09:30:00Z", "parts": [{"type": "text", "text": "I moved to Lisbon yesterday."}]}),
            json!({"id": "m2", "role": "user", "metadata": {"createdAt": 1_710_150_000_000_i64}, "parts": [{"type": "text", "text": "It rains."}]}),
        ]
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n"),
    )
    .unwrap();
    memory(d)
        .args(["profile", "ingest", "p", "--session", "s", "--wait"])
        .arg(&file)
        .assert()
        .success();
    let export = String::from_utf8(
        memory(d)
            .args(["profile", "export", "p"])
            .assert()
            .success()
            .get_output()
            .stdout
            .clone(),
    )
    .unwrap();
    let times: Vec<i64> = export
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["kind"] == "raw")
        .map(|v| v["raw"]["created_at"].as_i64().unwrap())
        .collect();
    assert_eq!(times, [1_710_063_000_000, 1_710_150_000_000]);

    let bad = d.join("bad.jsonl");
    std::fs::write(
        &bad,
        [
            json!({"id": "m3", "role": "user", "parts": [{"type": "text", "text": "fine"}]}),
            json!({"id": "m4", "role": "user", "createdAt": "yesterday", "parts": [{"type": "text", "text": "x"}]}),
        ]
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n"),
    )
    .unwrap();
    memory(d)
        .args(["profile", "ingest", "p", "--session", "s2"])
        .arg(&bad)
        .assert()
        .failure()
        .stderr(
            predicate::str::contains("bad.jsonl:2:").and(predicate::str::contains("createdAt")),
        );
    let after = String::from_utf8(
        memory(d)
            .args(["profile", "export", "p"])
            .assert()
            .success()
            .get_output()
            .stdout
            .clone(),
    )
    .unwrap();
    assert!(
        !after.contains("fine"),
        "nothing of the bad file was stored"
    );
}

/// `remember --metadata` keeps the builder's metadata; `list --where` filters by it, and a
/// bad filter or bad metadata is refused with the reason, writing nothing.
#[test]
fn metadata_is_remembered_and_filters_the_list() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (text, metadata) in [
        (
            "The Atlas launch is in May",
            r#"{"project": "atlas", "priority": 2}"#,
        ),
        (
            "The Borealis demo is on Friday",
            r#"{"project": "borealis", "priority": 1}"#,
        ),
    ] {
        memory(d)
            .args(["profile", "remember", "team", text, "--metadata", metadata])
            .assert()
            .success();
    }
    let listed = json_out(memory(d).args([
        "profile",
        "list",
        "team",
        "--where",
        r#"{"priority": {"$gte": 2}}"#,
        "--json",
    ]));
    let memories = listed["memories"].as_array().unwrap();
    assert_eq!(memories.len(), 1, "{listed}");
    assert_eq!(memories[0]["content"], "The Atlas launch is in May");
    assert_eq!(
        memories[0]["metadata"],
        json!({"priority": 2, "project": "atlas"})
    );
    let recalled = json_out(memory(d).args([
        "profile",
        "recall",
        "team",
        "when is the launch or the demo",
        "--where",
        r#"{"project": "borealis"}"#,
        "--json",
    ]));
    let hits = recalled["response"]["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 1, "{recalled}");
    assert_eq!(hits[0]["item"]["content"], "The Borealis demo is on Friday");
    memory(d)
        .args(["profile", "recall", "team", "launch", "--where", "[1]"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("--where"));
    memory(d)
        .args([
            "profile",
            "list",
            "team",
            "--where",
            r#"{"priority": {"$near": 2}}"#,
        ])
        .assert()
        .failure()
        .stderr(predicate::str::contains("$near"));
    memory(d)
        .args([
            "profile",
            "remember",
            "team",
            "Nested",
            "--metadata",
            r#"{"a": {"b": 1}}"#,
        ])
        .assert()
        .failure()
        .stderr(predicate::str::contains("metadata \"a\""));
    let all = json_out(memory(d).args(["profile", "list", "team", "--json"]));
    assert_eq!(
        all["memories"].as_array().unwrap().len(),
        2,
        "nothing written"
    );
}

/// `remember --expires-in` / `--expires-at` set an expiry (`list --all` shows what expired,
/// marked); `ingest --metadata` gives every ingested message the metadata; `profile settings`
/// stores instructions, categories and a language, layered over `[memory]`'s.
#[test]
fn expiry_ingest_metadata_and_settings_from_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("memory.toml"),
        "[memory]\nembedder = \"none\"\ninstructions = \"Keep deadlines.\"\n",
    )
    .unwrap();
    let soon = json_out(memory(d).args([
        "profile",
        "remember",
        "team",
        "Call the venue back",
        "--kind",
        "task",
        "--expires-in",
        "1s",
        "--json",
    ]));
    assert!(soon["expires_at"].as_i64().unwrap() > soon["recorded_at"].as_i64().unwrap());
    let dated = json_out(memory(d).args([
        "profile",
        "remember",
        "team",
        "The venue closes in 2999",
        "--expires-at",
        "2999-01-31T00:00:00Z",
        "--json",
    ]));
    assert_eq!(dated["expires_at"], 32_474_736_000_000_i64);
    memory(d)
        .args([
            "profile",
            "remember",
            "team",
            "x",
            "--expires-in",
            "soonish",
        ])
        .assert()
        .failure()
        .stderr(predicate::str::contains("--expires-in"));
    std::thread::sleep(std::time::Duration::from_millis(1_100));
    let current = json_out(memory(d).args(["profile", "list", "team", "--json"]));
    assert_eq!(
        current["memories"].as_array().unwrap().len(),
        1,
        "{current}"
    );
    let audit = memory(d)
        .args(["profile", "list", "team", "--all"])
        .assert()
        .success();
    let audit = String::from_utf8(audit.get_output().stdout.clone()).unwrap();
    assert!(audit.contains("Call the venue back (expired)"), "{audit}");

    let file = one_message_file(d, "The venue is booked for Friday");
    memory(d)
        .args(["profile", "ingest", "team"])
        .arg(&file)
        .args([
            "--session",
            "c1",
            "--metadata",
            r#"{"project": "atlas"}"#,
            "--wait",
        ])
        .assert()
        .success();
    let exported = memory(d)
        .args(["profile", "export", "team"])
        .assert()
        .success();
    let exported = String::from_utf8(exported.get_output().stdout.clone()).unwrap();
    let raw = exported
        .lines()
        .find(|l| l.contains("booked for Friday"))
        .unwrap();
    assert!(raw.contains(r#""metadata":{"project":"atlas"}"#), "{raw}");

    let shown = json_out(memory(d).args([
        "profile",
        "settings",
        "team",
        "--instructions",
        "Ignore the weather.",
        "--category",
        "venue=places and bookings",
        "--category",
        "people",
        "--language",
        "fr",
        "--json",
    ]));
    assert_eq!(
        shown["settings"],
        json!({"instructions": "Ignore the weather.", "language": "fr",
               "categories": [{"name": "venue", "description": "places and bookings"},
                              {"name": "people", "description": ""}]})
    );
    assert_eq!(
        shown["effective"]["instructions"],
        "Keep deadlines.\nIgnore the weather."
    );
    memory(d)
        .args(["profile", "settings", "team", "--category", "Bad Name"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("Bad Name"));
    let cleared = json_out(memory(d).args(["profile", "settings", "team", "--clear", "--json"]));
    assert_eq!(cleared["settings"], json!({}));
    assert_eq!(cleared["effective"]["instructions"], "Keep deadlines.");
}

#[test]
fn eval_fit_scores_the_defaults_as_the_evaluations_do_and_cross_validates() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let conversation = |id: &str, turns: Value, qa: Value| {
        json!({
            "sample_id": id,
            "conversation": {
                "speaker_a": "Ann", "speaker_b": "Bo",
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": turns
            },
            "qa": qa
        })
    };
    let locomo = d.join("locomo.json");
    let samples = json!([
        conversation(
            "fit-1",
            json!([
                {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a greyhound called Pixel."},
                {"speaker": "Bo", "dia_id": "D1:2", "text": "Lovely! I started learning the cello."},
                {"speaker": "Ann", "dia_id": "D1:3", "text": "We are off to Porto next week."}
            ]),
            json!([
                {"question": "What is the name of Ann's dog?", "answer": "Pixel", "evidence": ["D1:1"], "category": 4},
                {"question": "Which instrument does Bo play?", "answer": "cello", "evidence": ["D1:2"], "category": 4},
                {"question": "Adversarial", "evidence": ["D1:3"], "category": 5}
            ])
        ),
        conversation(
            "fit-2",
            json!([
                {"speaker": "Ann", "dia_id": "D1:1", "text": "My brother moved to Oslo for work."},
                {"speaker": "Bo", "dia_id": "D1:2", "text": "I bake sourdough every Sunday."}
            ]),
            json!([
                {"question": "Where did Ann's brother move?", "answer": "Oslo", "evidence": ["D1:1"], "category": 1}
            ])
        )
    ]);
    std::fs::write(&locomo, samples.to_string()).unwrap();
    let longmemeval = d.join("lme.json");
    let questions = json!([
        longmemeval_question(
            "q1",
            "What breed is my dog?",
            "My dog is a greyhound named Pixel."
        ),
        longmemeval_question(
            "q2",
            "Where do I take pottery classes?",
            "I take pottery classes at the Clay Barn."
        ),
        longmemeval_question(
            "q3_abs",
            "Which cello teacher do I have?",
            "I started cello lessons with Mrs Alvarez."
        ),
    ]);
    std::fs::write(&longmemeval, questions.to_string()).unwrap();
    let kept_dir = d.join("kept");
    let keep = kept_dir.join("profiles");
    let locomo_report = json_out(
        memory(d)
            .args(["eval", "locomo", "--json", "--keep"])
            .arg(&keep)
            .arg("--data")
            .arg(&locomo),
    );
    let lme_report = json_out(
        memory(d)
            .args(["eval", "longmemeval", "--json", "--keep"])
            .arg(&keep)
            .arg("--results")
            .arg(d.join("r.jsonl"))
            .arg("--data")
            .arg(&longmemeval),
    );
    let fit = |folds: &str| {
        memory(d)
            .args(["eval", "fit", "--json", "--folds", folds, "--keep"])
            .arg(&keep)
            .arg("--locomo")
            .arg(&locomo)
            .arg("--longmemeval")
            .arg(&longmemeval)
            .assert()
    };
    let report: Value = serde_json::from_slice(&fit("2").success().get_output().stdout).unwrap();
    assert_eq!(report["locomo_questions"], 3, "{report}");
    assert_eq!(report["longmemeval_questions"], 2, "{report}");
    // The defaults, ranked from collected candidates, score what the evaluations scored.
    let (name, defaults) = (&report["ablation"][0][0], &report["ablation"][0][1]);
    assert_eq!(name, "defaults");
    assert_eq!(
        defaults["locomo_recall_at_10"], locomo_report["pipeline"]["overall"]["recall_at_10"],
        "{report}"
    );
    let lme = &lme_report["pipeline"]["overall"];
    assert_eq!(defaults["all_at_5"], lme["sessions"]["recall_all_at_5"]);
    assert_eq!(defaults["ndcg_at_10"], lme["sessions"]["ndcg_at_10"]);
    assert_eq!(defaults["turn_recall_at_10"], lme["turn_recall_at_10"]);
    // Every question is held out once; the fit never scores below the defaults it starts
    // from on the questions it was fitted on.
    assert_eq!(report["folds"].as_array().unwrap().len(), 2);
    assert_eq!(report["held_out"][0]["n"], 5);
    assert_eq!(report["held_out"][1]["n"], 5);
    let fitted = &report["ablation"][1][1];
    assert!(fitted["objective"].as_f64() >= defaults["objective"].as_f64());
    assert_eq!(report["fitted"].as_array().unwrap().len(), 7);
    // Nothing was ingested again: the records are the evaluations'.
    assert_eq!(
        std::fs::read_dir(keep.join("haystacks")).unwrap().count(),
        3
    );
    fit("1")
        .failure()
        .stderr(predicate::str::contains("--folds"));
}

#[test]
fn consolidate_lists_and_writes_merges_and_says_contradictions_need_an_llm() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("memory.toml"), "[memory]\nembedder = \"none\"\n").unwrap();
    for text in [
        "The user likes green tea.",
        "the user likes green tea",
        "The user lives in Lisbon.",
    ] {
        memory(d)
            .args(["profile", "remember", "ada", text])
            .assert()
            .success();
    }
    let planned =
        json_out(memory(d).args(["profile", "consolidate", "ada", "--dry-run", "--json"]));
    assert_eq!(planned["dry_run"], true);
    assert_eq!(planned["absorbed"], 1);
    let done = memory(d)
        .args(["profile", "consolidate", "ada"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let done = String::from_utf8(done).unwrap();
    assert!(
        done.contains("merged 1 memories into 1 survivors"),
        "{done}"
    );
    assert!(
        done.contains("note: contradictions: no LLM configured"),
        "{done}"
    );
    memory(d)
        .args(["profile", "contradictions", "ada"])
        .assert()
        .success()
        .stdout(predicate::str::contains("ada: no contradictions flagged"));
    let listed = json_out(memory(d).args(["profile", "contradictions", "ada", "--json"]));
    assert_eq!(listed, json!([]));
    memory(d)
        .args(["profile", "contradictions", "nobody"])
        .assert()
        .failure();
}

#[test]
fn bench_consolidation_measures_locomo_observations_before_and_after() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let data = d.join("tiny.json");
    let sample = json!([{
        "sample_id": "tiny-1",
        "conversation": tiny_conversation(),
        "observation": {
            "session_1_observation": {
                "Ann": [["Ann adopted a greyhound called Pixel.", "D1:1"],
                        ["Ann adopted a greyhound named Pixel.", "D1:1"]],
                "Bo": [["Bo started learning the cello.", "D1:2"]]
            }
        },
        "qa": [
            {"question": "What is the name of Ann's dog?", "answer": "Pixel", "evidence": ["D1:1"], "category": 4},
            {"question": "Which instrument does Bo play?", "answer": "cello", "evidence": ["D1:2"], "category": 4}
        ]
    }]);
    std::fs::write(&data, sample.to_string()).unwrap();
    let report = json_out(
        memory(d)
            .args([
                "bench",
                "consolidation",
                "--embedder",
                "hashing",
                "--json",
                "--locomo",
            ])
            .arg(&data),
    );
    assert_eq!(report["memories"], 3);
    assert_eq!(report["questions"], 2);
    assert_eq!(report["before"], 1.0);
    assert_eq!(report["after"], 1.0);
    assert_eq!(report["conversations"][0]["id"], "tiny-1");
}
