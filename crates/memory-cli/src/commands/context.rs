//! `context`, `prompt`, `tools` and `config` commands.

use std::path::Path;

use memory_config::{CONFIG_FILE, MemoryConfig};
use memory_core::BlockKind;
use memory_engine::context::ToolFormat;
use serde_json::{Value, json};

use super::{CliError, argument_or_stdin};
use crate::app::{App, session_id};
use crate::cli::{ConfigCommand, ContextCommand, ToolsCommand};
use crate::output;

pub async fn run(app: &App, command: ContextCommand) -> Result<(), CliError> {
    match command {
        ContextCommand::List { session, format } => {
            let session = app.manager.session(&session_id(&session)?).await?;
            let blocks = session.context().blocks().await?;
            if format.json {
                return output::json(&json!({ "session_id": session.id(), "blocks": blocks }));
            }
            if blocks.is_empty() {
                println!("No blocks declared (add them to {CONFIG_FILE} in the data dir).");
            }
            for b in &blocks {
                let budget = b.max_tokens.map(|m| format!("/{m}")).unwrap_or_default();
                println!(
                    "{:<16} {:<10} {:<8} {:>6}{budget} tokens  {}",
                    b.label,
                    format!("{:?}", b.kind).to_lowercase(),
                    format!("{:?}", b.scope).to_lowercase(),
                    b.tokens,
                    b.description.as_deref().unwrap_or("")
                );
            }
            Ok(())
        }
        ContextCommand::Get {
            session,
            label,
            format,
        } => {
            let session = app.manager.session(&session_id(&session)?).await?;
            let block = session.context().get(&label).await?;
            if format.json {
                return output::json(&block);
            }
            println!("{}", block.content);
            Ok(())
        }
        ContextCommand::Set {
            session,
            label,
            content,
            title,
            description,
            format,
        } => {
            let session = app.manager.session(&session_id(&session)?).await?;
            let content = argument_or_stdin(content)?;
            let blocks = session.context();
            let kind = blocks.get(&label).await?.kind;
            if kind.is_keyed() {
                let key = blocks
                    .set_entry(&label, &content, title.as_deref(), description.as_deref())
                    .await?;
                if format.json {
                    return output::json(&json!({ "label": label, "key": key }));
                }
                println!("Indexed \"{key}\" in {label}.");
                return Ok(());
            }
            let block = blocks.replace(&label, &content).await?;
            written(block, format.json)
        }
        ContextCommand::Append {
            session,
            label,
            content,
            format,
        } => {
            let session = app.manager.session(&session_id(&session)?).await?;
            let block = session
                .context()
                .append(&label, &argument_or_stdin(content)?)
                .await?;
            written(block, format.json)
        }
    }
}

fn written(block: memory_core::ContextBlock, json: bool) -> Result<(), CliError> {
    if json {
        return output::json(&block);
    }
    let usage = match block.max_tokens {
        Some(max) => format!("{}/{max} tokens", block.tokens),
        None => format!("{} tokens", block.tokens),
    };
    println!(
        "Written to {} ({usage}). The frozen prompt changes on `memory prompt --refresh`.",
        block.label
    );
    Ok(())
}

pub async fn prompt(app: &App, session: &str, refresh: bool) -> Result<(), CliError> {
    let session = app.manager.session(&session_id(session)?).await?;
    let prompt = if refresh {
        session.refresh_system_prompt().await?
    } else {
        session.freeze_system_prompt().await?
    };
    println!("{prompt}");
    Ok(())
}

pub async fn tools(
    app: &App,
    call: Option<ToolsCommand>,
    session: Option<String>,
    format: &str,
) -> Result<(), CliError> {
    if let Some(ToolsCommand::Call {
        session,
        name,
        arguments,
    }) = call
    {
        let session = app.manager.session(&session_id(&session)?).await?;
        let text = argument_or_stdin(arguments)?;
        let arguments: Value = serde_json::from_str(text.trim())
            .map_err(|e| CliError::Input(format!("tool arguments are not JSON: {e}")))?;
        let result = match app.manager.execute_tool(&name, &arguments).await {
            Some(result) => result,
            None => session.execute_tool(&name, &arguments).await?,
        };
        println!("{result}");
        // The model reads an error result; a script needs the exit status to say it.
        if memory_engine::context::is_tool_error(&result) {
            return Err(CliError::Input(format!("tool {name} failed")));
        }
        return Ok(());
    }
    let session = session.ok_or_else(|| {
        CliError::Input("give a SESSION, or `tools call SESSION NAME ARGS`".into())
    })?;
    let format = ToolFormat::parse(format)?;
    let session = app.manager.session(&session_id(&session)?).await?;
    let mut definitions = session.tools().await?;
    definitions.extend(app.manager.tools());
    output::json(&format.export(&definitions))
}

pub fn check_config(command: &ConfigCommand, data_dir: &Path) -> Result<(), CliError> {
    let ConfigCommand::Check { file } = command;
    let path = file.clone().unwrap_or_else(|| data_dir.join(CONFIG_FILE));
    let config = MemoryConfig::load(&path).map_err(|e| CliError::Input(e.to_string()))?;
    println!("{}: ok, {} block(s)", path.display(), config.blocks.len());
    for block in &config.blocks {
        let kind = match block.kind {
            memory_config::BlockKindConfig::Readonly => BlockKind::ReadOnly,
            memory_config::BlockKindConfig::Writable => BlockKind::Writable,
            memory_config::BlockKindConfig::Searchable => BlockKind::Searchable,
            memory_config::BlockKindConfig::Skill => BlockKind::Skill,
            memory_config::BlockKindConfig::Profile => BlockKind::ReadOnly,
        };
        println!("  {} {}", block.label, kind.tag());
    }
    Ok(())
}
