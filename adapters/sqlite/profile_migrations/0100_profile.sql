-- A long-term memory profile's database (`SqliteProfiles`, one file each): only the tables a
-- profile uses, in their shape after migrations 0001 to 0012 of the full schema. Profile
-- files made before this schema existed carry the full schema and stay on it (the adapter
-- migrates those with ./migrations); for them every statement here is a no-op.

CREATE TABLE IF NOT EXISTS raw_messages (
    doc        INTEGER PRIMARY KEY,
    id         TEXT    NOT NULL UNIQUE,
    session_id TEXT    NOT NULL,
    role       TEXT    NOT NULL,
    content    TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    metadata   TEXT
        CHECK (metadata IS NULL OR (json_valid(metadata) AND json_type(metadata) = 'object'))
);
CREATE INDEX IF NOT EXISTS raw_messages_session_doc ON raw_messages(session_id, doc);
CREATE VIRTUAL TABLE IF NOT EXISTS raw_fts USING fts5(
    content,
    content = 'raw_messages',
    content_rowid = 'doc',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS raw_fts_insert AFTER INSERT ON raw_messages BEGIN
    INSERT INTO raw_fts(rowid, content) VALUES (new.doc, new.content);
END;
CREATE TRIGGER IF NOT EXISTS raw_fts_delete AFTER DELETE ON raw_messages BEGIN
    INSERT INTO raw_fts(raw_fts, rowid, content) VALUES ('delete', old.doc, old.content);
END;

CREATE TABLE IF NOT EXISTS memories (
    pos                INTEGER PRIMARY KEY AUTOINCREMENT,
    id                 TEXT    NOT NULL UNIQUE,
    kind               TEXT    NOT NULL,
    content            TEXT    NOT NULL,
    key                TEXT,
    questions          TEXT    NOT NULL,
    session_id         TEXT,
    source_message_ids TEXT    NOT NULL,
    recorded_at        INTEGER NOT NULL,
    valid_at           INTEGER,
    superseded_by      TEXT,
    forgotten_reason   TEXT,
    forgotten_at       INTEGER,
    search_text        TEXT    NOT NULL,
    source_lines       TEXT,
    metadata           TEXT
        CHECK (metadata IS NULL OR (json_valid(metadata) AND json_type(metadata) = 'object')),
    expires_at         INTEGER
);
CREATE INDEX IF NOT EXISTS memories_kind_key ON memories(kind, key, pos);
CREATE INDEX IF NOT EXISTS memories_expiry ON memories (expires_at)
    WHERE expires_at IS NOT NULL AND forgotten_reason IS NULL;
CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(
    search_text,
    content = 'memories',
    content_rowid = 'pos',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts(rowid, search_text) VALUES (new.pos, new.search_text);
END;
CREATE TRIGGER IF NOT EXISTS memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, search_text) VALUES ('delete', old.pos, old.search_text);
END;

CREATE TABLE IF NOT EXISTS vector_namespaces (
    namespace TEXT    PRIMARY KEY,
    model     TEXT    NOT NULL,
    dims      INTEGER NOT NULL,
    version   INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS vectors (
    namespace TEXT NOT NULL REFERENCES vector_namespaces(namespace) ON DELETE CASCADE,
    id        TEXT NOT NULL,
    vector    BLOB NOT NULL,
    session   TEXT,
    kind      TEXT,
    time      INTEGER,
    PRIMARY KEY (namespace, id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS vector_epoch (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    epoch INTEGER NOT NULL
);
INSERT OR IGNORE INTO vector_epoch (id, epoch) VALUES (1, 0);
