//! `profile` commands: long-term memory per profile, one SQLite file each.

use memory_core::ports::{MemoryFilter, MemoryKind};
use memory_core::{MemoryError, SessionId, Timestamp, UiMessage};
use memory_engine::long_term::{
    Category, IngestJob, IngestMessage, JobStatus, MemoryService, ProfileSettings, RecallItem,
    RecallRequest, RememberRequest, StageUsage, normalize_key,
};
use memory_engine::profile_link::ShipSelection;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::Path;

use super::CliError;
use crate::cli::ProfileCommand;
use crate::output;

fn kind(s: &str) -> Result<MemoryKind, CliError> {
    MemoryKind::parse(s).ok_or_else(|| {
        CliError::Input(format!(
            "unknown kind {s:?}: expected fact, event, instruction or task"
        ))
    })
}

/// Reads `(session, message)` pairs; every line is checked before anything is stored.
fn read_messages(
    file: &Path,
    session: Option<&str>,
) -> Result<Vec<(SessionId, IngestMessage)>, CliError> {
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
        let message = IngestMessage::from_ui_message(&message).map_err(|e| at(e.to_string()))?;
        out.push((
            SessionId::new(session).map_err(|e| at(e.to_string()))?,
            message,
        ));
    }
    Ok(out)
}

/// One line (and the problems) of a job.
fn print_job(job: &IngestJob) {
    let r = &job.extraction;
    let llm = job
        .usage
        .stages
        .iter()
        .filter(|(stage, _)| stage.as_str() != "embedding")
        .fold(StageUsage::default(), |mut sum, (_, u)| {
            sum.calls += u.calls;
            sum.requests += u.requests;
            sum.repairs += u.repairs;
            sum
        });
    println!(
        "job {} [{}] session {}: {} new / {} known message(s); {} candidate(s): {} passed, {} corrected, {} dropped; {} memories stored, {} superseded; {} vector(s); {} LLM call(s) in {} request(s), {} repair(s)",
        job.id,
        job.status.as_str(),
        job.session_id,
        job.new_messages,
        job.known_messages,
        r.candidates,
        r.passed,
        r.corrected,
        r.dropped,
        r.stored,
        r.superseded,
        job.vectorized,
        llm.calls,
        llm.requests,
        llm.repairs,
    );
    if let Some(error) = &job.error {
        let what = if job.status == JobStatus::Failed {
            "failed"
        } else {
            "errors"
        };
        println!("  {what}: {error}");
    }
    for problem in &r.problems {
        println!("  problem: {problem}");
    }
    for d in &job.degraded {
        println!("  degraded: {}: {}", d.feature, d.reason);
    }
}

/// Where the background worker of `profile` logs.
fn worker_log(data_dir: &Path, profile: &str) -> std::path::PathBuf {
    data_dir
        .join("profiles")
        .join(format!("{profile}.jobs.log"))
}

/// An advisory lock a running worker holds on `<profiles>/PROFILE.worker.lock`, so an ingest
/// starts no second worker for the same profile (leases would keep two from running one job,
/// but each would be a process).
struct WorkerLock(Option<std::fs::File>);

impl WorkerLock {
    fn path(data_dir: &Path, profile: &str) -> std::path::PathBuf {
        data_dir
            .join("profiles")
            .join(format!("{profile}.worker.lock"))
    }

    fn open(data_dir: &Path, profile: &str) -> Result<std::fs::File, CliError> {
        let path = Self::path(data_dir, profile);
        std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| CliError::io(format!("opening {}", path.display()), e))
    }

    /// Takes the lock if it is free; a worker already holding it is no error (this run is
    /// safe beside it: jobs are claimed under leases).
    fn hold(data_dir: &Path, profile: &str) -> Result<Self, CliError> {
        if !data_dir.join("profiles").is_dir() {
            return Ok(Self(None)); // no profile yet, so no job and no worker
        }
        let file = Self::open(data_dir, profile)?;
        Ok(Self(file.try_lock().ok().map(|()| file)))
    }

    /// True when a worker holds the lock now.
    fn held(data_dir: &Path, profile: &str) -> Result<bool, CliError> {
        if !data_dir.join("profiles").is_dir() {
            return Ok(false);
        }
        let file = Self::open(data_dir, profile)?;
        match file.try_lock() {
            Ok(()) => Ok(false),
            Err(std::fs::TryLockError::WouldBlock) => Ok(true),
            Err(std::fs::TryLockError::Error(e)) => {
                Err(CliError::io("locking the worker lock file", e))
            }
        }
    }
}

impl Drop for WorkerLock {
    fn drop(&mut self) {
        if let Some(file) = &self.0 {
            let _ = file.unlock();
        }
    }
}

/// Starts `memory profile jobs PROFILE --run` detached, logging to `<profiles>/PROFILE.jobs.log`.
pub(crate) fn spawn_worker(data_dir: &Path, profile: &str) -> Result<(), CliError> {
    if WorkerLock::held(data_dir, profile)? {
        tracing::debug!(profile, "a worker is running; it will take the new jobs");
        return Ok(());
    }
    let exe = std::env::current_exe().map_err(|e| CliError::io("locating the memory binary", e))?;
    let log_path = worker_log(data_dir, profile);
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .map_err(|e| CliError::io(format!("opening {}", log_path.display()), e))?;
    let err = log
        .try_clone()
        .map_err(|e| CliError::io("duplicating the log handle", e))?;
    std::process::Command::new(exe)
        .arg("--data-dir")
        .arg(data_dir)
        .args(["profile", "jobs", profile, "--run"])
        .stdin(std::process::Stdio::null())
        .stdout(log)
        .stderr(err)
        .spawn()
        .map_err(|e| CliError::io("starting the background worker", e))?;
    Ok(())
}

pub async fn run(data_dir: &Path, command: ProfileCommand) -> Result<(), CliError> {
    let (service, note) = crate::app::memory_service(data_dir).await?;
    if let Some(note) = note {
        tracing::info!("{note}");
    }
    match command {
        ProfileCommand::Ingest {
            profile,
            file,
            session,
            from_session,
            leaf,
            from,
            to,
            metadata,
            wait,
            format,
        } => {
            let metadata = metadata_arg(metadata.as_deref())?;
            if let Some(stored) = from_session {
                let selection = ShipSelection { leaf, from, to };
                return ingest_stored(
                    data_dir,
                    &service,
                    &profile,
                    &stored,
                    &selection,
                    wait,
                    format.json,
                )
                .await;
            }
            let Some(file) = file else {
                return Err(CliError::Input(
                    "give a FILE of messages, or --from-session SESSION".into(),
                ));
            };
            let messages = read_messages(&file, session.as_deref())?;
            let mut runs: Vec<(SessionId, Vec<IngestMessage>)> = Vec::new();
            for (session, m) in messages {
                let m = m.with_metadata(metadata.clone());
                match runs.last_mut() {
                    Some((s, list)) if *s == session => list.push(m),
                    _ => runs.push((session, vec![m])),
                }
            }
            let mut jobs = Vec::new();
            for (session, run) in runs {
                if run.iter().all(|m| m.content.trim().is_empty()) {
                    continue;
                }
                jobs.push(
                    service
                        .enqueue_ingest(&profile, session.as_str(), run)
                        .await?,
                );
            }
            if wait {
                let bar = output::progress_bar(format.json, "jobs");
                bar.set_length(jobs.len() as u64);
                let mut done = Vec::new();
                for job in &jobs {
                    done.push(service.run_job(&profile, &job.id).await?);
                    bar.inc(1);
                }
                bar.finish_and_clear();
                jobs = done;
            } else if !jobs.is_empty() {
                spawn_worker(data_dir, &profile)?;
            }
            let (new, known): (u64, u64) = jobs.iter().fold((0, 0), |(n, k), j| {
                (n + j.new_messages, k + j.known_messages)
            });
            if format.json {
                output::json(
                    &json!({"profile": profile, "new": new, "known": known, "jobs": jobs}),
                )?;
            } else {
                println!("ingested into {profile}: {new} new message(s), {known} already known");
                for job in &jobs {
                    print_job(job);
                }
                if !wait && !jobs.is_empty() {
                    println!(
                        "extraction and vectorization continue in the background: `memory profile jobs {profile}`"
                    );
                }
            }
            // A script waiting for the jobs must be able to tell that one failed, or finished
            // with errors (memories missing).
            let failed: Vec<&IngestJob> = jobs
                .iter()
                .filter(|j| wait && j.status.has_errors())
                .collect();
            match failed.first() {
                None => Ok(()),
                Some(first) => Err(CliError::Input(format!(
                    "{} of {} ingest job(s) failed or finished with errors; first: job {} {}: {}",
                    failed.len(),
                    jobs.len(),
                    first.id,
                    match first.failed_stage {
                        Some(stage) => format!("failed at {}", stage.as_str()),
                        None => first.status.as_str().to_owned(),
                    },
                    first.error.as_deref().unwrap_or("unknown error")
                ))),
            }
        }
        ProfileCommand::Jobs {
            profile,
            run,
            retry_failed,
            format,
        } => {
            if run {
                // While this runs, ingests do not start another worker (they see the lock).
                let lock = WorkerLock::hold(data_dir, &profile)?;
                service.resume_jobs(&profile, retry_failed).await?;
                drop(lock);
                // A job queued between the last claim and the unlock saw the lock and
                // started no worker: take it now.
                service.resume_jobs(&profile, false).await?;
            }
            let jobs = service.jobs(&profile).await?;
            if format.json {
                return output::json(&json!({"profile": profile, "jobs": jobs}));
            }
            if jobs.is_empty() {
                println!("No jobs.");
            }
            for job in &jobs {
                print_job(job);
            }
            Ok(())
        }
        ProfileCommand::Settings {
            profile,
            instructions,
            categories,
            language,
            clear,
            format,
        } => {
            let changing =
                clear || instructions.is_some() || !categories.is_empty() || language.is_some();
            if changing {
                let mut settings = if clear {
                    ProfileSettings::default()
                } else {
                    match service.profile_settings(&profile).await {
                        Ok(own) => own,
                        Err(MemoryError::NotFound { .. }) => ProfileSettings::default(),
                        Err(e) => return Err(e.into()),
                    }
                };
                if let Some(text) = instructions {
                    settings.instructions = Some(if text == "-" {
                        std::io::read_to_string(std::io::stdin())
                            .map_err(|e| CliError::io("reading instructions from stdin", e))?
                    } else {
                        text
                    });
                }
                if !categories.is_empty() {
                    settings.categories = categories
                        .iter()
                        .map(|c| {
                            let (name, description) = c.split_once('=').unwrap_or((c, ""));
                            Category {
                                name: name.trim().to_owned(),
                                description: description.trim().to_owned(),
                            }
                        })
                        .collect();
                }
                if language.is_some() {
                    settings.language = language;
                }
                service.set_profile_settings(&profile, settings).await?;
            }
            let own = service.profile_settings(&profile).await?;
            let effective = service.effective_settings(&profile).await?;
            if format.json {
                return output::json(&json!({"settings": own, "effective": effective}));
            }
            println!(
                "instructions: {}",
                effective.instructions.as_deref().unwrap_or("(none)")
            );
            if effective.categories.is_empty() {
                println!("categories: (none)");
            }
            for c in &effective.categories {
                println!("category: {} {}", c.name, c.description);
            }
            println!(
                "language: {}",
                effective
                    .language
                    .as_deref()
                    .unwrap_or("(the messages' own)")
            );
            Ok(())
        }
        ProfileCommand::Remember {
            profile,
            text,
            kind: k,
            key,
            session,
            metadata,
            expires_at,
            expires_in,
            format,
        } => {
            let request = RememberRequest {
                content: text,
                session_id: session,
                kind: k.as_deref().map(kind).transpose()?,
                key,
                metadata: metadata_arg(metadata.as_deref())?,
                expires_at: expiry_arg(expires_at.as_deref(), expires_in.as_deref())?,
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
            answer,
            where_metadata,
            format,
        } => {
            let mut request = RecallRequest::new(query.clone(), limit);
            request.synthesize = answer;
            request.metadata = where_filter(where_metadata.as_deref())?;
            let response = service.recall(&profile, request).await?;
            if format.json {
                return output::json(
                    &json!({"profile": profile, "query": query, "response": response}),
                );
            }
            if let Some(answer) = &response.answer {
                println!(
                    "{}\n  cites: {}\n",
                    answer.answer,
                    answer.citations.join(", ")
                );
            }
            if response.hits.is_empty() {
                println!("Nothing recalled.");
            }
            for h in &response.hits {
                match &h.item {
                    RecallItem::Memory(m) => println!(
                        "{:.4}  [{:?}] {}  (id {})",
                        h.score, m.kind, m.content, m.id
                    ),
                    RecallItem::Raw {
                        session_id,
                        content,
                        created_at,
                        ..
                    } => println!(
                        "{:.4}  [raw, {session_id}, {}] \"{content}\"",
                        h.score,
                        created_at.date()
                    ),
                }
                if explain {
                    for r in &h.ranks {
                        println!("          {} #{} ({:.3})", r.channel, r.rank, r.score);
                    }
                }
            }
            if explain {
                println!("terms: {}", response.terms.join(" "));
                if let Some(w) = &response.date_window {
                    println!(
                        "date window: {} up to {} (\"{}\", the dated channel)",
                        w.from.date(),
                        w.to.date(),
                        w.words.join(" ")
                    );
                }
                for fact in &response.temporal_facts {
                    println!("date fact: {fact}");
                }
            }
            for d in &response.degraded {
                eprintln!("degraded: {}: {}", d.feature, d.reason);
            }
            Ok(())
        }
        ProfileCommand::List {
            profile,
            all,
            kind: k,
            key,
            session,
            where_metadata,
            limit,
            cursor,
            format,
        } => {
            let metadata = where_filter(where_metadata.as_deref())?;
            let filter = MemoryFilter {
                metadata,
                kind: k.as_deref().map(kind).transpose()?,
                key: key.as_deref().map(normalize_key),
                session_id: session,
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
            let now = Timestamp(chrono::Utc::now().timestamp_millis());
            for m in &page.memories {
                let state = match &m.forgotten {
                    Some(f) if f.reason == memory_engine::long_term::EXPIRED_REASON => " (expired)",
                    Some(_) => " (forgotten)",
                    None if m.is_expired_at(now) => " (expired)",
                    None if m.superseded_by.is_some() => " (superseded)",
                    None => "",
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
        ProfileCommand::Export {
            profile,
            output,
            vectors,
        } => {
            if let Some(location) = output.as_deref().and_then(super::remote::location) {
                let staged = tempfile::NamedTempFile::new()
                    .map_err(|e| CliError::io("creating a temporary file", e))?;
                let staged_path = staged.path().to_owned();
                Box::pin(run(
                    data_dir,
                    ProfileCommand::Export {
                        profile,
                        output: Some(staged_path.clone()),
                        vectors,
                    },
                ))
                .await?;
                let deployment = memory_compose::Deployment::open(data_dir)?;
                return super::remote::upload(&deployment, location, &staged_path).await;
            }
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
            service.export(&profile, vectors, &mut write).await?;
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
            if let Some(location) = super::remote::location(&file) {
                let deployment = memory_compose::Deployment::open(data_dir)?;
                let staged = super::remote::download(&deployment, location).await?;
                return Box::pin(run(
                    data_dir,
                    ProfileCommand::Import {
                        profile,
                        file: staged.path().to_owned(),
                        format,
                    },
                ))
                .await;
            }
            let text = std::fs::read_to_string(&file)
                .map_err(|e| CliError::io(format!("reading {}", file.display()), e))?;
            let lines: Vec<String> = text.lines().map(str::to_owned).collect();
            let report = service.import(&profile, &lines).await?;
            if format.json {
                return output::json(
                    &json!({"raw_new": report.raw_new, "raw_known": report.raw_known,
                    "memories_new": report.memories_new, "memories_known": report.memories_known,
                    "vectors": report.vectors, "settings": report.settings}),
                );
            }
            println!(
                "imported into {profile}: {} raw message(s) new, {} known; {} memories new, {} known{}",
                report.raw_new,
                report.raw_known,
                report.memories_new,
                report.memories_known,
                if report.settings {
                    "; its extraction settings"
                } else {
                    ""
                }
            );
            Ok(())
        }
        ProfileCommand::Purge {
            profile,
            id,
            with_sources,
        } => {
            let report = service.purge(&profile, &id, with_sources).await?;
            if !report.memory {
                return Err(MemoryError::not_found("memory", id).into());
            }
            println!(
                "purged {id}: {} vector(s), {} source message(s), {} memories merged into it",
                report.vectors, report.raw_messages, report.absorbed
            );
            Ok(())
        }
        ProfileCommand::Profiles {
            after,
            limit,
            format,
        } => {
            let (names, next) = match limit {
                Some(limit) => service.list_profiles_page(after.as_deref(), limit).await?,
                None => {
                    let mut names = service.list_profiles().await?;
                    if let Some(after) = &after {
                        names.retain(|name| name > after);
                    }
                    (names, None)
                }
            };
            if format.json {
                return output::json(&match next {
                    Some(next) => json!({"profiles": names, "next": next}),
                    None => json!({"profiles": names}),
                });
            }
            for name in names {
                println!("{name}");
            }
            Ok(())
        }
        ProfileCommand::Delete { profile } => {
            if !service.delete_profile(&profile).await? {
                return Err(MemoryError::not_found("profile", profile).into());
            }
            // The background worker's log names the profile and quotes its errors: it goes too.
            // (A worker still running loses its lease with the jobs and stops.)
            for file in [
                worker_log(data_dir, &profile),
                WorkerLock::path(data_dir, &profile),
            ] {
                match std::fs::remove_file(&file) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => {
                        return Err(CliError::io(format!("removing {}", file.display()), e));
                    }
                }
            }
            println!("deleted profile {profile}");
            Ok(())
        }
        ProfileCommand::Consolidate {
            profile,
            dry_run,
            format,
        } => {
            let report = service.consolidate(&profile, dry_run).await?;
            if format.json {
                return output::json(&report);
            }
            print_consolidation(&profile, &report);
            Ok(())
        }
        ProfileCommand::Contradictions { profile, format } => {
            let flagged = service.contradictions(&profile).await?;
            if format.json {
                return output::json(&flagged);
            }
            if flagged.is_empty() {
                println!("{profile}: no contradictions flagged");
            }
            for c in &flagged {
                print_contradiction(&output::time(c.flagged_at), c);
            }
            Ok(())
        }
        ProfileCommand::Digest {
            profile,
            refresh,
            force,
            format,
        } => {
            let (digest, note) = if refresh {
                let report = service.refresh_digest(&profile, force).await?;
                if format.json {
                    return output::json(&report);
                }
                let verb = if report.written {
                    "written"
                } else {
                    "not written"
                };
                (report.digest, Some(format!("{verb}: {}", report.reason)))
            } else {
                if !service.profiles().exists(&profile).await? {
                    return Err(MemoryError::not_found("profile", profile).into());
                }
                let digest = service.digest(&profile).await?;
                if format.json {
                    return output::json(&digest);
                }
                (digest, None)
            };
            if let Some(note) = note {
                println!("{note}");
            }
            match digest {
                Some(d) => {
                    println!("{}", d.text);
                    println!(
                        "(written {} from {} memories; draws on {})",
                        output::time(d.generated_at),
                        d.read,
                        d.sources.join(", ")
                    );
                }
                None => println!("{profile} has no digest"),
            }
            Ok(())
        }
        ProfileCommand::Block {
            profile,
            tokens,
            top,
            format,
        } => {
            let deployment = memory_compose::Deployment::open(data_dir)?;
            let counter = memory_compose::token_counter(deployment.config())?;
            let tokens = tokens.unwrap_or(deployment.config().sessions.profile_block_tokens);
            let mut choice = memory_engine::profile_link::choose_profile_block(
                &service,
                &profile,
                Some(tokens),
                counter.as_ref(),
            )
            .await?;
            choice.candidates.truncate(top);
            if format.json {
                return output::json(&choice);
            }
            println!("{}", choice.text.as_deref().unwrap_or("(empty)"));
            println!();
            println!(
                "{} instruction(s) shown; facts and open tasks by score (kind × (0.6 said + 0.4 used)):",
                choice.instructions.len()
            );
            for c in &choice.candidates {
                println!(
                    "{} {:.3} (kind {:.1}, said {:.2}, used {:.2}) {} {}",
                    if c.chosen { "+" } else { " " },
                    c.score.score,
                    c.score.kind,
                    c.score.said,
                    c.score.used,
                    c.memory.id,
                    one_line(&c.memory.content)
                );
            }
            Ok(())
        }
        ProfileCommand::Reembed { profile, format } => {
            let report = service.reembed(&profile).await?;
            if format.json {
                return output::json(&report);
            }
            println!(
                "re-embedded {profile} with {}: {} raw message(s), {} memories",
                report.model, report.raw, report.memories
            );
            Ok(())
        }
    }
}

/// A text on one line, cut at 100 characters.
fn one_line(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(100) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line,
    }
}

/// A consolidation report for people: each merge with its survivor, what it absorbed and why.
fn print_consolidation(profile: &str, report: &memory_engine::long_term::ConsolidationReport) {
    let verb = if report.dry_run {
        "would merge"
    } else {
        "merged"
    };
    println!(
        "{profile}: {} memories read, {} pairs judged; {verb} {} memories into {} survivors{}",
        report.considered,
        report.pairs_judged,
        report.absorbed,
        report.merges.len(),
        if report.truncated {
            " (only the oldest were read: the profile holds more than a run reads)"
        } else {
            ""
        }
    );
    for merge in &report.merges {
        println!(
            "- keep {} ({}): {}",
            merge.survivor.id,
            merge.kind.as_str(),
            one_line(&merge.survivor.content)
        );
        for absorbed in &merge.absorbed {
            println!(
                "    absorbs {}: {}",
                absorbed.id,
                one_line(&absorbed.content)
            );
        }
        println!("    why: {}", merge.reason);
    }
    for rejected in &report.rejected {
        println!(
            "- not merged (the LLM disagreed): {} and {} more",
            one_line(&rejected.survivor.content),
            rejected.absorbed.len()
        );
    }
    if report.stale > 0 {
        println!(
            "{} planned merge(s) skipped: a memory changed meanwhile",
            report.stale
        );
    }
    for c in &report.contradictions {
        print_contradiction("flagged", c);
    }
    for d in &report.degraded {
        println!("note: {}: {}", d.feature, d.reason);
    }
}

fn print_contradiction(label: &str, c: &memory_engine::long_term::Contradiction) {
    println!(
        "- {label} {}: {}\n    against {}: {}\n    why: {}",
        c.first.id,
        one_line(&c.first.content),
        c.second.id,
        one_line(&c.second.content),
        c.reason
    );
}

/// Runs a job to its end in this process, or, when a worker holds it, waits for that
/// worker to finish it.
pub(crate) async fn wait_for_job(
    memory: &MemoryService,
    profile: &str,
    id: &str,
) -> Result<IngestJob, CliError> {
    loop {
        match memory.run_job(profile, id).await {
            Ok(job) => return Ok(job),
            Err(memory_core::MemoryError::Conflict { .. }) => {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// `profile ingest P --from-session S`: the stored session's messages (those not shipped
/// before), with no re-sending.
async fn ingest_stored(
    data_dir: &Path,
    memory: &MemoryService,
    profile: &str,
    session: &str,
    selection: &ShipSelection,
    wait: bool,
    json: bool,
) -> Result<(), CliError> {
    let app = crate::app::App::open(data_dir).await?;
    let result = app
        .manager
        .ship(profile, &crate::app::session_id(session)?, selection)
        .await;
    app.close().await;
    let mut report = result?;
    // The deployment's runner started a background worker for a queued job; `--wait` runs
    // it here (or waits for that worker).
    if wait && let Some(job) = &report.job {
        report.job = Some(wait_for_job(memory, profile, &job.id).await?);
    }
    if json {
        output::json(&report)
    } else {
        println!("{}", output::ship_line(&report));
        Ok(())
    }
}

/// `--metadata`: a flat JSON object (none when absent).
fn metadata_arg(text: Option<&str>) -> Result<memory_core::Metadata, CliError> {
    match text {
        Some(text) => serde_json::from_str::<memory_core::Metadata>(text)
            .map_err(|e| CliError::Input(format!("--metadata: {e}"))),
        None => Ok(memory_core::Metadata::default()),
    }
}

/// `--expires-at` (RFC 3339) or `--expires-in` (a duration from now) as a time.
fn expiry_arg(at: Option<&str>, within: Option<&str>) -> Result<Option<Timestamp>, CliError> {
    if let Some(at) = at {
        let time = chrono::DateTime::parse_from_rfc3339(at).map_err(|e| {
            CliError::Input(format!(
                "--expires-at {at:?} is not an RFC 3339 time such as 2027-01-31T00:00:00Z: {e}"
            ))
        })?;
        return Ok(Some(Timestamp(time.timestamp_millis())));
    }
    let Some(within) = within else {
        return Ok(None);
    };
    let duration = humantime::parse_duration(within).map_err(|e| {
        CliError::Input(format!(
            "--expires-in {within:?} is not a duration such as 12h or 30d: {e}"
        ))
    })?;
    let millis = i64::try_from(duration.as_millis()).unwrap_or(i64::MAX);
    Ok(Some(Timestamp(
        chrono::Utc::now().timestamp_millis().saturating_add(millis),
    )))
}

/// `--where`'s metadata filter, checked.
fn where_filter(text: Option<&str>) -> Result<Option<memory_core::MetadataFilter>, CliError> {
    text.map(memory_core::MetadataFilter::parse)
        .transpose()
        .map_err(|e| CliError::Input(format!("--where: {e}")))
}
