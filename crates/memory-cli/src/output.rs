//! Printing: one stable JSON shape per read command, and a readable text form.

use chrono::{DateTime, Utc};
use memory_core::{Part, SearchHit, SessionInfo, Timestamp, UiMessage};
use serde::Serialize;

use crate::commands::CliError;

/// Prints a value as pretty JSON.
pub fn json<T: Serialize>(value: &T) -> Result<(), CliError> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

/// RFC 3339 time of a timestamp.
pub fn time(ts: Timestamp) -> String {
    DateTime::<Utc>::from_timestamp_millis(ts.millis())
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        .unwrap_or_else(|| ts.millis().to_string())
}

/// One line per session.
pub fn session_line(info: &SessionInfo) -> String {
    format!(
        "{}  {}  updated {}  tokens {}/{}",
        info.id,
        info.name.as_deref().unwrap_or("(unnamed)"),
        time(info.updated_at),
        info.usage.input_tokens,
        info.usage.output_tokens,
    )
}

/// A session's details.
pub fn session_details(info: &SessionInfo) {
    println!("id:          {}", info.id);
    println!(
        "name:        {}",
        info.name.as_deref().unwrap_or("(unnamed)")
    );
    if let Some(parent) = &info.parent_session_id {
        println!("parent:      {parent}");
    }
    println!(
        "profile:     {}",
        info.profile.as_deref().unwrap_or("(unbound)")
    );
    if let Some(model) = &info.model {
        println!("model:       {model}");
    }
    if let Some(source) = &info.source {
        println!("source:      {source}");
    }
    println!(
        "usage:       {} in / {} out tokens, cost {}",
        info.usage.input_tokens, info.usage.output_tokens, info.usage.cost
    );
    if let Some(reason) = &info.end_reason {
        println!("ended:       {reason}");
    }
    println!("created:     {}", time(info.created_at));
    println!("updated:     {}", time(info.updated_at));
}

fn clip(text: &str, max: usize) -> String {
    let flat = text.replace('\n', " ");
    if flat.chars().count() <= max {
        flat
    } else {
        format!("{}…", flat.chars().take(max).collect::<String>())
    }
}

/// A message as a few readable lines.
pub fn message(m: &UiMessage) {
    println!("[{}] {}", m.role, m.id);
    for part in &m.parts {
        match part {
            Part::Text(t) => println!("    {}", clip(&t.text, 200)),
            Part::Reasoning(r) => println!("    (reasoning) {}", clip(&r.text, 120)),
            Part::Tool(t) | Part::DynamicTool(t) => {
                let output = t
                    .output
                    .as_ref()
                    .map(|o| format!(" -> {}", clip(&o.to_string(), 100)))
                    .or_else(|| t.error_text.as_ref().map(|e| format!(" !! {e}")))
                    .unwrap_or_default();
                let input = t
                    .input
                    .as_ref()
                    .map(|i| clip(&i.to_string(), 80))
                    .unwrap_or_default();
                println!(
                    "    tool {}({input}) [{}]{output}",
                    t.tool_name,
                    t.state.as_str()
                );
            }
            Part::StepStart(_) => {}
            other => println!("    ({})", other.type_name()),
        }
    }
}

/// Search hits, best first.
pub fn hits(hits: &[SearchHit]) {
    if hits.is_empty() {
        println!("No results found.");
    }
    for (rank, hit) in hits.iter().enumerate() {
        println!(
            "{:>3}. {:.3}  {} / {} [{}]  {}",
            rank + 1,
            hit.score,
            hit.session_id,
            hit.message_id,
            hit.role,
            clip(&hit.content, 120)
        );
    }
}

/// A progress bar on standard error for a long operation; hidden for `--json` output or when
/// standard error is not a terminal (so scripts and logs stay clean).
pub fn progress_bar(json: bool, unit: &str) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if json || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(0);
    if let Ok(style) = indicatif::ProgressStyle::with_template(&format!(
        "{{bar:40}} {{pos}}/{{len}} {unit} ({{per_sec}}, eta {{eta}})"
    )) {
        bar.set_style(style);
    }
    bar
}

/// What a ship into a profile did, in one line.
pub fn ship_line(report: &memory_engine::profile_link::ShipReport) -> String {
    match &report.job {
        None => format!(
            "nothing new to ship to profile {} ({} message(s) shipped before)",
            report.profile, report.already_shipped
        ),
        Some(job) => format!(
            "shipped {} message(s) to profile {} (job {}, {}; {} shipped before)",
            report.shipped,
            report.profile,
            job.id,
            job.status.as_str(),
            report.already_shipped
        ),
    }
}
