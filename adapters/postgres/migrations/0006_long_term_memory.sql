-- Long-term memory profiles. Every row of a profile carries the profile's key and every
-- statement names one key, so no query can reach another profile's rows; deleting a profile
-- deletes its row, which cascades to everything it owns.
CREATE TABLE profiles (
    key  BIGSERIAL PRIMARY KEY,
    name TEXT COLLATE "C" NOT NULL UNIQUE
);

CREATE TABLE raw_messages (
    profile_key BIGINT    NOT NULL REFERENCES profiles(key) ON DELETE CASCADE,
    doc         BIGSERIAL NOT NULL,
    id          TEXT      NOT NULL,
    session_id  TEXT      NOT NULL,
    role        TEXT      NOT NULL,
    content     TEXT      NOT NULL,
    created_at  BIGINT    NOT NULL,
    PRIMARY KEY (profile_key, doc),
    UNIQUE (profile_key, id)
);
-- The conversational neighbours of a raw message (recall's context expansion).
CREATE INDEX raw_messages_session ON raw_messages (profile_key, session_id, doc);

CREATE TABLE memories (
    profile_key        BIGINT    NOT NULL REFERENCES profiles(key) ON DELETE CASCADE,
    pos                BIGSERIAL NOT NULL,
    id                 TEXT      NOT NULL,
    kind               TEXT      NOT NULL,
    content            TEXT      NOT NULL,
    key                TEXT,
    questions          TEXT      NOT NULL,
    session_id         TEXT,
    source_message_ids TEXT      NOT NULL,
    source_lines       TEXT,
    recorded_at        BIGINT    NOT NULL,
    valid_at           BIGINT,
    superseded_by      TEXT,
    forgotten_reason   TEXT,
    forgotten_at       BIGINT,
    PRIMARY KEY (profile_key, pos),
    UNIQUE (profile_key, id)
);
CREATE INDEX memories_kind_key ON memories (profile_key, kind, key, pos);
CREATE INDEX memories_superseded_by ON memories (profile_key, superseded_by);

-- Vectors (pgvector). Each (scope, namespace) records its embedding model and dimensions;
-- an upsert reads that row FOR SHARE in its own transaction, so two models never mix. Each
-- namespace gets a partial HNSW index (cosine) over its rows, named by its key.
CREATE TABLE vector_namespaces (
    key       BIGSERIAL PRIMARY KEY,
    scope     TEXT    NOT NULL,
    namespace TEXT    NOT NULL,
    model     TEXT    NOT NULL,
    dims      INTEGER NOT NULL,
    UNIQUE (scope, namespace)
);
CREATE TABLE vectors (
    namespace_key BIGINT NOT NULL REFERENCES vector_namespaces(key) ON DELETE CASCADE,
    id            TEXT   NOT NULL,
    embedding     vector NOT NULL,
    PRIMARY KEY (namespace_key, id)
);
