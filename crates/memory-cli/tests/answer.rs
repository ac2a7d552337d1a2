//! `memory eval … --answer` against a scripted OpenAI-compatible endpoint started here: the
//! answer model writes from what recall found, the judge grades with the benchmark's own
//! prompt, and accuracy, tokens and time land beside the retrieval scores.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::{Arc, Mutex};

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::{Value, json};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

fn memory(dir: &Path) -> Command {
    let mut cmd = Command::cargo_bin("memory").unwrap();
    cmd.arg("--data-dir")
        .arg(dir)
        .env_remove("MEMORY_DATA_DIR")
        .env_remove("OPENAI_API_KEY");
    cmd
}

fn reply(content: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "model": "scripted",
        "choices": [{"message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 10}
    }))
}

/// Between `start` and `end` in `text`.
fn between<'a>(text: &'a str, start: &str, end: &str) -> &'a str {
    let from = text.find(start).map_or(0, |i| i + start.len());
    let to = text[from..].find(end).map_or(text.len(), |i| from + i);
    &text[from..to]
}

/// The answer model quotes everything recall gave it; the judge says correct when the gold
/// answer is in the response. Every request is recorded.
#[derive(Clone, Default)]
struct Scripted {
    seen: Arc<Mutex<Vec<Value>>>,
}

impl Respond for Scripted {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        self.seen.lock().unwrap().push(body.clone());
        let messages = body["messages"].as_array().unwrap();
        let first = messages[0]["content"].as_str().unwrap_or_default();
        let last = messages.last().unwrap()["content"]
            .as_str()
            .unwrap_or_default();
        if first.contains("You answer a question from recalled memory records") {
            let records = between(last, "", "Date facts:");
            return reply(&json!({"answer": records, "citations": [1]}).to_string());
        }
        if last.contains("Is the model response correct? Answer yes or no only.")
            || last.contains("Does the model correctly identify the question as unanswerable?")
        {
            let gold = between(last, "Correct Answer: ", "\n\n").to_lowercase();
            let response = between(last, "Model Response: ", "\n\nIs the model").to_lowercase();
            return reply(if !gold.is_empty() && response.contains(&gold) {
                "yes"
            } else {
                "no"
            });
        }
        if last.contains("label an answer to a question as") {
            // The prompt's own example has a gold answer too: read the real question's.
            let last = between(last, "Now it's time for the real question:", "\u{0}");
            let gold = between(last, "Gold answer: ", "\n").to_lowercase();
            let response = between(last, "Generated answer: ", "\n\nFirst, provide").to_lowercase();
            let label = if response.contains(&gold) {
                "CORRECT"
            } else {
                "WRONG"
            };
            return reply(&format!("The topics compare. {{\"label\": \"{label}\"}}"));
        }
        // Extraction and query analysis are not what this test is about: nothing found.
        if first.contains("extract") {
            return reply(r#"{"memories": []}"#);
        }
        ResponseTemplate::new(400).set_body_json(json!({"error": {"message": "not scripted"}}))
    }
}

fn judged(seen: &[Value], marker: &str) -> Vec<Value> {
    seen.iter()
        .filter(|b| {
            b["messages"]
                .as_array()
                .unwrap()
                .iter()
                .any(|m| m["content"].as_str().unwrap_or_default().contains(marker))
        })
        .cloned()
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_are_written_from_recall_and_graded_with_the_published_prompts() {
    let server = MockServer::start().await;
    let scripted = Scripted::default();
    Mock::given(wiremock::matchers::method("POST"))
        .respond_with(scripted.clone())
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_owned();
    std::fs::write(
        d.join("memory.toml"),
        format!(
            "[llm]\nbase_url = \"{}/v1\"\nmodel = \"reader\"\nmax_retries = 0\n\n[memory]\nembedder = \"none\"\n",
            server.uri()
        ),
    )
    .unwrap();
    let lme = d.join("lme.json");
    let question = |id: &str, kind: &str, q: &str, answer: &str, evidence: &str| {
        json!({
            "question_id": id, "question_type": kind, "question": q,
            "question_date": "2023/05/20 (Sat) 10:00", "answer": answer,
            "answer_session_ids": ["answer_1"],
            "haystack_dates": ["2023/05/01 (Mon) 09:00", "2023/05/08 (Mon) 09:00"],
            "haystack_session_ids": ["other_1", "answer_1"],
            "haystack_sessions": [
                [{"role": "user", "content": "I repainted the kitchen a pale green."},
                 {"role": "assistant", "content": "Green kitchens feel calm."}],
                [{"role": "user", "content": evidence, "has_answer": true},
                 {"role": "assistant", "content": "Noted."}]
            ]
        })
    };
    std::fs::write(
        &lme,
        json!([
            question(
                "q1",
                "single-session-user",
                "What breed is my dog?",
                "greyhound",
                "My dog is a greyhound named Pixel."
            ),
            question(
                "q2",
                "temporal-reasoning",
                "Which city did I fly to?",
                "Lisbon",
                "I flew to Porto last week."
            ),
            question(
                "q3_abs",
                "single-session-user",
                "Which cello teacher do I have?",
                "You never said",
                "I started cello lessons."
            ),
        ])
        .to_string(),
    )
    .unwrap();
    let locomo = d.join("locomo.json");
    std::fs::write(
        &locomo,
        json!([{
            "sample_id": "answer-1",
            "conversation": {
                "speaker_a": "Ann", "speaker_b": "Bo",
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": [
                    {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a greyhound called Pixel."},
                    {"speaker": "Bo", "dia_id": "D1:2", "text": "Lovely! I started learning the cello."}
                ]
            },
            "qa": [
                {"question": "What is the name of Ann's dog?", "answer": "Pixel", "evidence": ["D1:1"], "category": 4},
                {"question": "Which instrument does Bo play?", "answer": "violin", "evidence": ["D1:2"], "category": 4},
                {"question": "Adversarial", "adversarial_answer": "x", "evidence": ["D1:2"], "category": 5}
            ]
        }])
        .to_string(),
    )
    .unwrap();
    let seen = Arc::clone(&scripted.seen);
    tokio::task::spawn_blocking(move || {
        let run = |args: &[&str]| -> Value {
            serde_json::from_slice(&memory(&d).args(args).assert().success().get_output().stdout)
                .unwrap()
        };
        let report = run(&[
            "eval",
            "longmemeval",
            "--json",
            "--answer",
            "--judge-model",
            "judge",
            "--data",
            lme.to_str().unwrap(),
            "--results",
            d.join("r.jsonl").to_str().unwrap(),
        ]);
        // q1's evidence is recalled and its answer holds it; q2's gold answer is nowhere.
        assert_eq!(
            report["pipeline"]["single-session-user"]["accuracy"], 1.0,
            "{report:#}"
        );
        assert_eq!(
            report["pipeline"]["temporal-reasoning"]["accuracy"], 0.0,
            "{report:#}"
        );
        assert_eq!(report["pipeline"]["overall"]["accuracy"], 0.5, "{report:#}");
        assert!(
            report["bm25"]["overall"]["accuracy"].is_null(),
            "the baseline writes no answer"
        );
        let answers = &report["answers"];
        assert_eq!(answers["answered"], 3, "{report:#}");
        assert_eq!(answers["failed"], 0, "{report:#}");
        // 100 + 10 tokens a call: the answer (query analysis failed before a reply), the judge.
        assert_eq!(answers["judge_tokens"], 110.0, "{report:#}");
        assert!(
            answers["answer_tokens"].as_f64().unwrap() >= 110.0,
            "{report:#}"
        );
        let line: Value = serde_json::from_str(
            std::fs::read_to_string(d.join("r.jsonl"))
                .unwrap()
                .lines()
                .next()
                .unwrap(),
        )
        .unwrap();
        assert!(
            line["answer"]["hypothesis"]
                .as_str()
                .unwrap()
                .contains("greyhound"),
            "{line:#}"
        );
        {
            let seen = seen.lock().unwrap();
            let judge = judged(
                &seen,
                "Is the model response correct? Answer yes or no only.",
            );
            assert_eq!(judge.len(), 2, "one judge call per answerable question");
            assert!(
                judge.iter().all(|b| b["model"] == "judge"),
                "--judge-model is the judge"
            );
            assert!(
                judge.iter().any(|b| b["messages"][0]["content"]
                    .as_str()
                    .unwrap()
                    .contains("do not penalize off-by-one errors")),
                "the temporal prompt"
            );
            assert_eq!(
                judged(&seen, "correctly identifies the question as unanswerable").len(),
                1
            );
            assert!(
                judged(&seen, "You answer a question from recalled memory records")
                    .iter()
                    .all(|b| b["model"] == "reader"),
                "[llm] model answers"
            );
        }

        let report = run(&[
            "eval",
            "locomo",
            "--json",
            "--answer",
            "--data",
            locomo.to_str().unwrap(),
        ]);
        assert_eq!(report["answer_accuracy"]["4"], 0.5, "{report:#}");
        assert_eq!(
            report["answers"]["answered"], 2,
            "category 5 is not answered: {report:#}"
        );
        let seen = seen.lock().unwrap();
        let judge = judged(&seen, "label an answer to a question as");
        assert_eq!(judge.len(), 2);
        assert!(
            judge.iter().all(|b| b["model"] == "reader"),
            "the judge defaults to [llm] model"
        );
        drop(seen);

        std::fs::remove_file(d.join("memory.toml")).unwrap();
        memory(&d)
            .args(["eval", "locomo", "--answer", "--data"])
            .arg(&locomo)
            .assert()
            .failure()
            .stderr(predicate::str::contains("[llm]"));
    })
    .await
    .unwrap();
}
