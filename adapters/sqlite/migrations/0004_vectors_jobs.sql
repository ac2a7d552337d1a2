-- Vectors beside the data they index, raw-message neighbourhoods, and durable jobs.

CREATE TABLE vector_namespaces (
    namespace TEXT    PRIMARY KEY,
    model     TEXT    NOT NULL,
    dims      INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE vectors (
    namespace TEXT NOT NULL REFERENCES vector_namespaces(namespace) ON DELETE CASCADE,
    id        TEXT NOT NULL,
    vector    BLOB NOT NULL,
    PRIMARY KEY (namespace, id)
) WITHOUT ROWID;

-- The conversational neighbours of a raw message (recall's context expansion).
CREATE INDEX raw_messages_session_doc ON raw_messages(session_id, doc);

-- Durable background jobs (ingest with extraction), checkpointed after every stage.
CREATE TABLE jobs (
    id         TEXT    PRIMARY KEY,
    status     TEXT    NOT NULL,
    body       TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);

-- Provenance: the transcript line range a memory was extracted from (JSON [first, last]).
ALTER TABLE memories ADD COLUMN source_lines TEXT;
