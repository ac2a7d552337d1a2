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

/// Applies overlays to a root-to-leaf path.
///
/// An overlay applies only where its whole range lies on this path (`from` before or at
/// `to`), so sibling branches never see each other's overlays. Among overlays starting at the
/// same message, the newest (highest `seq`, so deterministic even on equal timestamps) wins.
pub fn apply_overlays(path: Vec<UiMessage>, compactions: &[CompactionRecord]) -> Vec<UiMessage> {
    if compactions.is_empty() {
        return path;
    }
    let position: HashMap<&str, usize> = path
        .iter()
        .enumerate()
        .map(|(i, m)| (m.id.as_str(), i))
        .collect();
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
    if best.is_empty() {
        return path;
    }
    let mut out = Vec::with_capacity(path.len());
    let mut skip_until: Option<usize> = None;
    for (i, message) in path.into_iter().enumerate() {
        if let Some(end) = skip_until {
            if i <= end {
                continue;
            }
            skip_until = None;
        }
        match best.get(&i) {
            Some((record, to)) => {
                out.push(overlay_message(record));
                skip_until = Some(*to);
            }
            None => out.push(message),
        }
    }
    out
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
