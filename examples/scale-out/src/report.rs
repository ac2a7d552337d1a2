//! The numbers a run prints: a Markdown table of the operations, then why requests failed.

use std::time::Duration;

use crate::cluster::Error;
use crate::load::{Ledger, Stats};
use crate::verify::Findings;

/// The most problems a failed run prints.
const MOST_PROBLEMS: usize = 30;

/// The `p`th percentile of sorted microseconds, in milliseconds.
pub fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)] as f64 / 1000.0
}

/// Prints one row per operation (`with_compaction` false leaves out the compaction row),
/// then each failure reason with its count.
pub fn operations(stats: &mut Stats, elapsed: Duration, with_compaction: bool) {
    println!(
        "| operation | acknowledged | failed | sent to the other server | per second | p50 ms | p95 ms | p99 ms |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    let mut reasons = Vec::new();
    for (name, op) in stats.ops() {
        if name == "compact" && !with_compaction {
            continue;
        }
        op.latencies.sort_unstable();
        println!(
            "| {name} | {} | {} | {} | {:.0} | {:.1} | {:.1} | {:.1} |",
            op.latencies.len(),
            op.failures,
            op.failed_over,
            op.latencies.len() as f64 / elapsed.as_secs_f64(),
            percentile(&op.latencies, 50.0),
            percentile(&op.latencies, 95.0),
            percentile(&op.latencies, 99.0),
        );
        for (reason, count) in &op.reasons {
            reasons.push(format!("{name} failed {count} time(s): {reason}"));
        }
    }
    for line in reasons {
        println!("{line}");
    }
}

/// One deployment's checks in a line: what its clients were told succeeded, against what it
/// holds.
pub fn checked(ledger: &Ledger, findings: &Findings) -> String {
    format!(
        "{} acknowledged appends among {} stored messages, {} acknowledged memories among {} current, {} acknowledged jobs among {}",
        ledger.appends.len(),
        findings.messages_stored,
        ledger.remembers.len(),
        findings.memories_current,
        ledger.jobs.len(),
        findings.jobs,
    )
}

/// Prints `passed` when there is no problem; else the first problems, and an error saying
/// how many there were.
pub fn verdict(problems: &[String], passed: &str) -> Result<(), Error> {
    if problems.is_empty() {
        println!("{passed}");
        return Ok(());
    }
    for problem in problems.iter().take(MOST_PROBLEMS) {
        println!("PROBLEM: {problem}");
    }
    Err(format!("{} problem(s)", problems.len()).into())
}
