//! Compaction overlays applied at read time. Originals are never deleted: an overlay record
//! `from..=to` replaces that range of a path with one synthetic assistant message.

use std::collections::HashMap;

use memory_core::{COMPACTION_PREFIX, CompactionRecord, Part, Role, UiMessage};
use serde_json::json;

/// The synthetic message id of an overlay.
pub fn overlay_message_id(record: &CompactionRecord) -> String {
    format!("{COMPACTION_PREFIX}{}", record.id)
}

/// The synthetic message an overlay shows: role assistant, the summary as its only text
/// part, and the overlay's range and time in `metadata.compaction`.
pub fn overlay_message(record: &CompactionRecord) -> UiMessage {
    let mut message = UiMessage::new(
        overlay_message_id(record),
        Role::Assistant,
        vec![Part::text(&record.summary)],
    );
    message.metadata = Some(json!({
        "compaction": {
            "id": record.id,
            "from": record.from_message_id,
            "to": record.to_message_id,
            "createdAt": record.created_at.millis(),
        }
    }));
    message
}

/// One entry of a path as overlays show it: a stored message (its index in the path) or
/// an overlay's summary standing in for a range.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shown<'a> {
    /// The path's message at this index.
    Message(usize),
    /// The overlay that replaces a range.
    Overlay(&'a CompactionRecord),
}

/// What a root-to-leaf path shows once overlays apply, from its ids alone.
///
/// An overlay applies only where its whole range lies on this path (`from` before or at
/// `to`), so sibling branches never see each other's overlays. Among overlays starting at the
/// same message, the newest (highest `seq`, so deterministic even on equal timestamps) wins.
pub fn overlay_plan<'a>(ids: &[&str], compactions: &'a [CompactionRecord]) -> Vec<Shown<'a>> {
    let position: HashMap<&str, usize> = ids.iter().enumerate().map(|(i, id)| (*id, i)).collect();
    // For each start position: the newest overlay whose end lies at or after it on this path.
    let mut best: HashMap<usize, (&CompactionRecord, usize)> = HashMap::new();
    for record in compactions {
        let (Some(&from), Some(&to)) = (
            position.get(record.from_message_id.as_str()),
            position.get(record.to_message_id.as_str()),
        ) else {
            continue;
        };
        if to < from {
            continue;
        }
        match best.get(&from) {
            Some((current, _)) if current.seq > record.seq => {}
            _ => {
                best.insert(from, (record, to));
            }
        }
    }
    let mut out = Vec::with_capacity(ids.len());
    let mut skip_until: Option<usize> = None;
    for i in 0..ids.len() {
        if let Some(end) = skip_until {
            if i <= end {
                continue;
            }
            skip_until = None;
        }
        match best.get(&i) {
            Some((record, to)) => {
                out.push(Shown::Overlay(record));
                skip_until = Some(*to);
            }
            None => out.push(Shown::Message(i)),
        }
    }
    out
}

/// Applies overlays to a root-to-leaf path (see [`overlay_plan`]).
pub fn apply_overlays(path: Vec<UiMessage>, compactions: &[CompactionRecord]) -> Vec<UiMessage> {
    if compactions.is_empty() {
        return path;
    }
    let ids: Vec<String> = path.iter().map(|m| m.id.clone()).collect();
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    let plan = overlay_plan(&refs, compactions);
    let mut slots: Vec<Option<UiMessage>> = path.into_iter().map(Some).collect();
    plan.into_iter()
        .filter_map(|shown| match shown {
            Shown::Message(i) => slots.get_mut(i).and_then(Option::take),
            Shown::Overlay(record) => Some(overlay_message(record)),
        })
        .collect()
}

/// The overlay records visible in an overlay-applied history (by synthetic id).
pub fn visible_overlays<'a>(
    history: &[UiMessage],
    compactions: &'a [CompactionRecord],
) -> Vec<&'a CompactionRecord> {
    history
        .iter()
        .filter_map(|m| m.id.strip_prefix(COMPACTION_PREFIX))
        .filter_map(|id| compactions.iter().find(|c| c.id == id))
        .collect()
}

/// For each record, the id of a newer record that starts at the same message (and so
/// replaces it wherever both apply), if any.
pub fn superseded_by(compactions: &[CompactionRecord]) -> Vec<Option<String>> {
    compactions
        .iter()
        .map(|c| {
            compactions
                .iter()
                .filter(|n| n.seq > c.seq && n.from_message_id == c.from_message_id)
                .max_by_key(|n| n.seq)
                .map(|n| n.id.clone())
        })
        .collect()
}
