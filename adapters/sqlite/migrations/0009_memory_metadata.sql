-- The builder's metadata of a memory: a flat JSON object (NULL: none).
ALTER TABLE memories ADD COLUMN metadata TEXT
    CHECK (metadata IS NULL OR (json_valid(metadata) AND json_type(metadata) = 'object'));
