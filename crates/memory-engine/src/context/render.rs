//! Rendering blocks into the system prompt, byte for byte the reference format.

use memory_core::{BlockKind, ContextBlock};

/// The separator line: `═` (U+2550) 46 times.
pub const SEPARATOR: &str = "══════════════════════════════════════════════";

/// The header line of a block: upper-case label, ` (description)`, the budget
/// ` [pct% — tokens/max tokens]`, and one kind tag.
///
/// ```
/// use memory_core::{BlockKind, BlockScope, ContextBlock};
/// use memory_engine::context::header;
/// let block = ContextBlock {
///     label: "memory".into(), description: Some("Learned facts".into()), content: String::new(),
///     tokens: 495, max_tokens: Some(1100), kind: BlockKind::Writable, scope: BlockScope::Session,
/// };
/// assert_eq!(header(&block), "MEMORY (Learned facts) [45% — 495/1100 tokens] [writable]");
/// ```
pub fn header(block: &ContextBlock) -> String {
    let mut out = block.label.to_uppercase();
    if let Some(description) = block.description.as_deref().filter(|d| !d.is_empty()) {
        out.push_str(" (");
        out.push_str(description);
        out.push(')');
    }
    if let Some(max) = block.max_tokens.filter(|m| *m > 0) {
        let pct = js_round(block.tokens as f64 / max as f64 * 100.0);
        out.push_str(&format!(" [{pct}% — {}/{max} tokens]", block.tokens));
    }
    out.push(' ');
    out.push_str(block.kind.tag());
    out
}

/// JavaScript's `Math.round`: halves round up (towards +∞).
fn js_round(x: f64) -> i64 {
    (x + 0.5).floor() as i64
}

/// Renders blocks in declaration order, joined by a blank line. An empty read-only block is
/// skipped; empty writable, searchable and skill blocks still render so the model knows it
/// can address them.
pub fn render_prompt(blocks: &[ContextBlock]) -> String {
    let mut out = String::new();
    for block in blocks {
        if block.content.is_empty() && block.kind == BlockKind::ReadOnly {
            continue;
        }
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(SEPARATOR);
        out.push('\n');
        out.push_str(&header(block));
        out.push('\n');
        out.push_str(SEPARATOR);
        out.push('\n');
        out.push_str(&block.content);
    }
    out
}
