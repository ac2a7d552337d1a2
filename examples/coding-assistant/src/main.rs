//! A coding assistant's context memory, end to end.
//!
//! Composes SQLite (history, blocks, search index, frozen prompt), a SOUL file, a `memory`
//! block shared by every session, a per-session `todos` block, a searchable `knowledge` block
//! and a local directory of Markdown skills, then runs a short session in which a scripted
//! model calls every generated tool through the same loop a real model would drive.
//!
//! Run: `cargo run -p coding-assistant [-- DATA_DIR]`. With `OPENAI_BASE_URL` and
//! `OPENAI_MODEL` set (and `OPENAI_API_KEY` when the endpoint needs one), a real
//! OpenAI-compatible model drives the same loop instead of the script.

mod scripted;

use std::path::PathBuf;
use std::sync::Arc;

use memory_core::ports::{
    BlockProvider, ChatMessage, ChatRequest, ChatRole, KeyValueStore, LanguageModel, SkillStore,
    SystemClock, TextIndex,
};
use memory_core::{NewSession, Parent, Role, UiMessage};
use memory_engine::SessionManager;
use memory_engine::context::{BlockSpec, ContextWiring, StoredSkills};
use memory_fs::{FileBlock, MarkdownSkills};
use memory_openai::{OpenAiChat, OpenAiConfig};
use memory_sqlite::{
    SqliteConfig, SqliteDatabase, SqliteKeyValueStore, SqliteMessageIndex, SqliteMessageStore,
    SqliteSessionRegistry, SqliteTextIndex,
};
use serde_json::json;

#[tokio::main]
async fn main() -> memory_core::Result<()> {
    let data_dir = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            std::env::temp_dir().join(format!("coding-assistant-{}", uuid::Uuid::now_v7()))
        });
    let config_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../config");
    let db = SqliteDatabase::open(SqliteConfig::new(data_dir.join("memory.db"))).await?;

    let skills: Arc<dyn SkillStore> = Arc::new(MarkdownSkills::new(config_dir.join("skills")));
    let kv: Arc<dyn KeyValueStore> = Arc::new(SqliteKeyValueStore::new(db.clone()));
    let wiring = ContextWiring {
        profiles: None,
        kv: Some(Arc::clone(&kv)),
        index: Some(Arc::new(SqliteTextIndex::new(db.clone())) as Arc<dyn TextIndex>),
        specs: vec![
            BlockSpec::provider(
                "soul",
                BlockProvider::ReadOnly(Arc::new(FileBlock::new(config_dir.join("SOUL.md")))),
            )
            .description("Who you are"),
            BlockSpec::writable("memory")
                .description("Learned facts about the user")
                .max_tokens(1100)
                .shared(),
            BlockSpec::writable("todos")
                .description("This session's task list")
                .max_tokens(500),
            BlockSpec::searchable("knowledge")
                .description("Project notes")
                .shared(),
            BlockSpec::provider(
                "skills",
                BlockProvider::Skill(Arc::new(StoredSkills::new(skills))),
            )
            .description("Playbooks you can load"),
        ],
        ..ContextWiring::default()
    };
    let manager = SessionManager::new(
        Arc::new(SqliteMessageStore::new(db.clone())),
        Arc::new(SqliteSessionRegistry::new(db.clone())),
        Arc::new(SystemClock),
    )
    .with_context(wiring)
    .with_search(Arc::new(SqliteMessageIndex::new(db.clone())), kv);

    let info = manager.create(NewSession::default()).await?;
    let session = manager.session(&info.id).await?;
    // A real endpoint when one is configured (OPENAI_BASE_URL and OPENAI_MODEL, key in
    // OPENAI_API_KEY), else the scripted model.
    let model: Arc<dyn LanguageModel> = match (
        std::env::var("OPENAI_BASE_URL"),
        std::env::var("OPENAI_MODEL"),
    ) {
        (Ok(base_url), Ok(name)) => {
            println!("model: {name} at {base_url}");
            Arc::new(OpenAiChat::new(
                OpenAiConfig::new(base_url, name).api_key_from_env("OPENAI_API_KEY"),
            )?)
        }
        _ => Arc::new(scripted::ScriptedModel::coding_session()),
    };
    let user = "I prefer tabs over spaces. Please review my parser change and note that CI runs on every push.";
    manager
        .append(
            &info.id,
            UiMessage::text_message("u1", Role::User, user),
            Parent::LatestLeaf,
        )
        .await?;
    println!("data dir: {}\nuser: {user}\n", data_dir.display());

    // The loop a real model drives: frozen prompt + history + tools in, tool calls out.
    let system = session.freeze_system_prompt().await?;
    let mut messages = vec![
        ChatMessage::new(ChatRole::System, system.clone()),
        ChatMessage::new(ChatRole::User, user),
    ];
    for step in 1..=12 {
        let mut tools = session.tools().await?;
        tools.extend(manager.tools());
        let request = ChatRequest {
            messages: messages.clone(),
            tools,
            ..ChatRequest::default()
        };
        let response = model.complete(request).await?;
        if response.tool_calls.is_empty() {
            println!("assistant: {}", response.content);
            manager
                .append(
                    &info.id,
                    UiMessage::text_message(format!("a{step}"), Role::Assistant, &response.content),
                    Parent::LatestLeaf,
                )
                .await?;
            break;
        }
        let mut parts = Vec::new();
        let mut assistant = ChatMessage::new(ChatRole::Assistant, "");
        assistant.tool_calls = response.tool_calls.clone();
        messages.push(assistant);
        for call in &response.tool_calls {
            let output = match manager.execute_tool(&call.name, &call.arguments).await {
                Some(output) => output,
                None => session.execute_tool(&call.name, &call.arguments).await?,
            };
            println!(
                "tool {}({}) -> {}",
                call.name,
                call.arguments,
                output.replace('\n', "\n    ")
            );
            parts.push(json!({
                "type": format!("tool-{}", call.name), "toolCallId": call.id, "state": "output-available",
                "input": call.arguments, "output": output,
            }));
            messages.push(ChatMessage::tool_result(&call.id, output));
        }
        let message: UiMessage = serde_json::from_value(
            json!({"id": format!("a{step}"), "role": "assistant", "parts": parts}),
        )?;
        manager
            .append(&info.id, message, Parent::LatestLeaf)
            .await?;
    }

    let unchanged = session.freeze_system_prompt().await? == system;
    println!("\nfrozen prompt unchanged during the session: {unchanged}");
    println!(
        "\n── system prompt after refresh ──\n{}",
        session.refresh_system_prompt().await?
    );
    let history = session.history(None).await?;
    println!(
        "\nhistory: {} messages; the unloaded skill's output now reads {:?}",
        history.len(),
        history
            .iter()
            .flat_map(|m| m.tool_parts())
            .find(|t| t.tool_name == "load_context")
            .and_then(|t| t.output.clone())
    );
    db.close().await;
    Ok(())
}
