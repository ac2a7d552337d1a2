#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use memory_core::SessionId;
use memory_core::ports::{BlockProvider, KeyValueStore, SkillStore, TextIndex};
use memory_testkit::in_memory::{
    InMemoryKeyValueStore, InMemorySkillStore, InMemoryTextIndex, StaticBlock,
};
use memory_testkit::mocks::MockContextProvider;
use serde_json::{Value, json};

use super::*;

struct Fixture {
    kv: Arc<InMemoryKeyValueStore>,
    index: Arc<InMemoryTextIndex>,
    skills: Arc<InMemorySkillStore>,
}

impl Fixture {
    fn new() -> Self {
        Self {
            kv: Arc::new(InMemoryKeyValueStore::new()),
            index: Arc::new(InMemoryTextIndex::new()),
            skills: Arc::new(InMemorySkillStore::new()),
        }
    }

    fn wiring(&self) -> ContextWiring {
        let soul = BlockProvider::ReadOnly(Arc::new(TextBlock::new(
            "You are a careful coding assistant.",
        )));
        let skills = BlockProvider::Skill(Arc::new(StoredSkills::new(
            self.skills.clone() as Arc<dyn SkillStore>
        )));
        ContextWiring {
            profiles: None,
            kv: Some(self.kv.clone() as Arc<dyn KeyValueStore>),
            index: Some(self.index.clone() as Arc<dyn TextIndex>),
            specs: vec![
                BlockSpec::provider("soul", soul).description("Who you are"),
                BlockSpec::writable("memory")
                    .description("Learned facts")
                    .max_tokens(1100),
                BlockSpec::writable("todos").default_content("- [ ] read the task"),
                BlockSpec::searchable("knowledge").description("Project notes"),
                BlockSpec::provider("skills", skills).description("Loadable playbooks"),
            ],
            ..ContextWiring::default()
        }
    }

    fn blocks(&self, session: &str) -> ContextBlocks {
        self.wiring()
            .blocks_for(&SessionId::new(session).unwrap())
            .unwrap()
    }
}

/// Compares `actual` with a golden file; `UPDATE_GOLDEN=1` rewrites the file instead
/// (then review the diff before committing).
fn assert_golden(name: &str, actual: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src/context/golden")
        .join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, actual).unwrap();
    }
    let expected =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(
        actual,
        expected,
        "{} differs (UPDATE_GOLDEN=1 rewrites it)",
        path.display()
    );
}

#[tokio::test]
async fn prompt_matches_the_golden_file() {
    let f = Fixture::new();
    f.skills
        .put(
            "code-review",
            "# Review\nCheck tests first.",
            Some("Code review".into()),
        )
        .await
        .unwrap();
    f.skills
        .put("release", "# Release\nTag, build, publish.", None)
        .await
        .unwrap();
    let blocks = f.blocks("s1");
    blocks
        .replace("memory", "The user prefers tabs.\nThe repo uses Rust 2024.")
        .await
        .unwrap();
    blocks
        .set_entry(
            "knowledge",
            "Deploys run on Fridays.",
            Some("Deploy day"),
            None,
        )
        .await
        .unwrap();
    let prompt = blocks.refresh_system_prompt().await.unwrap();
    assert_golden("prompt.txt", &prompt);
}

#[tokio::test]
async fn headers_follow_the_reference_format() {
    let block = memory_core::ContextBlock {
        label: "memory".into(),
        description: Some("Learned facts".into()),
        content: String::new(),
        tokens: 495,
        max_tokens: Some(1100),
        kind: memory_core::BlockKind::Writable,
        scope: memory_core::BlockScope::Session,
    };
    assert_eq!(
        header(&block),
        "MEMORY (Learned facts) [45% — 495/1100 tokens] [writable]"
    );
    assert_eq!(SEPARATOR.chars().count(), 46);
    assert!(SEPARATOR.chars().all(|c| c == '═'));
    // An empty read-only block is skipped; an empty writable one renders.
    let empty_ro = memory_core::ContextBlock {
        kind: memory_core::BlockKind::ReadOnly,
        label: "soul".into(),
        description: None,
        max_tokens: None,
        tokens: 0,
        ..block.clone()
    };
    let empty_rw = memory_core::ContextBlock {
        label: "notes".into(),
        description: None,
        max_tokens: None,
        tokens: 0,
        ..block
    };
    assert_eq!(
        render_prompt(&[empty_ro, empty_rw]),
        format!("{SEPARATOR}\nNOTES [writable]\n{SEPARATOR}\n")
    );
    assert_eq!(render_prompt(&[]), "");
}

#[tokio::test]
async fn frozen_prompt_survives_writes_until_refresh() {
    let f = Fixture::new();
    let blocks = f.blocks("s1");
    let frozen = blocks.freeze_system_prompt().await.unwrap();
    blocks
        .replace("memory", "User's name is Ada.")
        .await
        .unwrap();
    assert_eq!(
        blocks.freeze_system_prompt().await.unwrap(),
        frozen,
        "writes never touch the frozen prompt"
    );
    assert!(!frozen.contains("Ada"));
    let refreshed = blocks.refresh_system_prompt().await.unwrap();
    assert!(refreshed.contains("User's name is Ada."));
    assert_eq!(blocks.freeze_system_prompt().await.unwrap(), refreshed);
}

#[tokio::test]
async fn stored_prompt_is_returned_after_restart_without_reading_providers() {
    let f = Fixture::new();
    let first = f.blocks("s1").freeze_system_prompt().await.unwrap();
    // A new process: same stores, and a provider that must not be read.
    let mut never = MockContextProvider::new();
    never.expect_get().times(0);
    let mut wiring = f.wiring();
    wiring.specs[0] = BlockSpec::provider("soul", BlockProvider::ReadOnly(Arc::new(never)));
    let restarted = wiring.blocks_for(&SessionId::new("s1").unwrap()).unwrap();
    assert_eq!(restarted.freeze_system_prompt().await.unwrap(), first);
}

#[tokio::test]
async fn an_empty_prompt_is_stored_and_distinguished_from_none() {
    let kv: Arc<dyn KeyValueStore> = Arc::new(InMemoryKeyValueStore::new());
    let blocks = ContextBlocks::new(vec![])
        .unwrap()
        .with_prompt_store(kv.clone(), "p");
    assert_eq!(blocks.freeze_system_prompt().await.unwrap(), "");
    assert_eq!(kv.get("p").await.unwrap(), Some(String::new()));
    let mut never = MockContextProvider::new();
    never.expect_get().times(0);
    let restarted = ContextBlocks::new(vec![BlockConfig::new(
        "soul",
        BlockProvider::ReadOnly(Arc::new(never)),
    )])
    .unwrap()
    .with_prompt_store(kv, "p");
    assert_eq!(restarted.freeze_system_prompt().await.unwrap(), "");
}

#[tokio::test]
async fn writes_enforce_read_only_and_budgets_and_append_like_the_reference() {
    let f = Fixture::new();
    let blocks = f.blocks("s1");
    let err = blocks.replace("soul", "evil").await.unwrap_err();
    assert!(
        matches!(BlockError::of(&err), Some(BlockError::ReadOnly { label }) if label == "soul")
    );
    assert_eq!(err.to_string(), "Block \"soul\" is readonly");
    let long = "word ".repeat(1_000);
    let err = blocks.replace("memory", &long).await.unwrap_err();
    assert!(
        matches!(
            BlockError::of(&err),
            Some(BlockError::OverBudget {
                max_tokens: 1100,
                ..
            })
        ),
        "{err}"
    );
    assert!(
        err.to_string()
            .starts_with("Block \"memory\" exceeds maxTokens: ")
    );
    assert_eq!(
        blocks.get("memory").await.unwrap().content,
        "",
        "a refused write changes nothing"
    );
    blocks.replace("memory", "fact1").await.unwrap();
    assert_eq!(
        blocks.append("memory", "fact2").await.unwrap().content,
        "fact1\nfact2"
    );
    assert_eq!(
        blocks.append("memory", "\nfact3").await.unwrap().content,
        "fact1\nfact2\nfact3"
    );
    let err = blocks.append("memory", &long).await.unwrap_err();
    assert!(matches!(
        BlockError::of(&err),
        Some(BlockError::OverBudget { .. })
    ));
    assert!(matches!(
        BlockError::of(&blocks.replace("ghost", "x").await.unwrap_err()),
        Some(BlockError::ReadOnly { .. })
    ));
    assert!(blocks.get("ghost").await.unwrap_err().is_not_found());
    assert!(
        blocks
            .replace("knowledge", "x")
            .await
            .unwrap_err()
            .to_string()
            .contains("keyed provider")
    );
}

#[tokio::test]
async fn defaults_initialise_lazily_and_return_after_reset() {
    let f = Fixture::new();
    let blocks = f.blocks("s1");
    assert_eq!(
        f.kv.get("session:s1:block:todos").await.unwrap(),
        None,
        "nothing written before the first read"
    );
    assert_eq!(
        blocks.get("todos").await.unwrap().content,
        "- [ ] read the task"
    );
    assert_eq!(
        f.kv.get("session:s1:block:todos").await.unwrap().as_deref(),
        Some("- [ ] read the task")
    );
    blocks.replace("todos", "- [x] done").await.unwrap();
    blocks.reset_all().await.unwrap();
    assert_eq!(
        blocks.get("todos").await.unwrap().content,
        "- [ ] read the task"
    );
}

#[tokio::test]
async fn shared_blocks_are_one_value_for_every_session() {
    let f = Fixture::new();
    let mut wiring = f.wiring();
    wiring.specs.push(BlockSpec::writable("user").shared());
    let a = wiring.blocks_for(&SessionId::new("a").unwrap()).unwrap();
    let b = wiring.blocks_for(&SessionId::new("b").unwrap()).unwrap();
    a.replace("user", "Prefers metric units").await.unwrap();
    a.replace("memory", "only in a").await.unwrap();
    assert_eq!(b.get("user").await.unwrap().content, "Prefers metric units");
    assert_eq!(b.get("memory").await.unwrap().content, "");
    wiring
        .delete_session(&SessionId::new("a").unwrap())
        .await
        .unwrap();
    assert_eq!(
        f.kv.get("shared:block:user").await.unwrap().as_deref(),
        Some("Prefers metric units")
    );
    assert_eq!(f.kv.get("session:a:block:memory").await.unwrap(), None);
}

#[tokio::test]
async fn tool_definitions_match_the_golden_file() {
    let f = Fixture::new();
    let blocks = f.blocks("s1");
    let tools = ContextTools::definitions(&blocks).await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "set_context",
            "load_context",
            "unload_context",
            "search_context"
        ]
    );
    let openai = serde_json::to_string_pretty(&ToolFormat::OpenAi.export(&tools)).unwrap();
    assert_golden("tools.openai.json", &(openai + "\n"));
    let anthropic = ToolFormat::Anthropic.export(&tools);
    assert_eq!(anthropic[0]["input_schema"], tools[0].parameters);
    let mcp = ToolFormat::Mcp.export(&tools);
    assert_eq!(
        mcp[3]["inputSchema"]["properties"]["label"]["enum"],
        json!(["knowledge"])
    );
    // Read-only blocks alone give no tools.
    let only_ro = ContextBlocks::new(vec![BlockConfig::new(
        "soul",
        BlockProvider::ReadOnly(Arc::new(StaticBlock(Some("x".into())))),
    )])
    .unwrap();
    assert!(
        ContextTools::definitions(&only_ro)
            .await
            .unwrap()
            .is_empty()
    );
}

async fn call(blocks: &ContextBlocks, name: &str, args: Value) -> String {
    ContextTools::execute(blocks, name, &args)
        .await
        .unwrap()
        .output
}

#[tokio::test]
async fn set_context_results_are_the_reference_strings() {
    let f = Fixture::new();
    let blocks = f.blocks("s1");
    assert_eq!(
        call(
            &blocks,
            "set_context",
            json!({"label": "memory", "content": "Likes tea"})
        )
        .await,
        "Written to memory. Usage: 0% (3/1100 tokens)"
    );
    assert_eq!(
        call(
            &blocks,
            "set_context",
            json!({"label": "todos", "content": "x", "action": "append"})
        )
        .await,
        "Written to todos. Usage: 10 tokens"
    );
    assert_eq!(
        blocks.get("todos").await.unwrap().content,
        "- [ ] read the task\nx"
    );
    assert_eq!(
        call(
            &blocks,
            "set_context",
            json!({"label": "soul", "content": "x"})
        )
        .await,
        "Error: Block \"soul\" is readonly"
    );
    assert_eq!(
        call(
            &blocks,
            "set_context",
            json!({"label": "nope", "content": "x"})
        )
        .await,
        "Error: block \"nope\" not found"
    );
    let over = call(
        &blocks,
        "set_context",
        json!({"label": "memory", "content": "w ".repeat(2_000)}),
    )
    .await;
    assert!(
        over.starts_with("Error: Block \"memory\" exceeds maxTokens: "),
        "{over}"
    );
    for bad in [
        json!({}),
        json!({"label": 3, "content": "x"}),
        json!({"label": "memory", "content": "x", "action": "delete"}),
        json!("str"),
    ] {
        let out = call(&blocks, "set_context", bad.clone()).await;
        assert!(
            out.starts_with("Error: invalid input: invalid arguments for set_context"),
            "{bad}: {out}"
        );
    }
    // Keyed: the title is the key; the same title updates in place.
    assert_eq!(call(&blocks, "set_context", json!({"label": "knowledge", "content": "Deploys on Fridays", "metadata": {"title": "Deploy day"}})).await, "Indexed \"deploy-day\" in knowledge.");
    call(&blocks, "set_context", json!({"label": "knowledge", "content": "Deploys on Tuesdays", "metadata": {"title": "Deploy day"}})).await;
    assert_eq!(
        call(
            &blocks,
            "search_context",
            json!({"label": "knowledge", "query": "deploys"})
        )
        .await,
        "[deploy-day]\nDeploys on Tuesdays"
    );
    assert_eq!(
        call(
            &blocks,
            "search_context",
            json!({"label": "knowledge", "query": "fridays"})
        )
        .await,
        "No results found."
    );
    assert_eq!(
        blocks.get("knowledge").await.unwrap().content,
        "1 entries indexed."
    );
    let untitled = call(
        &blocks,
        "set_context",
        json!({"label": "knowledge", "content": "Just content"}),
    )
    .await;
    assert!(
        untitled.starts_with("Indexed \"just-content-") && untitled.ends_with("\" in knowledge."),
        "{untitled}"
    );
    assert_eq!(
        call(
            &blocks,
            "search_context",
            json!({"label": "memory", "query": "x"})
        )
        .await,
        "Error: \"memory\" is not searchable. Searchable blocks: knowledge"
    );
    assert!(
        ContextTools::execute(&blocks, "frobnicate", &json!({}))
            .await
            .is_none()
    );
}

#[tokio::test]
async fn skills_load_unload_and_persist_across_instances() {
    let f = Fixture::new();
    f.skills
        .put(
            "code-review",
            "# Review\nRun the tests.",
            Some("Code review".into()),
        )
        .await
        .unwrap();
    let blocks = f.blocks("s1");
    assert_eq!(
        call(
            &blocks,
            "load_context",
            json!({"label": "skills", "key": "code-review"})
        )
        .await,
        "# Review\nRun the tests."
    );
    assert_eq!(
        call(
            &blocks,
            "load_context",
            json!({"label": "skills", "key": "nope"})
        )
        .await,
        "Not found: nope"
    );
    assert_eq!(
        call(
            &blocks,
            "load_context",
            json!({"label": "memory", "key": "x"})
        )
        .await,
        "Error: \"memory\" is not a skill block. Skill blocks: skills"
    );
    let restarted = f.blocks("s1");
    assert_eq!(
        restarted.loaded_skills().await.unwrap(),
        vec!["skills:code-review"]
    );
    let tools = ContextTools::definitions(&restarted).await.unwrap();
    assert!(
        tools[2]
            .description
            .ends_with(" Currently loaded: skills:code-review."),
        "{}",
        tools[2].description
    );
    let out = ContextTools::execute(
        &restarted,
        "unload_context",
        &json!({"label": "skills", "key": "code-review"}),
    )
    .await
    .unwrap();
    assert_eq!(
        out.output,
        "Unloaded \"code-review\" from skills. Context reclaimed."
    );
    assert_eq!(
        out.unloaded,
        Some(Unloaded {
            label: "skills".into(),
            key: "code-review".into()
        })
    );
    assert_eq!(
        call(
            &restarted,
            "unload_context",
            json!({"label": "skills", "key": "code-review"})
        )
        .await,
        "Skill \"code-review\" is not currently loaded in \"skills\"."
    );
    assert!(f.blocks("s1").loaded_skills().await.unwrap().is_empty());
    // set_context on a skill block writes a skill whose title doubles as its description.
    assert_eq!(
        call(
            &restarted,
            "set_context",
            json!({"label": "skills", "content": "Arr", "metadata": {"title": "Pirate style"}})
        )
        .await,
        "Indexed \"pirate-style\" in skills."
    );
    assert!(
        restarted
            .get("skills")
            .await
            .unwrap()
            .content
            .contains("- pirate-style: Pirate style")
    );
}

#[test]
fn keys_follow_the_reference() {
    assert_eq!(entry_key(Some("Pirate style"), "x"), "pirate-style");
    assert_eq!(
        entry_key(Some("  "), "x"),
        format!("x-{}", fnv1a_base36("x"))
    );
    let a = "a".repeat(70) + "one";
    let b = "a".repeat(70) + "two";
    assert_ne!(
        entry_key(None, &a),
        entry_key(None, &b),
        "same 60-char prefix, different keys"
    );
    assert!(entry_key(None, "日本語のテキスト").starts_with("entry-"));
    // 32-bit FNV-1a of "a" is 0xe40c292c.
    assert_eq!(fnv1a_base36("a"), format!("{}", radix36(0xe40c292c)));
}

fn radix36(mut n: u32) -> String {
    let digits = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    while n > 0 {
        out.push(digits[(n % 36) as usize]);
        n /= 36;
    }
    out.reverse();
    String::from_utf8(out).unwrap()
}

/// A store that lets other tasks run before every call, as a network round trip does, so
/// that two writers' reads and writes interleave deterministically.
struct Yielding(InMemoryKeyValueStore);

#[async_trait::async_trait]
impl KeyValueStore for Yielding {
    async fn get(&self, key: &str) -> memory_core::Result<Option<String>> {
        tokio::task::yield_now().await;
        self.0.get(key).await
    }
    async fn set(&self, key: &str, value: &str) -> memory_core::Result<()> {
        tokio::task::yield_now().await;
        self.0.set(key, value).await
    }
    async fn delete(&self, key: &str) -> memory_core::Result<bool> {
        self.0.delete(key).await
    }
    async fn keys(&self, prefix: &str) -> memory_core::Result<Vec<String>> {
        self.0.keys(prefix).await
    }
    async fn delete_prefix(&self, prefix: &str) -> memory_core::Result<u64> {
        self.0.delete_prefix(prefix).await
    }
    async fn compare_and_set(
        &self,
        key: &str,
        expected: Option<String>,
        value: &str,
    ) -> memory_core::Result<bool> {
        tokio::task::yield_now().await;
        self.0.compare_and_set(key, expected, value).await
    }
}

/// Two processes' views of one shared block (each its own `ContextBlocks`, as two servers
/// have): interleaved appends all land, none overwrites another, even though each view
/// cached the block before the other wrote.
#[tokio::test]
async fn concurrent_appends_to_a_shared_block_lose_nothing() {
    let kv: Arc<dyn KeyValueStore> = Arc::new(Yielding(InMemoryKeyValueStore::new()));
    let view = || {
        let provider = KvBlock::new(Arc::clone(&kv), "shared:memory");
        Arc::new(
            ContextBlocks::new(vec![BlockConfig::new(
                "memory",
                BlockProvider::Writable(Arc::new(provider)),
            )])
            .unwrap(),
        )
    };
    let (a, b) = (view(), view());
    a.load().await.unwrap();
    b.load().await.unwrap();
    let writers: Vec<_> = [a, b]
        .into_iter()
        .enumerate()
        .map(|(w, blocks)| {
            tokio::spawn(async move {
                for i in 0..25 {
                    blocks.append("memory", &format!("w{w}-{i}")).await.unwrap();
                    tokio::task::yield_now().await;
                }
            })
        })
        .collect();
    for writer in writers {
        writer.await.unwrap();
    }
    let stored = kv.get("shared:memory").await.unwrap().unwrap();
    let lines: Vec<&str> = stored.lines().collect();
    assert_eq!(lines.len(), 50, "{stored}");
    for w in 0..2 {
        for i in 0..25 {
            assert!(
                lines.contains(&format!("w{w}-{i}").as_str()),
                "w{w}-{i} lost"
            );
        }
    }
}
