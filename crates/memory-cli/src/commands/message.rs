use memory_core::{AppendOutcome, Parent, UiMessage};
use serde_json::json;

use super::{CliError, argument_or_stdin};
use crate::app::{App, session_id};
use crate::cli::MessageCommand;
use crate::output;

fn parse_message(text: &str) -> Result<UiMessage, CliError> {
    Ok(UiMessage::from_json(text.trim())?)
}

pub async fn run(app: &App, command: MessageCommand) -> Result<(), CliError> {
    match command {
        MessageCommand::Append {
            session,
            message,
            parent,
            root,
            format,
        } => {
            let id = session_id(&session)?;
            let message = parse_message(&argument_or_stdin(message)?)?;
            let message_id = message.id.clone();
            let parent = match (parent, root) {
                (Some(parent), _) => Parent::Message(parent),
                (None, true) => Parent::Root,
                (None, false) => Parent::LatestLeaf,
            };
            let outcome = app.manager.append(&id, message, parent).await?.outcome;
            let (label, parent_id) = match &outcome {
                AppendOutcome::Inserted { parent_id } => ("inserted", parent_id.clone()),
                AppendOutcome::AlreadyExists => ("already_exists", None),
            };
            if format.json {
                output::json(&json!({
                    "session_id": id, "message_id": message_id, "outcome": label, "parent_id": parent_id,
                }))
            } else {
                match outcome {
                    AppendOutcome::Inserted { parent_id: Some(p) } => {
                        println!("appended {message_id} under {p}")
                    }
                    AppendOutcome::Inserted { parent_id: None } => {
                        println!("appended {message_id} as a root")
                    }
                    AppendOutcome::AlreadyExists => {
                        println!("{message_id} already exists; nothing changed")
                    }
                }
                Ok(())
            }
        }
        MessageCommand::Update {
            session,
            message,
            format,
        } => {
            let id = session_id(&session)?;
            let message = parse_message(&argument_or_stdin(message)?)?;
            let message_id = message.id.clone();
            app.manager.update(&id, message).await?;
            if format.json {
                output::json(
                    &json!({ "session_id": id, "message_id": message_id, "outcome": "updated" }),
                )
            } else {
                println!("updated {message_id}");
                Ok(())
            }
        }
        MessageCommand::Delete {
            session,
            ids,
            format,
        } => {
            let id = session_id(&session)?;
            let deleted = app.manager.delete_messages(&id, &ids).await?;
            if format.json {
                output::json(&json!({ "session_id": id, "deleted": deleted }))
            } else {
                println!("deleted {deleted} of {} message(s)", ids.len());
                Ok(())
            }
        }
    }
}
