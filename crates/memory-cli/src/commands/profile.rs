//! `profile` commands: long-term memory per profile, one SQLite file each.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::sync::Arc;

use memory_core::ports::{MemoryFilter, MemoryKind, SystemClock};
use memory_core::{MemoryError, SessionId, UiMessage};
use memory_engine::long_term::{MemoryService, RecallItem, RememberRequest};
use memory_sqlite::SqliteProfiles;
use serde_json::{Value, json};

use super::CliError;
use crate::cli::ProfileCommand;
use crate::output;

fn kind(s: &str) -> Result<MemoryKind, CliError> {
    match s {
        "fact" => Ok(MemoryKind::Fact),
        "event" => Ok(MemoryKind::Event),
        "instruction" => Ok(MemoryKind::Instruction),
        "task" => Ok(MemoryKind::Task),
        other => Err(CliError::Input(format!(
            "unknown kind {other:?}: expected fact, event, instruction or task"
        ))),
    }
}

/// Reads `(session, message)` pairs; every line is checked before anything is stored.
fn read_messages(
    file: &Path,
    session: Option<&str>,
) -> Result<Vec<(SessionId, UiMessage)>, CliError> {
    let reader = BufReader::new(
        std::fs::File::open(file)
            .map_err(|e| CliError::io(format!("opening {}", file.display()), e))?,
    );
    let mut out = Vec::new();
    for (i, line) in reader.lines().enumerate() {
        let line = line.map_err(|e| CliError::io(format!("reading {}", file.display()), e))?;
        if line.trim().is_empty() {
            continue;
        }
        let at = |e: String| CliError::Input(format!("{}:{}: {e}", file.display(), i + 1));
        let value: Value = serde_json::from_str(&line).map_err(|e| at(e.to_string()))?;
        let (record_session, message) = match value.get("kind").and_then(Value::as_str) {
            Some("session") => continue,
            Some("message") => (
                value
                    .get("session_id")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                value["message"].clone(),
            ),
            _ => (None, value),
        };
        let message: UiMessage =
            serde_json::from_value(message).map_err(|e| at(format!("not a UIMessage: {e}")))?;
        let session = session
            .map(str::to_owned)
            .or(record_session)
            .ok_or_else(|| at("no session: pass --session".into()))?;
        out.push((
            SessionId::new(session).map_err(|e| at(e.to_string()))?,
            message,
        ));
    }
    Ok(out)
}

pub async fn run(data_dir: &Path, command: ProfileCommand) -> Result<(), CliError> {
    let service = MemoryService::new(
        Arc::new(SqliteProfiles::new(data_dir.join("profiles"))),
        Arc::new(SystemClock),
    );
    match command {
        ProfileCommand::Ingest {
            profile,
            file,
            session,
            format,
        } => {
            let messages = read_messages(&file, session.as_deref())?;
            let (mut new, mut known) = (0, 0);
            let mut i = 0;
            while i < messages.len() {
                let session = messages[i].0.clone();
                let run: Vec<UiMessage> = messages[i..]
                    .iter()
                    .take_while(|(s, _)| *s == session)
                    .map(|(_, m)| m.clone())
                    .collect();
                i += run.len();
                let report = service.ingest(&profile, &session, &run).await?;
                new += report.new;
                known += report.known;
            }
            if format.json {
                return output::json(&json!({"profile": profile, "new": new, "known": known}));
            }
            println!(
                "ingested {} message(s) into {profile}: {new} new, {known} already known",
                messages.len()
            );
            Ok(())
        }
        ProfileCommand::Remember {
            profile,
            text,
            kind: k,
            key,
            session,
            format,
        } => {
            let request = RememberRequest {
                content: text,
                session_id: session,
                kind: k.as_deref().map(kind).transpose()?,
                key,
            };
            let record = service.remember(&profile, request).await?;
            if format.json {
                return output::json(&record);
            }
            println!("{}", record.id);
            Ok(())
        }
        ProfileCommand::Recall {
            profile,
            query,
            limit,
            explain,
            format,
        } => {
            let hits = service.recall(&profile, &query, limit).await?;
            if format.json {
                let list: Vec<Value> = hits
                    .iter()
                    .map(|h| {
                        let item = match &h.item {
                            RecallItem::Memory(m) => json!({"type": "memory", "memory": m}),
                            RecallItem::Raw { id, session_id, content } => json!({"type": "raw", "id": id, "session_id": session_id, "content": content}),
                        };
                        let ranks: Vec<Value> = h.ranks.iter().map(|r| json!({"channel": r.channel, "rank": r.rank, "score": r.score})).collect();
                        json!({"item": item, "score": h.score, "ranks": ranks})
                    })
                    .collect();
                return output::json(&json!({"profile": profile, "query": query, "results": list}));
            }
            if hits.is_empty() {
                println!("Nothing recalled.");
            }
            for h in &hits {
                match &h.item {
                    RecallItem::Memory(m) => println!(
                        "{:.4}  [{:?}] {}  (id {})",
                        h.score, m.kind, m.content, m.id
                    ),
                    RecallItem::Raw {
                        session_id,
                        content,
                        ..
                    } => println!("{:.4}  [raw, {session_id}] \"{content}\"", h.score),
                }
                if explain {
                    for r in &h.ranks {
                        println!("          {} #{} ({:.3})", r.channel, r.rank, r.score);
                    }
                }
            }
            Ok(())
        }
        ProfileCommand::List {
            profile,
            all,
            limit,
            cursor,
            format,
        } => {
            let filter = MemoryFilter {
                include_superseded: all,
                include_forgotten: all,
                ..MemoryFilter::default()
            };
            let page = service.list(&profile, &filter, cursor, limit).await?;
            if format.json {
                return output::json(
                    &json!({"memories": page.memories, "next_cursor": page.next_cursor}),
                );
            }
            for m in &page.memories {
                let state = if m.forgotten.is_some() {
                    " (forgotten)"
                } else if m.superseded_by.is_some() {
                    " (superseded)"
                } else {
                    ""
                };
                println!(
                    "{}  {:?}  {}{}{state}",
                    m.id,
                    m.kind,
                    m.key
                        .as_deref()
                        .map(|k| format!("[{k}] "))
                        .unwrap_or_default(),
                    m.content
                );
            }
            if let Some(next) = page.next_cursor {
                println!("more: --cursor {next}");
            }
            Ok(())
        }
        ProfileCommand::Forget {
            profile,
            id,
            reason,
        } => {
            service.forget(&profile, &id, &reason).await?;
            println!("forgot {id}");
            Ok(())
        }
        ProfileCommand::Export { profile, output } => {
            let sink: Box<dyn std::io::Write + Send> = match &output {
                Some(path) => Box::new(
                    std::fs::File::create(path)
                        .map_err(|e| CliError::io(format!("creating {}", path.display()), e))?,
                ),
                None => Box::new(std::io::stdout()),
            };
            let mut out = std::io::BufWriter::new(sink);
            let mut write = |line: &str| -> memory_core::Result<()> {
                use std::io::Write;
                writeln!(out, "{line}").map_err(|e| MemoryError::backend("export", e))
            };
            service.export(&profile, &mut write).await?;
            use std::io::Write;
            out.flush()
                .map_err(|e| CliError::io("writing the export", e))?;
            Ok(())
        }
        ProfileCommand::Import {
            profile,
            file,
            format,
        } => {
            let text = std::fs::read_to_string(&file)
                .map_err(|e| CliError::io(format!("reading {}", file.display()), e))?;
            let lines: Vec<String> = text.lines().map(str::to_owned).collect();
            let report = service.import(&profile, &lines).await?;
            if format.json {
                return output::json(
                    &json!({"raw_new": report.raw_new, "raw_known": report.raw_known,
                    "memories_new": report.memories_new, "memories_known": report.memories_known}),
                );
            }
            println!(
                "imported into {profile}: {} raw message(s) new, {} known; {} memories new, {} known",
                report.raw_new, report.raw_known, report.memories_new, report.memories_known
            );
            Ok(())
        }
        ProfileCommand::Purge { profile, id } => {
            if !service.purge(&profile, &id).await? {
                return Err(MemoryError::not_found("memory", id).into());
            }
            println!("purged {id}");
            Ok(())
        }
    }
}
