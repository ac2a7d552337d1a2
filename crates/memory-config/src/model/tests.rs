#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use super::*;

fn err(text: &str) -> String {
    MemoryConfig::parse(text, Path::new("/nonexistent"))
        .unwrap_err()
        .to_string()
}

#[test]
fn the_shipped_example_is_valid() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/config/memory.toml");
    let config = MemoryConfig::load(&path).unwrap();
    let kinds: Vec<_> = config.blocks.iter().map(|b| b.kind).collect();
    assert!(kinds.contains(&BlockKindConfig::Readonly));
    assert!(kinds.contains(&BlockKindConfig::Writable));
    assert!(kinds.contains(&BlockKindConfig::Searchable));
    assert!(kinds.contains(&BlockKindConfig::Skill));
    assert!(kinds.contains(&BlockKindConfig::Profile));
    assert_eq!(config.sessions.profile.as_deref(), Some("default"));
}

#[test]
fn errors_name_the_line_and_the_key() {
    let e = err("[[blocks]]\nlabel = \"memory\"\nkind = \"writable\"\nmax_tokens = -5\n");
    assert_eq!(
        e,
        "memory.toml:4: `blocks[0].max_tokens`: must be a positive number"
    );
    let e = err(
        "[[blocks]]\nlabel = \"a\"\nkind = \"writable\"\n\n[[blocks]]\nlabel = \"a\"\nkind = \"writable\"\n",
    );
    assert_eq!(
        e,
        "memory.toml:6: `blocks[1].label`: block \"a\" is declared twice"
    );
    let e = err("[[blocks]]\nlabel = \"soul\"\nkind = \"readonly\"\nfile = \"missing.md\"\n");
    assert!(
        e.starts_with("memory.toml:4: `blocks[0].file`: no such file: /nonexistent/missing.md"),
        "{e}"
    );
    let e = err("[[blocks]]\nlabel = \"x\"\nkind = \"readonly\"\ntext = \"a\"\nfile = \"b\"\n");
    assert!(
        e.starts_with("memory.toml:5: `blocks[0].file`: give only one"),
        "{e}"
    );
    let e = err("[[blocks]]\nlabel = \"x\"\nkind = \"writable\"\ncolour = \"red\"\n");
    assert!(e.contains("line 4") && e.contains("colour"), "{e}");
    let e = err("[[blocks]]\nlabel = \"x\"\nkind = \"magic\"\n");
    assert!(e.contains("line 3") && e.contains("magic"), "{e}");
    let e = err("[[blocks]]\nlabel = \"x\"\nkind = \"writable\"\nscope = \"global\"\n");
    assert_eq!(
        e,
        "memory.toml:4: `blocks[0].scope`: expected \"session\" or \"shared\""
    );
    let e = err("tokenizer = \"bpe\"\n");
    assert!(e.starts_with("memory.toml:1: `tokenizer`"), "{e}");
    let e = err("[[blocks]]\nlabel = \"k\"\nkind = \"searchable\"\ndefault = \"x\"\n");
    assert!(e.starts_with("memory.toml:4: `blocks[0].default`"), "{e}");
}

#[test]
fn sources_resolve_against_the_config_directory() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("SOUL.md"), "hi").unwrap();
    std::fs::create_dir(dir.path().join("skills")).unwrap();
    let config = MemoryConfig::parse(
        "tokenizer = \"tiktoken:gpt-4o\"\n[[blocks]]\nlabel = \"soul\"\nkind = \"readonly\"\nfile = \"SOUL.md\"\n[[blocks]]\nlabel = \"skills\"\nkind = \"skill\"\ndirectory = \"skills\"\n[[blocks]]\nlabel = \"user\"\nkind = \"writable\"\nscope = \"shared\"\ndefault = \"unknown\"\n",
        dir.path(),
    )
    .unwrap();
    assert_eq!(
        config.tokenizer,
        TokenizerConfig::Tiktoken {
            model: "gpt-4o".into()
        }
    );
    assert_eq!(
        config.blocks[0].source,
        BlockSource::File(dir.path().join("SOUL.md"))
    );
    assert_eq!(
        config.blocks[1].source,
        BlockSource::Directory(dir.path().join("skills"))
    );
    assert_eq!(config.blocks[2].scope, memory_core::BlockScope::Shared);
    assert_eq!(config.blocks[2].default_content.as_deref(), Some("unknown"));
    assert_eq!(
        MemoryConfig::load_dir(&dir.path().join("none")).unwrap(),
        MemoryConfig::default()
    );
}

#[test]
fn llm_and_compaction_sections() {
    let config = MemoryConfig::parse(
        "[llm]\nbase_url = \"http://127.0.0.1:11434/v1\"\nmodel = \"llama3.1\"\n\n[compaction]\ncompact_after = 8000\n",
        Path::new("."),
    )
    .unwrap();
    let llm = config.llm.unwrap();
    assert_eq!(llm.model, "llama3.1");
    assert_eq!(llm.api_key_env, "OPENAI_API_KEY");
    assert_eq!(config.compaction.compact_after, Some(8000));
    assert_eq!(config.compaction.protect_head, 3);
    let e = err("[llm]\nbase_url = \"ftp://x\"\nmodel = \"m\"\n");
    assert!(
        e.starts_with("memory.toml:2: `llm.base_url`")
            || e.starts_with("memory.toml:1: `llm.base_url`"),
        "{e}"
    );
    assert!(err("[llm]\nmodel = \"m\"\n").contains("base_url"));
    assert_eq!(
        (llm.structured_output, llm.deadline_secs),
        (crate::StructuredOutputMode::Auto, 180)
    );
}

#[test]
fn structured_output_and_deadline_are_settings() {
    let config = MemoryConfig::parse(
        "[llm]\nbase_url = \"http://127.0.0.1:8080/v1\"\nmodel = \"m\"\nstructured_output = \"json_object\"\ndeadline_secs = 30\n",
        Path::new("."),
    )
    .unwrap();
    let llm = config.llm.unwrap();
    assert_eq!(
        llm.structured_output,
        crate::StructuredOutputMode::JsonObject
    );
    assert_eq!(llm.deadline_secs, 30);
    let e = err("[llm]\nbase_url = \"http://x/v1\"\nmodel = \"m\"\nstructured_output = \"xml\"\n");
    assert!(e.contains("structured_output"), "{e}");
}

#[test]
fn the_memory_section_picks_the_embedder_and_stage_models() {
    let config = MemoryConfig::parse(
        "[memory]\nembedder = \"openai\"\nembedding_model = \"text-embedding-3-small\"\nembedding_dimensions = 1536\nsynthesis_model = \"big\"\naffinity_header = \"\"\n",
        Path::new("/nonexistent"),
    )
    .unwrap();
    assert_eq!(config.memory.embedder, EmbedderChoice::Openai);
    assert_eq!(config.memory.embedding_dimensions, Some(1536));
    assert_eq!(config.memory.synthesis_model.as_deref(), Some("big"));
    assert_eq!(config.memory.affinity_header.as_deref(), Some(""));
    let default = MemoryConfig::parse("", Path::new("/nonexistent")).unwrap();
    assert_eq!(default.memory.embedder, EmbedderChoice::Auto);
    let e = err("[memory]\nembedder = \"magic wand!\"\n");
    assert!(e.contains("magic wand!"), "{e}");
    let e = err("[memory]\nembeder = \"local\"\n");
    assert!(e.contains("embeder"), "{e}");
}

#[test]
fn the_memory_section_names_catalogue_models_and_a_reranker() {
    let config = MemoryConfig::parse(
        "[memory]\nembedder = \"BAAI/bge-small-en-v1.5\"\nreranker = \"ms-marco-MiniLM-L-6-v2\"\nrerank_depth = 20\nconsolidate_after = 0\n",
        Path::new("/nonexistent"),
    )
    .unwrap();
    assert_eq!(
        config.memory.embedder,
        EmbedderChoice::Model("BAAI/bge-small-en-v1.5".into())
    );
    assert_eq!(
        config.memory.reranker.as_deref(),
        Some("ms-marco-MiniLM-L-6-v2")
    );
    assert_eq!(config.memory.rerank_depth, Some(20));
    assert_eq!(config.memory.consolidate_after, Some(0));
    let default = MemoryConfig::parse("", Path::new("/nonexistent")).unwrap();
    assert_eq!(default.memory.reranker, None);
    let e = err("[memory]\nreranker = \"../../etc\"\n");
    assert!(e.contains("reranker"), "{e}");
    let e = err("[memory]\nembedder = \"a/b/c\"\n");
    assert!(e.contains("a/b/c"), "{e}");
}

mod storage {
    use std::path::Path;

    use super::err;
    use crate::{Backend, LancedbLocation, MemoryConfig, Role, StorageConfig};

    #[test]
    fn no_section_means_everything_embedded_in_the_data_dir() {
        let config = MemoryConfig::parse("", Path::new("/data")).unwrap();
        assert_eq!(config.storage, None);
        let storage = config.storage(Path::new("/data"));
        assert_eq!(storage, StorageConfig::embedded(Path::new("/data")));
        assert_eq!(
            storage.backends(),
            [Backend::Sqlite, Backend::Tantivy, Backend::Fs]
        );
        assert_eq!(storage.sqlite.path, Path::new("/data/memory.db"));
        let tantivy = storage.tantivy.as_ref().unwrap();
        assert_eq!(tantivy.path, Path::new("/data/tantivy"));
        assert!(
            tantivy.shared,
            "many processes share one data dir by default"
        );
        assert_eq!(
            MemoryConfig::parse("[storage]\nrecords = \"sqlite\"\n", Path::new("/data"))
                .unwrap()
                .storage(Path::new("/data")),
            storage,
            "an empty section is the same default"
        );
    }

    #[test]
    fn each_role_picks_its_backend_with_settings_and_defaults() {
        let config = MemoryConfig::parse(
            r#"
[storage]
records = "postgres"
text = "tantivy"
vectors = "lancedb"
jobs = "redis"
kv = "redis"
blobs = "s3"

[storage.postgres]
url_env = "PG_URL"

[storage.s3]
bucket = "agent-memory"
endpoint = "http://127.0.0.1:8333"
region = "auto"
"#,
            Path::new("/etc/memory"),
        )
        .unwrap();
        let storage = config.storage(Path::new("/ignored"));
        assert_eq!(storage.backend(Role::Records), Backend::Postgres);
        assert_eq!(
            storage.backend(Role::Sessions),
            Backend::Postgres,
            "the session tier follows the records unless named"
        );
        assert_eq!(storage.backend(Role::Text), Backend::Tantivy);
        assert_eq!(storage.backend(Role::Vectors), Backend::Lancedb);
        assert_eq!(storage.backend(Role::Jobs), Backend::Redis);
        assert_eq!(storage.backend(Role::Kv), Backend::Redis);
        assert_eq!(storage.backend(Role::Blobs), Backend::S3);
        let pg = storage.postgres.unwrap();
        assert_eq!(
            (pg.url_env.as_str(), pg.schema.as_str()),
            ("PG_URL", "memory")
        );
        let redis = storage.redis.unwrap();
        assert_eq!(redis.url_env, "MEMORY_REDIS_URL");
        assert_eq!(redis.key_prefix, "memory:");
        let s3 = storage.s3.unwrap();
        assert_eq!(s3.bucket, "agent-memory");
        assert_eq!(s3.access_key_env, "AWS_ACCESS_KEY_ID");
        assert_eq!(
            storage.tantivy.unwrap().path,
            Path::new("/etc/memory/tantivy")
        );
        let lancedb = storage.lancedb.unwrap();
        assert_eq!(
            lancedb.location,
            LancedbLocation::Directory("/etc/memory/lancedb".into())
        );
        assert_eq!(
            (
                lancedb.index_threshold,
                lancedb.field_index_threshold,
                lancedb.exact_filter_limit,
                lancedb.nprobes,
                lancedb.refine_factor
            ),
            (100_000, 10_000, 5_000, 80, 10)
        );
    }

    #[test]
    fn lancedb_lives_on_disk_or_in_the_s3_bucket() {
        let parse = |toml: &str| MemoryConfig::parse(toml, Path::new("/etc/memory"));
        let s3 = "[storage.s3]\nbucket = \"b\"\nprefix = \"p/\"\n";
        let config = parse(&format!(
            "[storage]\nvectors = \"lancedb\"\n[storage.lancedb]\nlocation = \"s3\"\n\
             index_threshold = 5000\nfield_index_threshold = 700\nexact_filter_limit = 0\n\
             nprobes = 8\n\
             refine_factor = 3\n{s3}"
        ))
        .unwrap();
        let lancedb = config.storage(Path::new("/x")).lancedb.unwrap();
        assert_eq!(
            lancedb.location,
            LancedbLocation::S3 {
                prefix: "lancedb/".into()
            }
        );
        assert_eq!(
            (
                lancedb.index_threshold,
                lancedb.field_index_threshold,
                lancedb.exact_filter_limit,
                lancedb.nprobes,
                lancedb.refine_factor
            ),
            (5_000, 700, 0, 8, 3)
        );
        for (toml, key) in [
            (
                "[storage.lancedb]\nlocation = \"s3\"\n".to_owned(),
                "storage.lancedb.location",
            ),
            (
                format!("[storage.lancedb]\nlocation = \"s3\"\npath = \"x\"\n{s3}"),
                "storage.lancedb.path",
            ),
            (
                format!("[storage.lancedb]\nlocation = \"s3\"\nprefix = \"x\"\n{s3}"),
                "storage.lancedb.prefix",
            ),
            (
                "[storage.lancedb]\nprefix = \"x/\"\n".to_owned(),
                "storage.lancedb.prefix",
            ),
            (
                "[storage.lancedb]\nlocation = \"gcs\"\n".to_owned(),
                "storage.lancedb.location",
            ),
            (
                "[storage.lancedb]\nnprobes = 0\n".to_owned(),
                "storage.lancedb.nprobes",
            ),
        ] {
            let error = parse(&format!("[storage]\nvectors = \"lancedb\"\n{toml}"))
                .unwrap_err()
                .to_string();
            assert!(error.contains(key), "{key}: {error}");
        }
    }

    #[test]
    fn tantivy_takes_a_language_per_deployment_and_per_profile() {
        let config = MemoryConfig::parse(
            r#"
[storage]
text = "tantivy"

[storage.tantivy]
language = "french"
commit_interval_ms = 5

[storage.tantivy.profile_languages]
kenji = "cjk"
"#,
            Path::new("/etc/memory"),
        )
        .unwrap();
        let tantivy = config.storage(Path::new("/ignored")).tantivy.unwrap();
        assert_eq!(tantivy.language, memory_core::TextLanguage::French);
        assert_eq!(tantivy.commit_interval_ms, 5);
        assert_eq!(
            tantivy.profile_languages.get("kenji"),
            Some(&memory_core::TextLanguage::Cjk)
        );
        let defaults = MemoryConfig::parse("[storage]\ntext = \"tantivy\"\n", Path::new("/d"))
            .unwrap()
            .storage(Path::new("/ignored"))
            .tantivy
            .unwrap();
        assert_eq!(defaults.language, memory_core::TextLanguage::English);
        assert_eq!(defaults.commit_interval_ms, 0);

        let unknown =
            err("[storage]\ntext = \"tantivy\"\n[storage.tantivy]\nlanguage = \"klingon\"\n");
        assert!(
            unknown.contains("`storage.tantivy.language`") && unknown.contains("cjk"),
            "{unknown}"
        );
        let bad_profile = err("[storage.tantivy.profile_languages]\n\"../x\" = \"cjk\"\n");
        assert!(bad_profile.contains("profile_languages"), "{bad_profile}");
        let slow = err("[storage.tantivy]\ncommit_interval_ms = 60000\n");
        assert!(slow.contains("commit_interval_ms"), "{slow}");
    }

    #[test]
    fn a_backend_that_cannot_serve_a_role_is_refused_with_the_key() {
        assert_eq!(
            err("[storage]\nvectors = \"tantivy\"\n"),
            "memory.toml:1: `storage.vectors`: tantivy cannot serve vectors; it serves text, session_text, profile_text"
        );
        assert!(err("[storage]\nrecords = \"s3\"\n").contains("`storage.records`"));
        assert_eq!(
            err("[storage]\nrecords = \"redis\"\n"),
            "memory.toml:1: `storage.records`: redis cannot serve records; it serves sessions, jobs, kv"
        );
    }

    #[test]
    fn the_session_tier_can_live_apart_from_the_records() {
        let config = MemoryConfig::parse(
            "[storage]\nrecords = \"postgres\"\nsessions = \"redis\"\n",
            Path::new("/etc/memory"),
        )
        .unwrap();
        let storage = config.storage(Path::new("/ignored"));
        assert_eq!(storage.backend(Role::Records), Backend::Postgres);
        assert_eq!(storage.backend(Role::Sessions), Backend::Redis);
        assert!(storage.redis.is_some() && storage.postgres.is_some());
        let embedded = MemoryConfig::parse("", Path::new("/etc/memory")).unwrap();
        assert_eq!(
            embedded.storage(Path::new("/d")).backend(Role::Sessions),
            Backend::Sqlite
        );
        assert!(err("[storage]\ntext = \"elastic\"\n").contains("unknown variant"));
        assert!(err("[storage]\nrecord = \"sqlite\"\n").contains("unknown field"));
    }

    #[test]
    fn the_session_messages_index_follows_the_text_unless_named() {
        let storage = |toml: &str| {
            MemoryConfig::parse(toml, Path::new("/etc/memory"))
                .unwrap()
                .storage(Path::new("/ignored"))
        };
        let both = storage("[storage]\ntext = \"tantivy\"\n");
        assert_eq!(both.backend(Role::Text), Backend::Tantivy);
        assert_eq!(both.backend(Role::SessionText), Backend::Tantivy);
        let apart = storage("[storage]\ntext = \"tantivy\"\nsession_text = \"sqlite\"\n");
        assert_eq!(apart.backend(Role::Text), Backend::Tantivy);
        assert_eq!(apart.backend(Role::SessionText), Backend::Sqlite);
        assert!(apart.tantivy.is_some());
        let only_sessions = storage("[storage]\nsession_text = \"tantivy\"\n");
        assert_eq!(only_sessions.backend(Role::Text), Backend::Sqlite);
        assert!(
            only_sessions.tantivy.is_some(),
            "settings for the role that uses it"
        );
        assert_eq!(storage("").backend(Role::SessionText), Backend::Sqlite);
        assert_eq!(
            err("[storage]\nsession_text = \"redis\"\n"),
            "memory.toml:1: `storage.session_text`: redis cannot serve session_text; it serves sessions, jobs, kv"
        );
    }

    #[test]
    fn the_profiles_indexes_follow_the_text_unless_named() {
        let storage = |toml: &str| {
            MemoryConfig::parse(toml, Path::new("/etc/memory"))
                .unwrap()
                .storage(Path::new("/ignored"))
        };
        let all = storage("[storage]\ntext = \"tantivy\"\n");
        assert_eq!(all.backend(Role::ProfileText), Backend::Tantivy);
        let profiles = storage("[storage]\nprofile_text = \"tantivy\"\n");
        assert_eq!(profiles.backend(Role::ProfileText), Backend::Tantivy);
        assert_eq!(profiles.backend(Role::Text), Backend::Sqlite);
        assert_eq!(profiles.backend(Role::SessionText), Backend::Sqlite);
        assert!(
            profiles.tantivy.is_some(),
            "settings for the role that uses it"
        );
        let apart = storage("[storage]\ntext = \"tantivy\"\nprofile_text = \"sqlite\"\n");
        assert_eq!(apart.backend(Role::ProfileText), Backend::Sqlite);
        assert!(!apart.profile_text_defaulted);
        // Neither named: Tantivy beside embedded records, text's backend beside others.
        let default = storage("");
        assert_eq!(default.backend(Role::ProfileText), Backend::Tantivy);
        assert!(default.profile_text_defaulted);
        let named_text = storage("[storage]\ntext = \"sqlite\"\n");
        assert_eq!(named_text.backend(Role::ProfileText), Backend::Sqlite);
        assert!(named_text.tantivy.is_none(), "no role uses Tantivy");
        let on_postgres = storage("[storage]\nrecords = \"postgres\"\n");
        assert_eq!(on_postgres.backend(Role::ProfileText), Backend::Sqlite);
        assert!(on_postgres.tantivy.is_none());
        // A build without Tantivy moves only a defaulted choice.
        let without = default.without_tantivy_default();
        assert_eq!(without.backend(Role::ProfileText), Backend::Sqlite);
        assert!(without.tantivy.is_none());
        let named = profiles.clone().without_tantivy_default();
        assert_eq!(named.backend(Role::ProfileText), Backend::Tantivy);
        assert_eq!(
            err("[storage]\nprofile_text = \"lancedb\"\n"),
            "memory.toml:1: `storage.profile_text`: lancedb cannot serve profile_text; it serves vectors"
        );
    }

    #[test]
    fn secrets_are_named_by_environment_variable_never_written_inline() {
        let e = err(
            "[storage]\nrecords = \"postgres\"\n[storage.postgres]\nurl_env = \"postgres://u:p@h/db\"\n",
        );
        assert!(e.contains("`storage.postgres.url_env`"), "{e}");
        assert!(e.contains("environment variable"), "{e}");
        assert!(err("[storage]\nblobs = \"s3\"\n").contains("`storage.s3`"));
    }
}

#[test]
fn sessions_bind_to_a_profile_with_memory_tools() {
    let config = MemoryConfig::parse(
        "[sessions]\nprofile = \"assistant\"\nmemory_tools = [\"recall\", \"forget\"]\n\n\
         [[blocks]]\nlabel = \"profile\"\nkind = \"profile\"\nmax_tokens = 300\n",
        Path::new("/nonexistent"),
    )
    .unwrap();
    assert_eq!(config.sessions.profile.as_deref(), Some("assistant"));
    assert_eq!(
        config.sessions.memory_tools,
        vec![MemoryToolConfig::Recall, MemoryToolConfig::Forget]
    );
    assert_eq!(config.blocks[0].kind, BlockKindConfig::Profile);
    assert_eq!(config.blocks[0].max_tokens, Some(300));
    let defaults = MemoryConfig::parse("", Path::new("/nonexistent")).unwrap();
    assert_eq!(defaults.sessions.profile, None);
    assert_eq!(
        defaults.sessions.memory_tools,
        vec![MemoryToolConfig::Recall, MemoryToolConfig::Remember]
    );
    let e = err("[sessions]\nprofile = \"no spaces\"\n");
    assert!(e.contains("sessions.profile"), "{e}");
    let e = err("[[blocks]]\nlabel = \"p\"\nkind = \"profile\"\ntext = \"x\"\n");
    assert!(e.contains("not allowed for a profile block"), "{e}");
}

#[test]
fn open_profiles_bounds_the_profiles_open_at_once() {
    let dir = Path::new("/data");
    let default = MemoryConfig::parse("", dir).unwrap().storage(dir);
    assert_eq!(default.open_profiles, 16);
    assert_eq!(default.profile_idle_secs, 30);
    let set = MemoryConfig::parse(
        "[storage]\nopen_profiles = 64\nprofile_idle_secs = 5\n",
        dir,
    )
    .unwrap()
    .storage(dir);
    assert_eq!(set.open_profiles, 64);
    assert_eq!(set.profile_idle_secs, 5);
    let e = err("[storage]\nopen_profiles = 0\n");
    assert!(
        e.contains("storage.open_profiles") && e.contains("at least 1"),
        "{e}"
    );
}

#[test]
fn profile_page_size_is_a_power_of_two_sqlite_takes() {
    let dir = Path::new("/data");
    let default = MemoryConfig::parse("", dir).unwrap().storage(dir);
    assert_eq!(default.sqlite.profile_page_size, 512);
    let set = MemoryConfig::parse("[storage.sqlite]\nprofile_page_size = 4096\n", dir)
        .unwrap()
        .storage(dir);
    assert_eq!(set.sqlite.profile_page_size, 4096);
    for bad in ["1000", "256", "131072"] {
        let e = err(&format!("[storage.sqlite]\nprofile_page_size = {bad}\n"));
        assert!(
            e.contains("storage.sqlite.profile_page_size") && e.contains(bad),
            "{e}"
        );
    }
}

#[test]
fn the_default_profile_block_can_be_sized_or_left_out() {
    let dir = Path::new("/data");
    let default = MemoryConfig::parse("", dir).unwrap().sessions;
    assert!(default.profile_block);
    assert_eq!(default.profile_block_tokens, 1_000);
    let set = MemoryConfig::parse(
        "[sessions]\nprofile_block = false\nprofile_block_tokens = 300\n",
        dir,
    )
    .unwrap()
    .sessions;
    assert!(!set.profile_block);
    assert_eq!(set.profile_block_tokens, 300);
    let e = err("[sessions]\nprofile_block_tokens = 0\n");
    assert!(e.contains("sessions.profile_block_tokens"), "{e}");
}
