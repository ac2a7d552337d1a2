-- The fields a vector search can filter on (the port's VectorFields); vectors written
-- before they existed have none, and match no filter on them.
ALTER TABLE vectors ADD COLUMN session TEXT;
ALTER TABLE vectors ADD COLUMN kind TEXT;
ALTER TABLE vectors ADD COLUMN time BIGINT;
CREATE INDEX vectors_session ON vectors (namespace_key, session);
CREATE INDEX vectors_kind_time ON vectors (namespace_key, kind, time);
