//! Context blocks from `[[blocks]]`: each declaration mapped onto a provider.

use std::sync::Arc;

use memory_config::{BlockKindConfig, BlockSource, MemoryConfig, TokenizerConfig};
use memory_core::HeuristicTokenCounter;
use memory_core::ports::{BlockProvider, KeyValueStore, SkillStore, TextIndex, TokenCounter};
use memory_engine::context::{BlockSpec, ContextWiring, StoredSkills, TextBlock};

use crate::error::Result;

/// The token counter `memory.toml` names.
pub fn token_counter(config: &MemoryConfig) -> Result<Arc<dyn TokenCounter>> {
    match &config.tokenizer {
        TokenizerConfig::Heuristic => Ok(Arc::new(HeuristicTokenCounter)),
        TokenizerConfig::Tiktoken { model } => tiktoken(model),
    }
}

#[cfg(feature = "tiktoken")]
fn tiktoken(model: &str) -> Result<Arc<dyn TokenCounter>> {
    Ok(Arc::new(memory_tiktoken::TiktokenCounter::for_model(
        model,
    )?))
}

#[cfg(not(feature = "tiktoken"))]
fn tiktoken(_model: &str) -> Result<Arc<dyn TokenCounter>> {
    Err(crate::error::ComposeError::Invalid(
        "tokenizer = \"tiktoken:...\" needs tiktoken, which this build leaves out (rebuild with `--features tiktoken`)".into(),
    ))
}

#[cfg(feature = "fs")]
fn file_block(path: &std::path::Path) -> Result<BlockProvider> {
    Ok(BlockProvider::ReadOnly(Arc::new(
        memory_fs::FileBlock::new(path),
    )))
}

#[cfg(not(feature = "fs"))]
fn file_block(_path: &std::path::Path) -> Result<BlockProvider> {
    Err(crate::error::ComposeError::Invalid(
        "a block read from a file needs the `fs` adapter, which this build leaves out".into(),
    ))
}

#[cfg(feature = "fs")]
fn skill_directory(dir: &std::path::Path) -> Result<Arc<dyn SkillStore>> {
    Ok(Arc::new(memory_fs::MarkdownSkills::new(dir)))
}

#[cfg(not(feature = "fs"))]
fn skill_directory(_dir: &std::path::Path) -> Result<Arc<dyn SkillStore>> {
    Err(crate::error::ComposeError::Invalid(
        "skills from a directory need the `fs` adapter, which this build leaves out".into(),
    ))
}

/// Maps validated declarations onto providers; `stored_skills` gives the store of a skill
/// block without a directory.
pub fn wiring(
    config: &MemoryConfig,
    kv: Arc<dyn KeyValueStore>,
    index: Arc<dyn TextIndex>,
    stored_skills: &dyn Fn(&str) -> Result<Arc<dyn SkillStore>>,
) -> Result<ContextWiring> {
    let counter = token_counter(config)?;
    let mut specs = Vec::with_capacity(config.blocks.len());
    for block in &config.blocks {
        let skills = |store: Arc<dyn SkillStore>| {
            BlockSpec::provider(
                &block.label,
                BlockProvider::Skill(Arc::new(StoredSkills::new(store))),
            )
        };
        let mut spec = match (block.kind, &block.source) {
            (BlockKindConfig::Readonly, BlockSource::Text(text)) => BlockSpec::provider(
                &block.label,
                BlockProvider::ReadOnly(Arc::new(TextBlock::new(text))),
            ),
            (BlockKindConfig::Readonly, BlockSource::File(path)) => {
                BlockSpec::provider(&block.label, file_block(path)?)
            }
            (BlockKindConfig::Skill, BlockSource::Directory(dir)) => skills(skill_directory(dir)?),
            (BlockKindConfig::Skill, _) => skills(stored_skills(&block.label)?),
            (BlockKindConfig::Searchable, _) => BlockSpec::searchable(&block.label),
            (BlockKindConfig::Profile, _) => BlockSpec::profile(&block.label),
            (BlockKindConfig::Writable, _) | (BlockKindConfig::Readonly, _) => {
                BlockSpec::writable(&block.label)
            }
        };
        spec.description = block.description.clone();
        spec.max_tokens = block.max_tokens;
        spec.default_content = block.default_content.clone();
        spec.scope = block.scope;
        specs.push(spec);
    }
    Ok(ContextWiring {
        profiles: None,
        kv: Some(kv),
        index: Some(index),
        counter,
        specs,
    })
}
