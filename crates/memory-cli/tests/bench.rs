//! `memory bench long-term`, tiny: it runs to the end on both embedded text indexes and
//! reports what it measured.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::process::Command;

/// Runs the benchmark small, without the local model (its step is skipped when absent).
fn long_term(text: &str) -> serde_json::Value {
    let no_model = tempfile::tempdir().unwrap();
    let out = Command::new(assert_cmd::cargo::cargo_bin("memory"))
        .args(["bench", "long-term", "--memories", "300", "--raw", "300"])
        .args(["--queries", "20", "--no-filtered", "--text", text, "--json"])
        .env("MEMORY_MODEL_DIR", no_model.path().join("absent"))
        .env_remove("MEMORY_REQUIRE_MODEL")
        .output()
        .unwrap();
    common::json_output(out)
}

/// On Tantivy the benchmark rebuilds the index from the seeded records and checks it holds
/// every one (it fails otherwise); on both, every recall row is measured (the concurrent
/// callers' too) and the filtered rows are skipped when asked.
#[test]
fn bench_long_term_runs_on_fts5_and_on_tantivy() {
    for text in ["sqlite", "tantivy"] {
        let report = long_term(text);
        assert_eq!(report["memories"], 300, "{text}: {report}");
        assert_eq!(report["raw_messages"], 300, "{text}: {report}");
        assert_eq!(report["recall_filtered"], serde_json::json!([]), "{text}");
        for row in ["recall", "recall_hand_set_ranking", "recall_text_only"] {
            let p50 = report[row]["p50_ms"].as_f64().unwrap();
            assert!(p50 > 0.0, "{text}: {row} {report}");
        }
        let cpu = report["vectors"]["cpu_ms_per_recall_approximate"].as_f64();
        assert!(cpu.is_some_and(|ms| ms >= 0.0), "{text}: {report}");
        // Every query ran once more, from several callers at once.
        let concurrent = &report["vectors"]["concurrent"];
        assert_eq!(concurrent["callers"], 8, "{text}: {report}");
        let rate = concurrent["recalls_per_sec"].as_f64().unwrap();
        assert!(rate > 0.0, "{text}: {report}");
    }
}
