//! The filesystem adapter passes the skill-store contract and reads front matter.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use memory_core::ports::{ContextProvider, SkillStore};
use memory_fs::{FileBlock, MarkdownSkills};
use memory_testkit::contract;

#[tokio::test]
async fn markdown_skills_pass_the_contract() {
    let dir = tempfile::tempdir().unwrap();
    contract::skill_store::run_all(&MarkdownSkills::new(dir.path().join("skills"))).await;
}

#[tokio::test]
async fn hand_written_files_are_listed_with_front_matter_descriptions() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("ops")).unwrap();
    std::fs::write(
        root.join("review.md"),
        "---\ndescription: Code review checklist\nauthor: ada\n---\n# Review\nRun tests.\n",
    )
    .unwrap();
    std::fs::write(
        root.join("ops/rollback.md"),
        "# Rollback\nNo front matter here.\n",
    )
    .unwrap();
    std::fs::write(root.join("notes.txt"), "not a skill").unwrap();
    std::fs::write(root.join(".hidden.md"), "hidden").unwrap();
    let skills = MarkdownSkills::new(root);
    let listed = skills.list().await.unwrap();
    let keys: Vec<_> = listed
        .iter()
        .map(|s| (s.key.as_str(), s.description.as_deref()))
        .collect();
    assert_eq!(
        keys,
        [
            ("ops/rollback", None),
            ("review", Some("Code review checklist"))
        ]
    );
    assert_eq!(
        skills.get("review").await.unwrap().unwrap().trim(),
        "# Review\nRun tests."
    );
    assert_eq!(
        skills.get("ops/rollback").await.unwrap().unwrap(),
        "# Rollback\nNo front matter here.\n"
    );
    for bad in ["../etc/passwd", "/abs", "", ".hidden", "a/../b"] {
        assert!(skills.get(bad).await.is_err(), "{bad}");
    }
    // A description with YAML-special characters survives a write and a read.
    skills
        .put(
            "tricky",
            "body",
            Some("Use: \"quotes\" # and hashes".into()),
        )
        .await
        .unwrap();
    let tricky = skills
        .list()
        .await
        .unwrap()
        .into_iter()
        .find(|s| s.key == "tricky")
        .unwrap();
    assert_eq!(
        tricky.description.as_deref(),
        Some("Use: \"quotes\" # and hashes")
    );
    assert_eq!(skills.get("tricky").await.unwrap().unwrap().trim(), "body");
    // A missing directory is an empty collection.
    assert!(
        MarkdownSkills::new(root.join("nope"))
            .list()
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn file_blocks_read_the_file_each_time() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("SOUL.md");
    std::fs::write(&path, "You are calm.\n").unwrap();
    let block = FileBlock::new(&path);
    assert_eq!(block.get().await.unwrap().as_deref(), Some("You are calm."));
    std::fs::write(&path, "You are brisk.").unwrap();
    assert_eq!(
        block.get().await.unwrap().as_deref(),
        Some("You are brisk.")
    );
    let missing = FileBlock::new(dir.path().join("missing.md"))
        .get()
        .await
        .unwrap_err();
    assert!(missing.is_not_found(), "{missing}");
    assert!(missing.to_string().contains("missing.md"));
}
