//! Arbitrary strings (NUL and other control characters, quotes, full-text operators, very
//! long inputs) at every entry point that takes text, on the real embedded composition:
//! ids, message text, search, the search tool, profile names, remember and recall. Each
//! gives a normal result or a clear `InvalidInput` / `NotFound`: never a panic, never a
//! storage error, never query syntax.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use memory_compose::Deployment;
use memory_config::{EmbedderChoice, MemoryConfig};
use memory_core::{MemoryError, NewSession, Role, SearchQuery, SessionId, UiMessage};
use memory_engine::long_term::{RecallRequest, RememberRequest};
use proptest::prelude::*;

/// Strings made of what breaks parsers: control characters, quotes, FTS5 operators and
/// column filters, SQL comment and statement separators, letters and emoji.
fn hostile() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("\u{0}".to_owned()),
        Just("\u{7}\u{1b}\n\t\r".to_owned()),
        Just("\"".to_owned()),
        Just("'".to_owned()),
        Just(" AND ".to_owned()),
        Just(" OR ".to_owned()),
        Just("NOT ".to_owned()),
        Just("NEAR(".to_owned()),
        Just("*".to_owned()),
        Just("^".to_owned()),
        Just(":".to_owned()),
        Just("(".to_owned()),
        Just(")".to_owned()),
        Just("content:".to_owned()),
        Just("--".to_owned()),
        Just(";".to_owned()),
        Just("{}".to_owned()),
        Just("alpha".to_owned()),
        Just("beta ".to_owned()),
        Just("çaé😀".to_owned()),
        any::<String>(),
    ];
    prop::collection::vec(piece, 0..24).prop_map(|parts| parts.concat())
}

fn clear(error: &MemoryError) -> bool {
    matches!(
        error,
        MemoryError::InvalidInput { .. } | MemoryError::NotFound { .. }
    )
}

fn no_syntax(text: &str) {
    let lower = text.to_lowercase();
    for marker in [
        "syntax",
        "fts5",
        "unterminated",
        "sqlite",
        "malformed match",
    ] {
        assert!(!lower.contains(marker), "{marker} in {text:?}");
    }
}

struct World {
    _dir: tempfile::TempDir,
    runtime: tokio::runtime::Runtime,
    deployment: Deployment,
}

fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let mut config = MemoryConfig::default();
    config.memory.embedder = EmbedderChoice::None;
    let deployment = Deployment::with_config(config, dir.path());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    World {
        _dir: dir,
        runtime,
        deployment,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn sessions_messages_search_and_the_search_tool(id in hostile(), text in hostile(), query in hostile()) {
        let w = world();
        w.runtime.block_on(async {
            let sessions = w.deployment.session_manager().await.unwrap();
            let session = match SessionId::new(id.clone()) {
                Ok(session) => session,
                Err(e) => {
                    assert!(clear(&e), "{e:?}");
                    SessionId::new("fallback").unwrap()
                }
            };
            sessions
                .create(NewSession { id: Some(session.clone()), ..NewSession::default() })
                .await
                .unwrap();
            let appended = sessions
                .append(&session, UiMessage::text_message(id.clone(), Role::User, text.clone()), Default::default())
                .await;
            if let Err(e) = &appended {
                assert!(clear(e), "append: {e:?}");
            }
            sessions
                .append(&session, UiMessage::text_message("plain", Role::User, text.clone()), Default::default())
                .await
                .unwrap();
            for mode in [memory_core::SearchMode::AllWords, memory_core::SearchMode::AnyWords, memory_core::SearchMode::Phrase] {
                sessions.search(&SearchQuery::new(query.clone()).mode(mode)).await.unwrap();
            }
            let tool = sessions
                .execute_tool("session_search", &serde_json::json!({"query": query}))
                .await
                .unwrap();
            no_syntax(&tool);
            let in_session = sessions.session(&session).await.unwrap();
            let result = in_session
                .execute_tool(&query, &serde_json::json!({"label": query, "query": query, "content": text}))
                .await
                .unwrap();
            no_syntax(&result);
        });
        w.runtime.block_on(w.deployment.close());
    }

    #[test]
    fn profiles_remember_and_recall(name in hostile(), content in hostile(), query in hostile()) {
        let w = world();
        w.runtime.block_on(async {
            let (memory, _) = w.deployment.memory_service().await.unwrap();
            let remember = |profile: String, content: String| {
                let memory = &memory;
                async move {
                    memory
                        .remember(&profile, RememberRequest { content, session_id: None, kind: None, key: None, metadata: Default::default(), expires_at: None })
                        .await
                }
            };
            if let Err(e) = remember(name.clone(), content.clone()).await {
                assert!(clear(&e), "remember into {name:?}: {e:?}");
            }
            if let Err(e) = remember("p".into(), content.clone()).await {
                assert!(clear(&e), "remember {content:?}: {e:?}");
            }
            remember("p".into(), "a plain fact".into()).await.unwrap();
            memory.recall("p", RecallRequest::new(query.clone(), 5)).await.unwrap();
            if let Err(e) = memory.recall(&name, RecallRequest::new(query.clone(), 5)).await {
                assert!(clear(&e), "recall from {name:?}: {e:?}");
            }
        });
        w.runtime.block_on(w.deployment.close());
    }
}

/// Ten-thousand-character inputs everywhere: bounded work, a normal result.
#[tokio::test]
async fn ten_thousand_character_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = MemoryConfig::default();
    config.memory.embedder = EmbedderChoice::None;
    let deployment = Deployment::with_config(config, dir.path());
    let long: String = "alpha \u{0}\"beta\" OR gamma* ".repeat(500);
    assert!(long.len() >= 10_000);
    let sessions = deployment.session_manager().await.unwrap();
    let info = sessions.create(NewSession::default()).await.unwrap();
    sessions
        .append(
            &info.id,
            UiMessage::text_message("m1", Role::User, long.clone()),
            Default::default(),
        )
        .await
        .unwrap();
    assert_eq!(
        sessions
            .search(&SearchQuery::new(long.clone()))
            .await
            .unwrap()
            .len(),
        1
    );
    let (memory, _) = deployment.memory_service().await.unwrap();
    memory
        .remember(
            "p",
            RememberRequest {
                content: long.clone(),
                session_id: None,
                kind: None,
                key: None,
                metadata: Default::default(),
                expires_at: None,
            },
        )
        .await
        .unwrap();
    let recalled = memory
        .recall("p", RecallRequest::new(long, 5))
        .await
        .unwrap();
    assert!(!recalled.hits.is_empty());
    deployment.close().await;
}
