//! The profile in the prompt: a read-only block with the bound profile's current
//! instructions, then the facts and open tasks that matter most now (by
//! [`super::block_score`]), chosen and ordered deterministically within the block's token
//! budget. It is read when the prompt is rendered, so it changes on a
//! refresh and never between turns of a frozen prompt.

use std::sync::Arc;

use async_trait::async_trait;
use memory_core::ports::{
    BlockProvider, ContextProvider, MemoryFilter, MemoryKind, MemoryRecord, TokenCounter,
};
use memory_core::{Result, SessionId};

use serde::Serialize;

use super::ProfileLink;
use super::block_score::{BlockScore, block_score};
use crate::context::ProfileBlocks;
use crate::long_term::{MAX_LIST_PAGE, MemoryService};

/// The most facts and open tasks the block keeps in hand while it reads the profile: the
/// best-scored ones (see [`super::block_score`]), however many the profile holds. Far more
/// than a block's budget shows.
const MAX_CANDIDATES: usize = 1_000;

/// The most instructions the block reads (instructions come first, all of them while they
/// fit).
const MAX_INSTRUCTIONS: usize = 1_000;

/// Lines tried after the first that did not fit before the block is complete.
const MISSES_BEFORE_DONE: usize = 64;

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

/// Calls `each` with every current (not superseded, not forgotten, not expired) memory of
/// `kind`, page by page.
async fn each_current(
    memory: &MemoryService,
    profile: &str,
    kind: MemoryKind,
    mut each: impl FnMut(MemoryRecord),
) -> Result<()> {
    let filter = MemoryFilter {
        kind: Some(kind),
        ..MemoryFilter::default()
    };
    let mut cursor = None;
    loop {
        let page = memory.list(profile, &filter, cursor, MAX_LIST_PAGE).await?;
        page.memories.into_iter().for_each(&mut each);
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(()),
        }
    }
}

/// One fact or open task the block considered, with its score.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BlockCandidate {
    /// The memory.
    pub memory: MemoryRecord,
    /// Its score and the parts of it.
    pub score: BlockScore,
    /// Whether the block shows it.
    pub chosen: bool,
}

/// What the block shows and why: the text, the instructions it shows, and the best-scored
/// facts and open tasks it considered (at most [`MAX_CANDIDATES`]), best first, each marked
/// chosen or not.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BlockChoice {
    /// The block's text; `None` when the profile holds nothing the block shows.
    pub text: Option<String>,
    /// The instant the scores are of.
    pub at: memory_core::Timestamp,
    /// Current instructions shown (by key).
    pub instructions: Vec<MemoryRecord>,
    /// The profile's digest, when the block shows it (its memories did not all fit).
    pub digest: Option<crate::long_term::ProfileDigest>,
    /// Facts and open tasks, best score first.
    pub candidates: Vec<BlockCandidate>,
}

/// The best-first order of candidates: score, then key, then id (the same in every process).
fn best_first(a: &BlockCandidate, b: &BlockCandidate) -> std::cmp::Ordering {
    b.score
        .score
        .total_cmp(&a.score.score)
        .then_with(|| a.memory.key.cmp(&b.memory.key))
        .then_with(|| a.memory.id.cmp(&b.memory.id))
}

/// Keeps the best [`MAX_CANDIDATES`] of what `each_current` reads.
struct Best {
    now: memory_core::Timestamp,
    kept: Vec<BlockCandidate>,
}

impl Best {
    fn offer(&mut self, memory: MemoryRecord) {
        let score = block_score(&memory, self.now);
        self.kept.push(BlockCandidate {
            memory,
            score,
            chosen: false,
        });
        // Amortised: sort and cut when twice the bound is held.
        if self.kept.len() >= 2 * MAX_CANDIDATES {
            self.cut();
        }
    }

    fn cut(&mut self) {
        self.kept.sort_by(best_first);
        self.kept.truncate(MAX_CANDIDATES);
    }
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

/// What the block is made of: the instructions shown, the digest when it is shown, and
/// the chosen facts and tasks.
struct Parts<'a> {
    instructions: &'a [&'a MemoryRecord],
    summary: Option<&'a str>,
}

impl Parts<'_> {
    /// The block's text with these facts and tasks; sections without lines are left out.
    fn render(&self, facts: &[&MemoryRecord], tasks: &[&MemoryRecord]) -> String {
        let mut sections = Vec::new();
        let lines = |memories: &[&MemoryRecord]| {
            memories
                .iter()
                .map(|m| line(m))
                .collect::<Vec<_>>()
                .join("\n")
        };
        if !self.instructions.is_empty() {
            sections.push(format!("Instructions:\n{}", lines(self.instructions)));
        }
        if let Some(summary) = self.summary {
            let summary = summary.split_whitespace().collect::<Vec<_>>().join(" ");
            sections.push(format!("Summary:\n{summary}"));
        }
        for (title, memories) in [("Facts", facts), ("Open tasks", tasks)] {
            if !memories.is_empty() {
                sections.push(format!("{title}:\n{}", lines(memories)));
            }
        }
        sections.join("\n\n")
    }

    /// The candidates chosen best first while the whole fits (a line that does not fit is
    /// skipped, and after [`MISSES_BEFORE_DONE`] such lines in a row the block is done).
    fn choose(&self, candidates: &[BlockCandidate], fits: &dyn Fn(&str) -> bool) -> Vec<usize> {
        let mut chosen: Vec<usize> = Vec::new();
        if !fits(&self.render(&[], &[])) {
            return chosen;
        }
        let mut misses = 0;
        for i in 0..candidates.len() {
            chosen.push(i);
            let (facts, tasks) = split(candidates, &chosen);
            if fits(&self.render(&facts, &tasks)) {
                misses = 0;
            } else {
                chosen.pop();
                misses += 1;
                if misses > MISSES_BEFORE_DONE {
                    break;
                }
            }
        }
        chosen
    }
}

/// The profile's block and how it was chosen: every current instruction first (by key,
/// then time and id) while they fit, then the facts and open tasks in the order of their
/// score ([`super::block_score`]), each added when the whole still fits `max_tokens`.
/// When they do not all fit and the profile has a digest
/// ([`MemoryService::digest`]), the digest is shown after the instructions, under
/// `Summary`, and the best facts and tasks fill what is left. Facts are shown under `Facts`
/// and tasks under `Open tasks`, each best first. `None` as the text when the profile holds
/// none of them; `NotFound` when the profile does not exist.
pub async fn choose_profile_block(
    memory: &MemoryService,
    profile: &str,
    max_tokens: Option<usize>,
    counter: &dyn TokenCounter,
) -> Result<BlockChoice> {
    if !memory.profiles().exists(profile).await? {
        return Err(memory_core::MemoryError::not_found("profile", profile));
    }
    let now = memory.now();
    let mut instructions = Vec::new();
    each_current(memory, profile, MemoryKind::Instruction, |m| {
        if instructions.len() < MAX_INSTRUCTIONS {
            instructions.push(m);
        }
    })
    .await?;
    instructions.sort_by(|a, b| {
        (a.key.as_deref(), a.recorded_at, a.id.as_str()).cmp(&(
            b.key.as_deref(),
            b.recorded_at,
            b.id.as_str(),
        ))
    });
    let mut best = Best {
        now,
        kept: Vec::new(),
    };
    each_current(memory, profile, MemoryKind::Fact, |m| best.offer(m)).await?;
    each_current(memory, profile, MemoryKind::Task, |m| best.offer(m)).await?;
    best.cut();
    let mut candidates = best.kept;
    let fits = |text: &str| max_tokens.is_none_or(|max| counter.count(text) <= max);

    let mut shown: Vec<&MemoryRecord> = Vec::new();
    for m in &instructions {
        shown.push(m);
        if !fits(
            &Parts {
                instructions: &shown,
                summary: None,
            }
            .render(&[], &[]),
        ) {
            shown.pop();
            break;
        }
    }
    let all_instructions = shown.len() == instructions.len();
    let mut parts = Parts {
        instructions: &shown,
        summary: None,
    };
    let mut chosen = match all_instructions {
        true => parts.choose(&candidates, &fits),
        false => Vec::new(),
    };
    let mut digest = None;
    if all_instructions && chosen.len() < candidates.len() {
        let kept = memory.digest(profile).await?;
        if let Some(d) = kept.filter(|d| !d.text.trim().is_empty()) {
            let with = Parts {
                instructions: &shown,
                summary: Some(d.text.as_str()),
            };
            if fits(&with.render(&[], &[])) {
                chosen = with.choose(&candidates, &fits);
                digest = Some(d);
            }
        }
    }
    parts.summary = digest.as_ref().map(|d| d.text.as_str());
    for &i in &chosen {
        candidates[i].chosen = true;
    }
    let (facts, tasks) = split(&candidates, &chosen);
    let text = parts.render(&facts, &tasks);
    let instructions: Vec<MemoryRecord> = shown.iter().map(|m| (*m).clone()).collect();
    Ok(BlockChoice {
        text: (!text.is_empty()).then_some(text),
        at: now,
        instructions,
        digest,
        candidates,
    })
}

/// The chosen candidates as facts and tasks, in choice (best-first) order.
fn split<'a>(
    candidates: &'a [BlockCandidate],
    chosen: &[usize],
) -> (Vec<&'a MemoryRecord>, Vec<&'a MemoryRecord>) {
    let mut facts = Vec::new();
    let mut tasks = Vec::new();
    for &i in chosen {
        let m = &candidates[i].memory;
        match m.kind {
            MemoryKind::Task => tasks.push(m),
            _ => facts.push(m),
        }
    }
    (facts, tasks)
}

/// The profile's block text (see [`choose_profile_block`]); `None` when the profile does
/// not exist or holds none of what the block shows.
pub async fn render_profile(
    memory: &MemoryService,
    profile: &str,
    max_tokens: Option<usize>,
    counter: &dyn TokenCounter,
) -> Result<Option<String>> {
    if !memory.profiles().exists(profile).await? {
        return Ok(None);
    }
    Ok(choose_profile_block(memory, profile, max_tokens, counter)
        .await?
        .text)
}
