//! Context-memory latencies: prompt rendering with 10 blocks and 1,000 listed skills, tool
//! generation, and a `set_context` call round trip on SQLite. Prints p50 / p99.
//!
//! `cargo bench -p memory-cli --bench context`
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use memory_core::SessionId;
use memory_core::ports::{BlockProvider, KeyValueStore, SkillStore, TextIndex};
use memory_engine::context::{
    BlockSpec, ContextTools, ContextWiring, StoredSkills, TextBlock, render_prompt,
};
use memory_sqlite::{
    SqliteConfig, SqliteDatabase, SqliteKeyValueStore, SqliteSkillStore, SqliteTextIndex,
};
use serde_json::json;

fn report(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let at =
        |p: f64| samples[((samples.len() - 1) as f64 * p).round() as usize].as_secs_f64() * 1e3;
    println!(
        "{name:<48} p50 {:>7.3} ms   p99 {:>7.3} ms   ({} runs)",
        at(0.5),
        at(0.99),
        samples.len()
    );
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = SqliteDatabase::open(SqliteConfig::new(dir.path().join("bench.db")))
        .await
        .unwrap();
    let skills = SqliteSkillStore::new(db.clone(), "skills");
    for i in 0..1_000 {
        skills
            .put(
                &format!("skill-{i:04}"),
                "# Steps\n1. Do the thing.",
                Some(format!("Playbook number {i}")),
            )
            .await
            .unwrap();
    }
    let mut specs = vec![
        BlockSpec::provider(
            "soul",
            BlockProvider::ReadOnly(Arc::new(TextBlock::new(
                "You are a careful assistant. ".repeat(20),
            ))),
        ),
        BlockSpec::searchable("knowledge"),
        BlockSpec::provider(
            "skills",
            BlockProvider::Skill(Arc::new(StoredSkills::new(
                Arc::new(skills) as Arc<dyn SkillStore>
            ))),
        ),
    ];
    for i in 0..7 {
        specs.push(
            BlockSpec::writable(format!("block{i}"))
                .description("Notes")
                .max_tokens(2_000),
        );
    }
    let wiring = ContextWiring {
        profiles: None,
        kv: Some(Arc::new(SqliteKeyValueStore::new(db.clone())) as Arc<dyn KeyValueStore>),
        index: Some(Arc::new(SqliteTextIndex::new(db.clone())) as Arc<dyn TextIndex>),
        specs,
        ..ContextWiring::default()
    };
    let blocks = wiring
        .blocks_for(&SessionId::new("bench").unwrap())
        .unwrap();
    for i in 0..7 {
        blocks
            .replace(&format!("block{i}"), &"A remembered fact. ".repeat(40))
            .await
            .unwrap();
    }
    let loaded = blocks.load().await.unwrap();
    let prompt = render_prompt(&loaded);
    println!(
        "prompt: {} blocks, {} bytes, 1,000 skills listed",
        loaded.len(),
        prompt.len()
    );

    let mut render = Vec::new();
    for _ in 0..2_000 {
        let t = Instant::now();
        std::hint::black_box(render_prompt(std::hint::black_box(&loaded)));
        render.push(t.elapsed());
    }
    report("render_prompt (10 blocks, 1,000 skills)", render);

    let mut tools = Vec::new();
    for _ in 0..2_000 {
        let t = Instant::now();
        std::hint::black_box(ContextTools::definitions(&blocks).await.unwrap());
        tools.push(t.elapsed());
    }
    report("tool definitions (4 tools)", tools);

    let mut set = Vec::new();
    for i in 0..2_000 {
        let args =
            json!({"label": "block0", "content": format!("fact number {i}"), "action": "replace"});
        let t = Instant::now();
        let out = ContextTools::execute(&blocks, "set_context", &args)
            .await
            .unwrap();
        set.push(t.elapsed());
        assert!(out.output.starts_with("Written to block0."));
    }
    report("set_context round trip on SQLite", set);
    db.close().await;
}
