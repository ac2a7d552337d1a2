use memory_core::NewSession;
use serde_json::json;

use super::CliError;
use crate::app::{App, session_id};
use crate::cli::SessionCommand;
use crate::output;

pub async fn run(app: &App, command: SessionCommand) -> Result<(), CliError> {
    match command {
        SessionCommand::Create {
            id,
            name,
            parent,
            model,
            source,
            profile,
            format,
        } => {
            let spec = NewSession {
                id: id.as_deref().map(session_id).transpose()?,
                name,
                parent_session_id: parent.as_deref().map(session_id).transpose()?,
                model,
                source,
                profile,
            };
            let info = app.manager.create(spec).await?;
            if format.json {
                output::json(&info)
            } else {
                println!("{}", info.id);
                Ok(())
            }
        }
        SessionCommand::List {
            limit,
            offset,
            format,
        } => {
            let sessions = app.manager.list(limit, offset).await?;
            if format.json {
                output::json(&json!({ "sessions": sessions }))
            } else {
                if sessions.is_empty() {
                    println!("No sessions.");
                }
                for info in &sessions {
                    println!("{}", output::session_line(info));
                }
                Ok(())
            }
        }
        SessionCommand::Show { id, format } => {
            let id = session_id(&id)?;
            let info = app
                .manager
                .get(&id)
                .await?
                .ok_or_else(|| memory_core::MemoryError::not_found("session", id.as_str()))?;
            if format.json {
                output::json(&info)
            } else {
                output::session_details(&info);
                Ok(())
            }
        }
        SessionCommand::Rename { id, name, format } => {
            let info = app.manager.rename(&session_id(&id)?, &name).await?;
            if format.json {
                output::json(&info)
            } else {
                println!("renamed {} to {name:?}", info.id);
                Ok(())
            }
        }
        SessionCommand::Bind {
            id,
            profile,
            format,
        } => bind(app, &id, Some(&profile), format.json).await,
        SessionCommand::Unbind { id, format } => bind(app, &id, None, format.json).await,
        SessionCommand::End {
            id,
            reason,
            wait,
            format,
        } => {
            let (info, mut shipped) = app
                .manager
                .end(&session_id(&id)?, reason.as_deref())
                .await?;
            if wait
                && let Some(report) = &mut shipped
                && let Some(job) = &report.job
            {
                let memory = app.manager.long_term().map(|l| l.memory().clone());
                if let Some(memory) = memory {
                    report.job = Some(
                        super::profile::wait_for_job(&memory, &report.profile, &job.id).await?,
                    );
                }
            }
            if format.json {
                return output::json(&json!({"session": info, "shipped": shipped}));
            }
            println!(
                "ended {} ({})",
                info.id,
                info.end_reason.as_deref().unwrap_or("ended")
            );
            match &shipped {
                None => println!("not bound to a profile: nothing shipped"),
                Some(report) => println!("{}", output::ship_line(report)),
            }
            Ok(())
        }
        SessionCommand::Archive {
            id,
            idle_days,
            format,
        } => {
            let reports = match (id, idle_days) {
                (Some(id), None) => vec![app.manager.archive(&session_id(&id)?).await?],
                (None, Some(days)) if days >= 0.0 => {
                    let idle = (days * memory_core::DAY_MILLIS as f64) as i64;
                    app.manager.archive_idle(idle).await?
                }
                _ => {
                    return Err(CliError::Input(
                        "name one session, or give --idle-days (not both)".into(),
                    ));
                }
            };
            if format.json {
                return output::json(&reports);
            }
            for report in &reports {
                println!(
                    "archived {} ({} messages, {} bytes) to {}",
                    report.session, report.messages, report.bytes, report.key
                );
            }
            Ok(())
        }
        SessionCommand::Delete { id } => {
            let id = session_id(&id)?;
            app.manager.delete(&id).await?;
            println!("deleted {id}");
            Ok(())
        }
    }
}

/// Binds a session to `profile`, or unbinds it.
async fn bind(app: &App, id: &str, profile: Option<&str>, json: bool) -> Result<(), CliError> {
    let info = app.manager.bind(&session_id(id)?, profile).await?;
    if json {
        output::json(&info)
    } else {
        match &info.profile {
            Some(profile) => println!("bound {} to profile {profile}", info.id),
            None => println!("unbound {}", info.id),
        }
        Ok(())
    }
}
