//! `import` and `export`: a session as JSONL, one record per line, in the format of
//! `memory_engine::session_transfer` (the server streams the same lines).

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use indicatif::{ProgressBar, ProgressStyle};
use memory_core::MemoryError;
use serde_json::json;

use super::{CliError, remote};
use crate::app::{App, session_id};
use crate::cli::Format;
use crate::output;

const PAGE: usize = 1_000;

pub async fn export(app: &App, session: &str, output: Option<PathBuf>) -> Result<(), CliError> {
    if let Some(location) = output.as_deref().and_then(remote::location) {
        let staged = tempfile::NamedTempFile::new()
            .map_err(|e| CliError::io("creating a temporary file", e))?;
        Box::pin(export(app, session, Some(staged.path().to_owned()))).await?;
        return remote::upload(&app.deployment, location, staged.path()).await;
    }
    let id = session_id(session)?;
    // The first page proves the session exists before a file is created.
    let mut page = app.manager.export_page(&id, None, PAGE).await?;
    let sink: Box<dyn Write> = match &output {
        Some(path) => Box::new(
            File::create(path)
                .map_err(|e| CliError::io(format!("creating {}", path.display()), e))?,
        ),
        None => Box::new(std::io::stdout().lock()),
    };
    let mut out = BufWriter::new(sink);
    let write_err = |e| CliError::io("writing the export", e);
    let mut count = 0usize;
    loop {
        for line in &page.lines {
            out.write_all(line.as_bytes()).map_err(write_err)?;
            out.write_all(b"\n").map_err(write_err)?;
        }
        count += page.lines.len();
        match page.next.take() {
            Some(next) => page = app.manager.export_page(&id, Some(next), PAGE).await?,
            None => break,
        }
    }
    out.flush().map_err(write_err)?;
    if let Some(path) = output {
        // The session record is one of the lines.
        eprintln!(
            "exported {} message(s) to {}",
            count.saturating_sub(1),
            path.display()
        );
    }
    Ok(())
}

/// The file's lines, read again on every call (validation and import each read it once).
fn lines(path: &Path) -> Result<impl Iterator<Item = memory_core::Result<String>>, CliError> {
    let file =
        File::open(path).map_err(|e| CliError::io(format!("opening {}", path.display()), e))?;
    Ok(BufReader::new(file)
        .lines()
        .map(|l| l.map_err(|e| MemoryError::backend("file", e))))
}

/// Names the file in a line's error: `line 4: ...` becomes `chat.jsonl:4: ...`.
fn in_file(path: &Path, error: MemoryError) -> CliError {
    match error {
        MemoryError::InvalidInput { message } => match message
            .strip_prefix("line ")
            .and_then(|rest| rest.split_once(": "))
        {
            Some((number, rest)) => CliError::Input(format!("{}:{number}: {rest}", path.display())),
            None => CliError::Input(format!("{}: {message}", path.display())),
        },
        other => CliError::Memory(other),
    }
}

/// Validates the whole file first (every line parses, every id follows the id rule, every
/// message fits the store's row limit, every parent is earlier in the file or already
/// stored), naming the line of the first problem; nothing is written when one is found. Then
/// imports: session records exactly as exported, messages in batches (insert-if-absent, so a
/// second import, or two at once, changes nothing).
pub async fn import(app: &App, path: &Path, format: Format) -> Result<(), CliError> {
    if let Some(location) = remote::location(path) {
        let staged = remote::download(&app.deployment, location).await?;
        return Box::pin(import(app, staged.path(), format)).await;
    }
    let total = app
        .manager
        .validate_import(lines(path)?)
        .await
        .map_err(|e| in_file(path, e))?;
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} messages ({per_sec}, eta {eta})")
            .map_err(|e| CliError::Input(e.to_string()))?,
    );
    let report = app
        .manager
        .import_lines(lines(path)?, &mut |n| bar.inc(n))
        .await
        .map_err(|e| in_file(path, e))?;
    bar.finish_and_clear();
    if format.json {
        return output::json(&json!({
            "messages": total, "inserted": report.inserted,
            "already_present": report.already_present, "sessions_created": report.sessions_created,
        }));
    }
    println!(
        "imported {total} message(s): {} new, {} already present; {} session(s) created",
        report.inserted, report.already_present, report.sessions_created
    );
    Ok(())
}
