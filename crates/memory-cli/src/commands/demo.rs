//! `memory demo`: a branching trip-planning conversation with tool calls, written into a
//! fresh data dir, searched, and printed branch by branch.

use std::path::PathBuf;

use memory_core::{NewSession, Parent, SearchQuery, UiMessage};
use serde_json::{Value, json};

use super::CliError;
use crate::app::App;
use crate::output;

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
    let app = App::open(&dir).await?;
    let info = app
        .manager
        .create(NewSession {
            name: Some("Lisbon trip planning".into()),
            model: Some("demo-model".into()),
            source: Some("memory demo".into()),
            ..Default::default()
        })
        .await?;
    let sid = info.id.clone();
    let m = &app.manager;
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
    println!(
        "\nTry: memory --data-dir {} history {sid} --leaf a3 --json",
        dir.display()
    );
    app.close().await;
    Ok(())
}
