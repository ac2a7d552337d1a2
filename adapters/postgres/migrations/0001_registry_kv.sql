-- The session registry and the key-value store. Every table lives in the adapter's own
-- schema (the connection's search_path), so a deployment's data never mixes with others'.
CREATE TABLE sessions (
    id                TEXT PRIMARY KEY,
    ord               BIGSERIAL NOT NULL,
    name              TEXT,
    parent_session_id TEXT,
    model             TEXT,
    source            TEXT,
    input_tokens      BIGINT NOT NULL DEFAULT 0,
    output_tokens     BIGINT NOT NULL DEFAULT 0,
    cost              DOUBLE PRECISION NOT NULL DEFAULT 0,
    end_reason        TEXT,
    created_at        BIGINT NOT NULL,
    updated_at        BIGINT NOT NULL
);
CREATE INDEX sessions_by_update ON sessions (updated_at DESC, ord DESC);

-- Keys compare bytewise (COLLATE "C"), as the port's ordering contract asks.
CREATE TABLE kv (
    key   TEXT COLLATE "C" PRIMARY KEY,
    value TEXT NOT NULL
);
