-- Consolidation and the profile block's score: why a memory was merged into the one
-- `superseded_by` names (NULL: not merged), the latest time the same thing was said again,
-- and the latest time recall returned it (milliseconds since the epoch).
ALTER TABLE memories ADD COLUMN merged_reason TEXT;
ALTER TABLE memories ADD COLUMN merged_at INTEGER;
ALTER TABLE memories ADD COLUMN confirmed_at INTEGER;
ALTER TABLE memories ADD COLUMN recalled_at INTEGER;
-- What was merged into a memory (and a purge's relink) is found by the pointer.
CREATE INDEX IF NOT EXISTS memories_superseded_by ON memories (superseded_by)
    WHERE superseded_by IS NOT NULL;
