//! Compaction that never loses data: overlays applied at read time, a summarizing compactor
//! whose cuts never split tool calls, token estimates with calibration, and read-time or
//! write-time micro-compaction.

mod boundaries;
mod calibrate;
mod compactor;
mod overlay;
mod prompt;
mod truncate;

pub use boundaries::{align_end, align_start, tail_cut};
pub use calibrate::CalibratingTokenCounter;
pub use compactor::{
    CompactResult, Compactor, CompactorOptions, NoCompaction, SummarizingCompactor,
};
pub use overlay::{
    Shown, apply_overlays, overlay_message, overlay_message_id, overlay_plan, superseded_by,
    visible_overlays,
};
pub use prompt::{summary_prompt, transcript_entry};
pub use truncate::{
    TruncateOptions, enforce_row_size, truncate_older_messages, truncate_tool_output,
};

#[cfg(test)]
mod tests;
