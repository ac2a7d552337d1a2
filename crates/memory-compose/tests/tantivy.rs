//! `[storage] text = "tantivy"`: session search and long-term recall through Tantivy indexes
//! on disk, beside SQLite records, kept in step by the engine.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use memory_compose::Deployment;
use memory_config::{Backend, Role};
use memory_core::{Parent, Role as Speaker, SearchQuery, UiMessage};
use memory_engine::long_term::{RecallRequest, RememberRequest};
use memory_testkit::contract;
use memory_testkit::files::files_containing;

/// A plain memory to remember.
fn note(content: impl Into<String>) -> RememberRequest {
    RememberRequest {
        content: content.into(),
        session_id: None,
        kind: None,
        key: None,
        metadata: Default::default(),
        expires_at: None,
    }
}

fn deployment(dir: &std::path::Path) -> Deployment {
    std::fs::write(
        dir.join("memory.toml"),
        "[storage]\ntext = \"tantivy\"\n\n[memory]\nembedder = \"none\"\n",
    )
    .unwrap();
    Deployment::open(dir).unwrap()
}

#[tokio::test]
async fn sessions_and_profiles_search_through_tantivy() {
    let dir = tempfile::tempdir().unwrap();
    let deployment = deployment(dir.path());
    assert_eq!(deployment.storage().backend(Role::Text), Backend::Tantivy);
    let manager = deployment.session_manager().await.unwrap();
    // The message store through the engine's index decorator passes the store contract.
    contract::message_store::run_all(manager.store().as_ref(), None, 2_000).await;

    let id = manager.create(Default::default()).await.unwrap().id;
    for (m, text) in [
        ("u1", "The herons nest by the river"),
        ("u2", "Kingfishers dive"),
    ] {
        manager
            .append(
                &id,
                UiMessage::text_message(m, Speaker::User, text),
                Parent::LatestLeaf,
            )
            .await
            .unwrap();
    }
    let hits = manager.search(&SearchQuery::new("heron")).await.unwrap();
    assert_eq!(hits.len(), 1, "stemmed: heron finds herons");
    assert!(dir.path().join("tantivy/general").is_dir());

    let (memory, _) = deployment.memory_service().await.unwrap();
    memory
        .remember("home", note("The boiler was serviced in May."))
        .await
        .unwrap();
    let recalled = memory
        .recall("home", RecallRequest::new("boiler serviced", 5))
        .await
        .unwrap();
    assert_eq!(
        recalled.hits.len(),
        1,
        "found through the profile's Tantivy index"
    );
    assert!(dir.path().join("tantivy/profiles/home").is_dir());
    manager.delete(&id).await.unwrap();
    assert!(
        manager
            .search(&SearchQuery::new("heron"))
            .await
            .unwrap()
            .is_empty()
    );
}

/// `session_text = "sqlite"`: profiles recall through Tantivy while session messages stay
/// in the store-written FTS5 index (no message text in a Tantivy index).
#[tokio::test]
async fn session_messages_can_stay_on_sqlite_while_profiles_use_tantivy() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("memory.toml"),
        "[storage]\ntext = \"tantivy\"\nsession_text = \"sqlite\"\n\n[memory]\nembedder = \"none\"\n",
    )
    .unwrap();
    let deployment = Deployment::open(dir.path()).unwrap();
    assert_eq!(
        deployment.storage().backend(Role::SessionText),
        Backend::Sqlite
    );
    let index = deployment.message_text_index().await.unwrap();
    assert!(
        index.capabilities().written_by_store,
        "appends index in their own transaction"
    );
    let manager = deployment.session_manager().await.unwrap();
    contract::message_store::run_all(manager.store().as_ref(), None, 2_000).await;
    let id = manager.create(Default::default()).await.unwrap().id;
    manager
        .append(
            &id,
            UiMessage::text_message("u1", Speaker::User, "The herons nest by the river"),
            Parent::LatestLeaf,
        )
        .await
        .unwrap();
    assert_eq!(
        manager
            .search(&SearchQuery::new("herons"))
            .await
            .unwrap()
            .len(),
        1
    );
    // The general index (searchable blocks) is still Tantivy's; no message reached it.
    assert!(files_containing(&dir.path().join("tantivy/general"), b"herons").is_empty());

    let (memory, _) = deployment.memory_service().await.unwrap();
    memory
        .remember("home", note("The boiler was serviced in May."))
        .await
        .unwrap();
    let recalled = memory
        .recall("home", RecallRequest::new("boiler serviced", 5))
        .await
        .unwrap();
    assert_eq!(recalled.hits.len(), 1);
    assert!(dir.path().join("tantivy/profiles/home").is_dir());
}

/// `reindex` rebuilds the Tantivy messages index from the store: after the index lost a
/// session's documents (cleared behind the engine's back), search finds them again.
#[tokio::test]
async fn reindex_rebuilds_the_tantivy_index_from_the_store() {
    use memory_core::ports::namespaces;
    let dir = tempfile::tempdir().unwrap();
    let deployment = deployment(dir.path());
    let manager = deployment.session_manager().await.unwrap();
    let id = manager.create(Default::default()).await.unwrap().id;
    for i in 0..50 {
        let text = format!("lighthouse log entry {i}");
        manager
            .append(
                &id,
                UiMessage::text_message(format!("m{i}"), Speaker::User, text),
                Parent::LatestLeaf,
            )
            .await
            .unwrap();
    }
    let all = SearchQuery::new("lighthouse").limit(100);
    assert_eq!(manager.search(&all).await.unwrap().len(), 50);
    deployment
        .message_text_index()
        .await
        .unwrap()
        .clear(namespaces::MESSAGES)
        .await
        .unwrap();
    assert!(
        manager.search(&all).await.unwrap().is_empty(),
        "the index lost them"
    );
    let report = manager.reindex().await.unwrap();
    assert!(report.rebuilt);
    assert_eq!(report.documents, 50);
    assert_eq!(manager.search(&all).await.unwrap().len(), 50);
}

/// `profile_text = "tantivy"`: the profiles' text on Tantivy, everything else in SQLite. A
/// backup is file copies that leave the index out; the restored deployment rebuilds each
/// profile's index from its records when it first opens the profile, even beside an index
/// that was already there (from another deployment).
#[tokio::test]
async fn a_file_backup_leaves_the_profiles_index_out_and_the_restore_rebuilds_it() {
    const CONFIG: &str = "[storage]\nprofile_text = \"tantivy\"\n\n[memory]\nembedder = \"none\"\n";
    let source = tempfile::tempdir().unwrap();
    std::fs::write(source.path().join("memory.toml"), CONFIG).unwrap();
    let deployment = Deployment::open(source.path()).unwrap();
    let storage = deployment.storage();
    assert_eq!(storage.backend(Role::ProfileText), Backend::Tantivy);
    assert_eq!(storage.backend(Role::Text), Backend::Sqlite);
    assert_eq!(storage.backend(Role::SessionText), Backend::Sqlite);
    let (memory, _) = deployment.memory_service().await.unwrap();
    memory
        .remember("home", note("The herons nest by the river"))
        .await
        .unwrap();
    assert!(source.path().join("tantivy/profiles/home").is_dir());
    let backup = deployment.backup(None).await.unwrap();
    assert_eq!(backup.mode, "files");
    assert!(
        backup.files.iter().all(|f| !f.key.contains("tantivy")),
        "{:?}",
        backup.files
    );

    // The target already holds an index of `home` from another deployment, which knows of
    // kingfishers and not of herons.
    let target = tempfile::tempdir().unwrap();
    std::fs::write(target.path().join("memory.toml"), CONFIG).unwrap();
    {
        let other = Deployment::open(target.path()).unwrap();
        let (memory, _) = other.memory_service().await.unwrap();
        memory
            .remember("home", note("Kingfishers dive"))
            .await
            .unwrap();
    }
    for entry in std::fs::read_dir(target.path()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        if name == "profiles" {
            std::fs::remove_dir_all(&path).unwrap();
        } else if name.starts_with("memory.db") {
            std::fs::remove_file(&path).unwrap();
        }
    }
    assert!(target.path().join("tantivy/profiles/home").is_dir());
    deployment
        .restore(Some(&backup.id), target.path())
        .await
        .unwrap();

    let restored = Deployment::open(target.path()).unwrap();
    let (memory, _) = restored.memory_service().await.unwrap();
    let hits = memory
        .recall("home", RecallRequest::new("herons", 5))
        .await
        .unwrap()
        .hits;
    assert_eq!(hits.len(), 1, "the restored memory is found: {hits:?}");
    let index = restored
        .long_term_backends()
        .await
        .unwrap()
        .text
        .text_index("home")
        .await
        .unwrap();
    let stale = index
        .search(
            memory_core::ports::namespaces::MEMORIES,
            &memory_core::ports::TextQuery::new("kingfishers", 5),
        )
        .await
        .unwrap();
    assert!(stale.is_empty(), "the older index was rebuilt: {stale:?}");
    assert_eq!(
        index
            .count(memory_core::ports::namespaces::MEMORIES)
            .await
            .unwrap(),
        1
    );
}

/// `[storage.tantivy]` sets the language of the general index and of each profile; a
/// deployment reopened with another language is refused with a clear error.
#[tokio::test]
async fn the_language_comes_from_the_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let config = |language: &str| {
        format!(
            "[storage]\ntext = \"tantivy\"\n\n[storage.tantivy]\nlanguage = \"{language}\"\n\n\
             [storage.tantivy.profile_languages]\nmarie = \"french\"\n\n\
             [memory]\nembedder = \"none\"\n"
        )
    };
    std::fs::write(dir.path().join("memory.toml"), config("cjk")).unwrap();
    let deployment = Deployment::open(dir.path()).unwrap();
    let manager = deployment.session_manager().await.unwrap();
    let id = manager.create(Default::default()).await.unwrap().id;
    manager
        .append(
            &id,
            UiMessage::text_message("u1", Speaker::User, "明日は東京都庁で会議があります"),
            Parent::LatestLeaf,
        )
        .await
        .unwrap();
    let hits = manager.search(&SearchQuery::new("都庁")).await.unwrap();
    assert_eq!(hits.len(), 1, "CJK text found without spaces");

    let (memory, _) = deployment.memory_service().await.unwrap();
    memory
        .remember("marie", note("Les chanteuses répètent le mardi."))
        .await
        .unwrap();
    let recalled = memory
        .recall("marie", RecallRequest::new("chanteuse", 5))
        .await
        .unwrap();
    assert_eq!(recalled.hits.len(), 1, "French stemming in marie's profile");
    drop((manager, memory, deployment));

    std::fs::write(dir.path().join("memory.toml"), config("english")).unwrap();
    let reopened = Deployment::open(dir.path()).unwrap();
    let error = reopened
        .session_manager()
        .await
        .err()
        .expect("a mismatched language is refused");
    let message = error.to_string();
    assert!(
        message.contains("made for cjk") && message.contains("opened as english"),
        "{message}"
    );
}

/// Purging a memory (with its sources) leaves its text in no file of the profile's index:
/// the marker is found there before the purge (the positive control) and nowhere after.
#[tokio::test]
async fn a_purge_leaves_no_text_in_the_profile_index_files() {
    const MARKER: &str = "qzvxmarkerjwk";
    let dir = tempfile::tempdir().unwrap();
    // A commit interval long enough that the memories below share one commit (and, with
    // the profile's one writer thread, one segment): a segment whose documents are all
    // deleted is dropped whole by any commit, which would prove nothing.
    std::fs::write(
        dir.path().join("memory.toml"),
        "[storage]\ntext = \"tantivy\"\n\n[storage.tantivy]\ncommit_interval_ms = 500\n\n\
         [memory]\nembedder = \"none\"\n",
    )
    .unwrap();
    let deployment = Deployment::open(dir.path()).unwrap();
    let (memory, _) = deployment.memory_service().await.unwrap();
    let mut contents: Vec<String> = (0..20)
        .map(|i| format!("ordinary fact number {i}"))
        .collect();
    contents.insert(10, format!("the alarm code is {MARKER}"));
    let remembered = futures::future::join_all(
        contents
            .into_iter()
            .map(|content| memory.remember("vault", note(content))),
    )
    .await;
    let secret = remembered
        .into_iter()
        .map(Result::unwrap)
        .find(|m| m.content.contains(MARKER))
        .unwrap();
    let index_dir = dir.path().join("tantivy/profiles/vault");
    let scan = || files_containing(&index_dir, MARKER.as_bytes());
    assert!(
        !scan().is_empty(),
        "positive control: the marker is in the index files"
    );
    memory.purge("vault", &secret.id, true).await.unwrap();
    assert_eq!(
        scan(),
        Vec::<String>::new(),
        "purged text left in the index files"
    );
    let recalled = memory
        .recall("vault", RecallRequest::new("ordinary fact", 50))
        .await
        .unwrap();
    assert_eq!(recalled.hits.len(), 20, "the other memories stay");
}

/// Where the child process of the crash test writes (set only in the child).
const CRASH_CHILD_DIR: &str = "MEMORY_TANTIVY_CRASH_CHILD_DIR";
/// Sessions the child appends to at once.
const CRASH_SESSIONS: usize = 4;

/// The child of `kill_9_during_indexing_loses_nothing_acknowledged`: appends to four
/// sessions at once, printing each message id once its append returned, until it is
/// killed (or 5,000 messages, so it always ends). Does nothing in a normal test run.
#[tokio::test]
async fn crash_child_appends_until_killed() {
    let Ok(dir) = std::env::var(CRASH_CHILD_DIR) else {
        return;
    };
    let deployment = Deployment::open(std::path::Path::new(&dir)).unwrap();
    let manager = std::sync::Arc::new(deployment.session_manager().await.unwrap());
    let mut writers = Vec::new();
    for s in 0..CRASH_SESSIONS {
        let manager = std::sync::Arc::clone(&manager);
        writers.push(tokio::spawn(async move {
            let id = memory_core::SessionId::new(format!("crash-{s}")).unwrap();
            for i in 0..1_250 {
                let text = format!("lighthouse entry {i} of session {s}");
                manager
                    .append(
                        &id,
                        UiMessage::text_message(format!("m{i}"), Speaker::User, text),
                        Parent::LatestLeaf,
                    )
                    .await
                    .unwrap();
                println!("ack crash-{s} m{i}");
            }
        }));
    }
    for writer in writers {
        writer.await.unwrap();
    }
}

/// `kill -9` while messages are being indexed: every append that returned is in the store,
/// and at the next start the engine's catch-up makes the Tantivy index hold exactly the
/// store's messages (none missing, none extra), with the index's writer lock released.
#[tokio::test]
async fn kill_9_during_indexing_loses_nothing_acknowledged() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    drop(deployment(dir.path()));
    {
        let manager = Deployment::open(dir.path())
            .unwrap()
            .session_manager()
            .await
            .unwrap();
        for s in 0..CRASH_SESSIONS {
            let id = memory_core::SessionId::new(format!("crash-{s}")).unwrap();
            manager
                .create(memory_core::NewSession {
                    id: Some(id),
                    ..Default::default()
                })
                .await
                .unwrap();
        }
    }
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "crash_child_appends_until_killed", "--nocapture"])
        .env(CRASH_CHILD_DIR, dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut acknowledged = Vec::new();
    for line in stdout.lines() {
        let line = line.unwrap();
        if let Some(ack) = line.strip_prefix("ack ") {
            acknowledged.push(ack.to_owned());
            if acknowledged.len() == 400 {
                child.kill().unwrap(); // SIGKILL
                break;
            }
        }
    }
    child.wait().unwrap();
    assert_eq!(
        acknowledged.len(),
        400,
        "the child acknowledged 400 appends before the kill"
    );

    let deployment = Deployment::open(dir.path()).unwrap();
    let manager = deployment.session_manager().await.unwrap(); // catches up at start
    let index = deployment.message_text_index().await.unwrap();
    // Counted before any search (a search would catch up by itself).
    let indexed_at_start = index
        .count(memory_core::ports::namespaces::MESSAGES)
        .await
        .unwrap() as usize;
    let mut stored_total = 0;
    for s in 0..CRASH_SESSIONS {
        let id = memory_core::SessionId::new(format!("crash-{s}")).unwrap();
        let stored: Vec<String> = manager
            .session(&id)
            .await
            .unwrap()
            .history(None)
            .await
            .unwrap()
            .into_iter()
            .map(|m| m.id)
            .collect();
        for ack in acknowledged
            .iter()
            .filter(|a| a.starts_with(&format!("crash-{s} ")))
        {
            let message = ack.split(' ').nth(1).unwrap();
            assert!(
                stored.iter().any(|m| m == message),
                "{ack} acknowledged but lost"
            );
        }
        let hits = manager
            .search(
                &SearchQuery::new("lighthouse")
                    .in_session(id.clone())
                    .limit(10_000),
            )
            .await
            .unwrap();
        assert_eq!(
            hits.len(),
            stored.len(),
            "crash-{s}: the index holds the store's messages"
        );
        stored_total += stored.len();
    }
    assert!(stored_total >= 400);
    assert_eq!(
        indexed_at_start, stored_total,
        "caught up at start, before any search"
    );
    assert_eq!(
        index
            .count(memory_core::ports::namespaces::MESSAGES)
            .await
            .unwrap() as usize,
        stored_total,
        "no document more or fewer than the store's messages"
    );
}

/// A searchable context block's entries are indexed in the general Tantivy index: found by
/// stemmed words through `search_context`, replaced by key, in the block's language.
#[tokio::test]
async fn searchable_blocks_search_through_tantivy() {
    use serde_json::json;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("memory.toml"),
        "[storage]\ntext = \"tantivy\"\n\n[memory]\nembedder = \"none\"\n\n\
         [[blocks]]\nlabel = \"knowledge\"\nkind = \"searchable\"\n\
         description = \"Project notes\"\nscope = \"shared\"\n",
    )
    .unwrap();
    let deployment = Deployment::open(dir.path()).unwrap();
    let manager = deployment.session_manager().await.unwrap();
    let id = manager.create(Default::default()).await.unwrap().id;
    let session = manager.session(&id).await.unwrap();
    let set = |content: &str| json!({"label": "knowledge", "content": content, "metadata": {"title": "Deploy day"}});
    let out = session
        .execute_tool("set_context", &set("Deploys happen on Fridays"))
        .await
        .unwrap();
    assert!(out.contains("Indexed"), "{out}");
    let search = json!({"label": "knowledge", "query": "deploying friday"});
    let found = session
        .execute_tool("search_context", &search)
        .await
        .unwrap();
    assert!(found.contains("Deploys happen on Fridays"), "{found}");
    session
        .execute_tool("set_context", &set("Deploys moved to Tuesdays"))
        .await
        .unwrap();
    let found = session
        .execute_tool("search_context", &search)
        .await
        .unwrap();
    assert!(
        !found.contains("Fridays"),
        "the entry was replaced: {found}"
    );
    let tuesday = json!({"label": "knowledge", "query": "tuesday"});
    let found = session
        .execute_tool("search_context", &tuesday)
        .await
        .unwrap();
    assert!(found.contains("Deploys moved to Tuesdays"), "{found}");
}

/// `[storage.tantivy] shared = true`: two deployments on one directory (as two `memory serve`
/// processes would be) both write the Tantivy indexes, and each finds at once what the other
/// wrote, forgot or deleted.
#[tokio::test]
async fn two_deployments_share_the_indexes_when_shared() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("memory.toml"),
        "[storage]\ntext = \"tantivy\"\n\n[storage.tantivy]\nshared = true\n\n\
         [memory]\nembedder = \"none\"\n",
    )
    .unwrap();
    let one = Deployment::open(dir.path()).unwrap();
    let two = Deployment::open(dir.path()).unwrap();
    let (sessions_one, sessions_two) = (
        one.session_manager().await.unwrap(),
        two.session_manager().await.unwrap(),
    );
    let id = sessions_one.create(Default::default()).await.unwrap().id;
    sessions_one
        .append(
            &id,
            UiMessage::text_message("u1", Speaker::User, "The herons nest by the river"),
            Parent::LatestLeaf,
        )
        .await
        .unwrap();
    sessions_two
        .append(
            &id,
            UiMessage::text_message("u2", Speaker::User, "Herons fish at dawn"),
            Parent::LatestLeaf,
        )
        .await
        .unwrap();
    for manager in [&sessions_one, &sessions_two] {
        let hits = manager.search(&SearchQuery::new("heron")).await.unwrap();
        assert_eq!(hits.len(), 2, "each finds both appends");
    }

    let (memory_one, _) = one.memory_service().await.unwrap();
    let (memory_two, _) = two.memory_service().await.unwrap();
    let remembered = memory_one
        .remember("home", note("The boiler was serviced in May."))
        .await
        .unwrap();
    let recall = || RecallRequest::new("boiler serviced", 5);
    assert_eq!(
        memory_two
            .recall("home", recall())
            .await
            .unwrap()
            .hits
            .len(),
        1
    );
    memory_two
        .forget("home", &remembered.id, "moved house")
        .await
        .unwrap();
    assert!(
        memory_one
            .recall("home", recall())
            .await
            .unwrap()
            .hits
            .is_empty()
    );

    sessions_two.delete(&id).await.unwrap();
    assert!(
        sessions_one
            .search(&SearchQuery::new("heron"))
            .await
            .unwrap()
            .is_empty()
    );
}
