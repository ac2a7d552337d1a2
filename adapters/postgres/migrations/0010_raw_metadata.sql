-- The builder's metadata of a raw message, given when it was ingested: a flat JSON object
-- (NULL: none).
ALTER TABLE raw_messages ADD COLUMN metadata JSONB
    CHECK (metadata IS NULL OR jsonb_typeof(metadata) = 'object');
