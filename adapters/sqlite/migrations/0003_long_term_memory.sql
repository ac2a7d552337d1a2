-- Long-term memory of one profile (each profile has its own database file).

CREATE TABLE raw_messages (
    doc        INTEGER PRIMARY KEY,
    id         TEXT    NOT NULL UNIQUE,
    session_id TEXT    NOT NULL,
    role       TEXT    NOT NULL,
    content    TEXT    NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE VIRTUAL TABLE raw_fts USING fts5(
    content,
    content = 'raw_messages',
    content_rowid = 'doc',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER raw_fts_insert AFTER INSERT ON raw_messages BEGIN
    INSERT INTO raw_fts(rowid, content) VALUES (new.doc, new.content);
END;
CREATE TRIGGER raw_fts_delete AFTER DELETE ON raw_messages BEGIN
    INSERT INTO raw_fts(raw_fts, rowid, content) VALUES ('delete', old.doc, old.content);
END;

CREATE TABLE memories (
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
    search_text        TEXT    NOT NULL
);
CREATE INDEX memories_kind_key ON memories(kind, key, pos);
CREATE VIRTUAL TABLE memories_fts USING fts5(
    search_text,
    content = 'memories',
    content_rowid = 'pos',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts(rowid, search_text) VALUES (new.pos, new.search_text);
END;
CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, search_text) VALUES ('delete', old.pos, old.search_text);
END;
