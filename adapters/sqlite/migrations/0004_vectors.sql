-- Embeddings beside the data they index (exact search; the matrix is cached in memory).

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
