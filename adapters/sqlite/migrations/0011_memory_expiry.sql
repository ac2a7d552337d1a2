-- When a memory stops being current (milliseconds since the epoch; NULL: never), and the
-- expiry sweep's work list: memories with an expiry that are not forgotten yet.
ALTER TABLE memories ADD COLUMN expires_at INTEGER;
CREATE INDEX memories_expiry ON memories (expires_at)
    WHERE expires_at IS NOT NULL AND forgotten_reason IS NULL;
