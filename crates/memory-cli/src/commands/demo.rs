//! `memory demo`: the three tiers on the embedded default, LLM-free, in a fresh data dir.
//! A branching trip-planning conversation with tool calls, searched and printed branch by
//! branch; its context blocks, frozen prompt and tools (`recall` and `remember` among
//! them); the session shipped into a long-term profile when it ends; a second session whose
//! model recalls what the first taught, with provenance; and the profile in the refreshed
//! prompt.

use std::path::{Path, PathBuf};

use memory_compose::Deployment;
use memory_core::{NewSession, Parent, SearchQuery, SessionId, UiMessage};
use memory_engine::SessionManager;
use memory_engine::long_term::MemoryService;
use serde_json::{Value, json};

use super::CliError;
use crate::output;

/// The profile the demo's sessions are bound to.
const PROFILE: &str = "traveller";

/// The demo deployment's `memory.toml`: a persona, a writable notes block, the profile
/// block, and every new session bound to the demo profile.
const DEMO_CONFIG: &str = r#"# Written by `memory demo`.
[sessions]
profile = "traveller"

[[blocks]]
label = "persona"
kind = "readonly"
text = "You are a helpful travel assistant. Remember what the traveller tells you."

[[blocks]]
label = "notes"
kind = "writable"
description = "Your scratch notes for this trip"
max_tokens = 300
default = "(no notes yet)"

[[blocks]]
label = "profile"
kind = "profile"
description = "What you know about the traveller from earlier conversations"
max_tokens = 400
"#;

/// Writes the demo's `memory.toml` into `dir` when it holds no deployment yet.
fn prepare(dir: &Path) -> Result<(), CliError> {
    let fresh = match std::fs::read_dir(dir) {
        Ok(mut entries) => entries.next().is_none(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
        Err(e) => return Err(CliError::io(format!("reading {}", dir.display()), e)),
    };
    if fresh {
        std::fs::create_dir_all(dir)
            .map_err(|e| CliError::io(format!("creating {}", dir.display()), e))?;
        let path = dir.join(memory_config::CONFIG_FILE);
        std::fs::write(&path, DEMO_CONFIG)
            .map_err(|e| CliError::io(format!("writing {}", path.display()), e))?;
    }
    Ok(())
}

/// Prints a tool call the demo's scripted model makes, and its result.
async fn call(
    manager: &SessionManager,
    session: &SessionId,
    name: &str,
    arguments: Value,
) -> Result<String, CliError> {
    println!("model calls {name}({arguments})");
    let output = manager
        .session(session)
        .await?
        .execute_tool(name, &arguments)
        .await?;
    for line in output.lines() {
        println!("  │ {line}");
    }
    Ok(output)
}

fn message(value: Value) -> Result<UiMessage, CliError> {
    Ok(serde_json::from_value(value)?)
}

fn text(id: &str, role: &str, text: &str) -> Result<UiMessage, CliError> {
    message(json!({"id": id, "role": role, "parts": [{"type": "text", "text": text}]}))
}

fn tool_reply(
    id: &str,
    tool: &str,
    input: Value,
    output: Value,
    answer: &str,
) -> Result<UiMessage, CliError> {
    message(json!({
        "id": id,
        "role": "assistant",
        "parts": [
            {"type": "step-start"},
            {"type": "reasoning", "text": format!("The user needs live data; calling {tool}.")},
            {"type": format!("tool-{tool}"), "toolCallId": format!("call_{id}"), "state": "output-available",
             "input": input, "output": output},
            {"type": "step-start"},
            {"type": "text", "text": answer}
        ],
        "metadata": {"model": "demo-model", "usage": {"inputTokens": 812, "outputTokens": 64}}
    }))
}

pub async fn run(data_dir: Option<PathBuf>) -> Result<(), CliError> {
    let dir = match data_dir {
        Some(dir) => dir,
        None => std::env::temp_dir().join(format!("memory-demo-{}", uuid::Uuid::now_v7())),
    };
    prepare(&dir)?;
    let deployment = Deployment::open(&dir)?;
    let (manager, memory, note) = deployment.services().await?;
    let result = walk(&dir, &manager, &memory, note).await;
    deployment.close().await;
    result
}

async fn walk(
    dir: &Path,
    m: &SessionManager,
    memory: &MemoryService,
    note: Option<String>,
) -> Result<(), CliError> {
    println!("══ 1. Session memory: a branching conversation ══");
    let info = m
        .create(NewSession {
            name: Some("Lisbon trip planning".into()),
            model: Some("demo-model".into()),
            source: Some("memory demo".into()),
            profile: Some(PROFILE.into()),
            ..Default::default()
        })
        .await?;
    let sid = info.id.clone();
    m.append(
        &sid,
        text("sys", "system", "You are a helpful travel assistant.")?,
        Parent::Root,
    )
    .await?;
    m.append(
        &sid,
        text(
            "u1",
            "user",
            "I'm going to Lisbon next weekend. What will the weather be like?",
        )?,
        Parent::LatestLeaf,
    )
    .await?;
    m.append(&sid, tool_reply("a1", "getWeather", json!({"city": "Lisbon", "days": 3}),
        json!({"forecast": [{"day": "Sat", "tempC": 22, "sky": "sunny"}, {"day": "Sun", "tempC": 19, "sky": "showers"}]}),
        "Saturday looks sunny at 22°C; Sunday brings showers around 19°C. Pack a light rain jacket.")?, Parent::LatestLeaf).await?;
    // Branch 1: restaurants.
    m.append(
        &sid,
        text(
            "u2",
            "user",
            "Great. Can you find a seafood restaurant in Alfama for Saturday night?",
        )?,
        Parent::LatestLeaf,
    )
    .await?;
    m.append(&sid, tool_reply("a2", "searchRestaurants", json!({"area": "Alfama", "cuisine": "seafood"}),
        json!([{"name": "Marisqueira do Largo", "rating": 4.6}, {"name": "Taberna da Sé", "rating": 4.4}]),
        "Marisqueira do Largo (4.6★) is the best-rated seafood place in Alfama; Taberna da Sé is a cosier backup.")?, Parent::LatestLeaf).await?;
    m.append(
        &sid,
        text("u3", "user", "Book Marisqueira do Largo for two at 8pm.")?,
        Parent::LatestLeaf,
    )
    .await?;
    m.append(
        &sid,
        tool_reply(
            "a3",
            "bookTable",
            json!({"restaurant": "Marisqueira do Largo", "people": 2, "time": "20:00"}),
            json!({"confirmation": "MDL-4821", "status": "confirmed"}),
            "Done: table for two at 20:00, confirmation MDL-4821.",
        )?,
        Parent::LatestLeaf,
    )
    .await?;
    // Branch 2: the user edits their second question to ask about museums instead.
    m.append(
        &sid,
        text(
            "u2b",
            "user",
            "Actually, since Sunday is rainy, which museums should we visit?",
        )?,
        Parent::message("a1"),
    )
    .await?;
    m.append(&sid, tool_reply("a2b", "searchPlaces", json!({"city": "Lisbon", "category": "museum", "indoor": true}),
        json!([{"name": "Museu Nacional do Azulejo"}, {"name": "Calouste Gulbenkian Museum"}, {"name": "MAAT"}]),
        "For a rainy Sunday: the National Tile Museum (Azulejo), the Gulbenkian, and MAAT by the river.")?, Parent::LatestLeaf).await?;

    println!("Data dir: {}", dir.display());
    println!(
        "Session:  {} ({})\n",
        sid,
        info.name.as_deref().unwrap_or("")
    );
    for q in ["rain jacket", "museum", "Alfama seafood"] {
        println!("search {q:?}:");
        output::hits(&m.search(&SearchQuery::new(q)).await?);
        println!();
    }
    let session = m.session(&sid).await?;
    let children = session.branches("a1").await?;
    println!(
        "a1 has {} branches: {}\n",
        children.len(),
        children
            .iter()
            .map(|c| c.id.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!("── branch 1 (history --leaf a3) ──");
    for message in session.history(Some("a3")).await? {
        output::message(&message);
    }
    println!("\n── branch 2 (latest leaf, a2b) ──");
    for message in session.history(None).await? {
        output::message(&message);
    }

    println!("\n══ 2. Context: blocks, the frozen prompt and the tools ══");
    call(
        m,
        &sid,
        "remember",
        json!({"content": "The traveller prefers seafood restaurants.", "kind": "fact", "key": "traveller.food"}),
    )
    .await?;
    let prompt = session.freeze_system_prompt().await?;
    println!("frozen system prompt ({} bytes):", prompt.len());
    for line in prompt.lines() {
        println!("  │ {line}");
    }
    let mut tools: Vec<String> = session.tools().await?.into_iter().map(|t| t.name).collect();
    tools.extend(m.tools().into_iter().map(|t| t.name));
    println!("tools: {}", tools.join(", "));

    println!("\n══ 3. Long-term memory: session one ships into profile {PROFILE:?} ══");
    if m.has_compaction() {
        println!("(with [llm] set, compaction ships each compacted range as it happens)");
    } else {
        println!(
            "no [llm] is configured: compaction needs a model, so the history ships when the session ends"
        );
    }
    let (_, shipped) = m.end(&sid, Some("trip planned")).await?;
    if let Some(report) = shipped {
        println!("{}", output::ship_line(&report));
        if let Some(job) = &report.job {
            let job = memory.run_job(PROFILE, &job.id).await?;
            println!(
                "ingest job {}: {} ({} new raw message(s), {} vector(s))",
                job.id,
                job.status.as_str(),
                job.new_messages,
                job.vectorized
            );
            for degraded in &job.degraded {
                println!("  degraded {}: {}", degraded.feature, degraded.reason);
            }
        }
    }
    if let Some(note) = note {
        println!("note: {note}");
    }

    println!("\n══ 4. A second session recalls what the first taught ══");
    let two = m
        .create(NewSession {
            name: Some("Packing for Lisbon".into()),
            source: Some("memory demo".into()),
            profile: Some(PROFILE.into()),
            ..Default::default()
        })
        .await?;
    let second = m.session(&two.id).await?;
    let before = second.freeze_system_prompt().await?;
    call(
        m,
        &two.id,
        "recall",
        json!({"query": "Which museums did we pick for the rainy Sunday?"}),
    )
    .await?;
    call(
        m,
        &two.id,
        "remember",
        json!({"content": "Answer in short, practical sentences.", "kind": "instruction", "key": "style"}),
    )
    .await?;
    let unchanged = second.freeze_system_prompt().await? == before;
    println!("frozen prompt unchanged after the write: {unchanged}");
    let refreshed = second.refresh_system_prompt().await?;
    println!("the profile block in the refreshed prompt:");
    let lines: Vec<&str> = refreshed.lines().collect();
    if let Some(at) = lines.iter().position(|l| l.starts_with("PROFILE")) {
        for line in lines
            .iter()
            .skip(at + 2)
            .take_while(|l| **l != memory_engine::context::SEPARATOR)
        {
            println!("  │ {line}");
        }
    }

    println!("\nTry next:");
    let d = dir.display();
    println!("  memory --data-dir {d} history {sid} --leaf a3 --json");
    println!("  memory --data-dir {d} tools {} --format openai", two.id);
    println!("  memory --data-dir {d} profile recall {PROFILE} \"rainy Sunday museums\" --explain");
    println!("  memory --data-dir {d} profile list {PROFILE}");
    println!(
        "  memory --data-dir {d} serve   # the same over REST (/docs) and MCP (/mcp), and the inspector at /ui"
    );
    Ok(())
}
