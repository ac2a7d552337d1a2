-- The builder's metadata of a memory: a flat JSON object (NULL: none).
ALTER TABLE memories ADD COLUMN metadata JSONB
    CHECK (metadata IS NULL OR jsonb_typeof(metadata) = 'object');
