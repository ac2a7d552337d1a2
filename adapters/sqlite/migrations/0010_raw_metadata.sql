-- The builder's metadata of a raw message, given when it was ingested: a flat JSON object
-- (NULL: none).
ALTER TABLE raw_messages ADD COLUMN metadata TEXT
    CHECK (metadata IS NULL OR (json_valid(metadata) AND json_type(metadata) = 'object'));
