//! The profile in the prompt: a read-only block with the bound profile's current
//! instructions, keyed facts and open tasks, chosen and ordered deterministically within
//! the block's token budget. It is read when the prompt is rendered, so it changes on a
//! refresh and never between turns of a frozen prompt.

use std::sync::Arc;

use async_trait::async_trait;
use memory_core::ports::{
    BlockProvider, ContextProvider, MemoryFilter, MemoryKind, MemoryRecord, TokenCounter,
};
use memory_core::{Result, SessionId};

use super::ProfileLink;
use crate::context::ProfileBlocks;
use crate::long_term::{MAX_LIST_PAGE, MemoryService};

/// The most memories of one kind the block considers (the oldest first of each order).
const MAX_PER_KIND: usize = 2_000;

/// One session's profile block.
#[derive(Clone)]
pub struct ProfileBlock {
    link: ProfileLink,
    session: SessionId,
    max_tokens: Option<usize>,
}

#[async_trait]
impl ContextProvider for ProfileBlock {
    async fn get(&self) -> Result<Option<String>> {
        let Some(profile) = self.link.profile_of(&self.session).await? else {
            return Ok(None);
        };
        render_profile(
            &self.link.memory,
            &profile,
            self.max_tokens,
            self.link.counter.as_ref(),
        )
        .await
    }
}

impl ProfileBlocks for ProfileLink {
    fn provider(&self, session: &SessionId, max_tokens: Option<usize>) -> BlockProvider {
        BlockProvider::ReadOnly(Arc::new(ProfileBlock {
            link: self.clone(),
            session: session.clone(),
            max_tokens,
        }))
    }
}

/// Every current (not superseded, not forgotten) memory of `kind`, at most
/// [`MAX_PER_KIND`].
async fn current(
    memory: &MemoryService,
    profile: &str,
    kind: MemoryKind,
) -> Result<Vec<MemoryRecord>> {
    let filter = MemoryFilter {
        kind: Some(kind),
        ..MemoryFilter::default()
    };
    let mut out = Vec::new();
    let mut cursor = None;
    loop {
        let page = memory.list(profile, &filter, cursor, MAX_LIST_PAGE).await?;
        out.extend(page.memories);
        match page.next_cursor {
            Some(next) if out.len() < MAX_PER_KIND => cursor = Some(next),
            _ => break,
        }
    }
    out.truncate(MAX_PER_KIND);
    Ok(out)
}

/// One line of the block: the memory's text on one line, after its key when it has one.
fn line(memory: &MemoryRecord) -> String {
    let text = memory
        .content
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    match &memory.key {
        Some(key) => format!("- {key}: {text}"),
        None => format!("- {text}"),
    }
}

/// The profile's block text: `Instructions`, `Facts` (keyed ones) and `Open tasks`, each
/// sorted (instructions and facts by key, then time and id; tasks by time and id), lines
/// added in that order while the whole stays within `max_tokens`. `None` when the profile
/// does not exist or holds none of them.
pub async fn render_profile(
    memory: &MemoryService,
    profile: &str,
    max_tokens: Option<usize>,
    counter: &dyn TokenCounter,
) -> Result<Option<String>> {
    if !memory.profiles().exists(profile).await? {
        return Ok(None);
    }
    let by_key = |a: &MemoryRecord, b: &MemoryRecord| {
        (a.key.as_deref(), a.recorded_at, a.id.as_str()).cmp(&(
            b.key.as_deref(),
            b.recorded_at,
            b.id.as_str(),
        ))
    };
    let mut instructions = current(memory, profile, MemoryKind::Instruction).await?;
    instructions.sort_by(by_key);
    let mut facts: Vec<MemoryRecord> = current(memory, profile, MemoryKind::Fact)
        .await?
        .into_iter()
        .filter(|m| m.key.is_some())
        .collect();
    facts.sort_by(by_key);
    let mut tasks = current(memory, profile, MemoryKind::Task).await?;
    tasks.sort_by(|a, b| (a.recorded_at, a.id.as_str()).cmp(&(b.recorded_at, b.id.as_str())));
    let mut out = String::new();
    let fits = |text: &str| max_tokens.is_none_or(|max| counter.count(text) <= max);
    'sections: for (title, memories) in [
        ("Instructions", &instructions),
        ("Facts", &facts),
        ("Open tasks", &tasks),
    ] {
        if memories.is_empty() {
            continue;
        }
        let mut section = format!("{title}:");
        let mut any = false;
        for memory in memories.iter() {
            let candidate = format!("{section}\n{}", line(memory));
            let whole = if out.is_empty() {
                candidate.clone()
            } else {
                format!("{out}\n\n{candidate}")
            };
            if !fits(&whole) {
                if any {
                    out = if out.is_empty() {
                        section
                    } else {
                        format!("{out}\n\n{section}")
                    };
                }
                break 'sections;
            }
            section = candidate;
            any = true;
        }
        out = if out.is_empty() {
            section
        } else {
            format!("{out}\n\n{section}")
        };
    }
    Ok((!out.is_empty()).then_some(out))
}
