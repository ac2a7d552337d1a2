//! Where a compaction may cut. A tool call and its result must stay on the same side, and an
//! incomplete tool call (one still waiting for its output) is never summarized away.

use std::collections::HashSet;

use memory_core::UiMessage;

fn call_ids(message: &UiMessage) -> impl Iterator<Item = &str> {
    message.tool_parts().map(|t| t.tool_call_id.as_str())
}

/// Call ids whose output (or error or denial) is recorded somewhere in `messages`.
fn completed_ids(messages: &[UiMessage]) -> HashSet<&str> {
    messages
        .iter()
        .flat_map(|m| m.tool_parts())
        .filter(|t| t.is_complete())
        .map(|t| t.tool_call_id.as_str())
        .collect()
}

/// Moves the head boundary forward while a call id of the head continues after it (the
/// model-message layout, where call and result are separate messages).
pub fn align_start(messages: &[UiMessage], start: usize) -> usize {
    let mut start = start.min(messages.len());
    loop {
        let head: HashSet<&str> = messages[..start].iter().flat_map(call_ids).collect();
        match messages[start..]
            .iter()
            .position(|m| call_ids(m).any(|id| head.contains(id)))
        {
            Some(0) => start += 1,
            _ => return start,
        }
    }
}

/// Moves the end of the compressed range backward until no message in `start..end` has an
/// incomplete tool call and no call id in it continues at or after `end`.
pub fn align_end(messages: &[UiMessage], start: usize, end: usize) -> usize {
    let mut end = end.min(messages.len());
    let completed = completed_ids(messages);
    while end > start {
        let incomplete = messages[start..end]
            .iter()
            .position(|m| {
                m.tool_parts()
                    .any(|t| !t.is_complete() && !completed.contains(t.tool_call_id.as_str()))
            })
            .map(|i| start + i);
        let tail: HashSet<&str> = messages[end..].iter().flat_map(call_ids).collect();
        let split = messages[start..end]
            .iter()
            .position(|m| call_ids(m).any(|id| tail.contains(id)))
            .map(|i| start + i);
        match incomplete.into_iter().chain(split).min() {
            Some(cut) => end = cut,
            None => return end,
        }
    }
    start
}

/// The tail cut over `n` messages: walking back from the newest, keep messages while they
/// fit `budget` tokens (the newest is always kept), and at least `min_tail` messages.
/// `tokens(i)` is asked only for the messages the walk reaches, so planning a compaction of
/// a long history costs the tail, not the whole history.
pub fn tail_cut(
    n: usize,
    head_end: usize,
    budget: usize,
    min_tail: usize,
    mut tokens: impl FnMut(usize) -> usize,
) -> usize {
    let mut accumulated = 0;
    let mut cut = n;
    for i in (head_end..n).rev() {
        let t = tokens(i);
        if accumulated + t > budget && cut < n {
            break;
        }
        accumulated += t;
        cut = i;
    }
    let min_cut = n.saturating_sub(min_tail);
    if min_cut >= head_end {
        cut.min(min_cut)
    } else {
        cut
    }
}
