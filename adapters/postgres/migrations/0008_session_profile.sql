-- The long-term profile a session is bound to (NULL: unbound).
ALTER TABLE sessions ADD COLUMN profile TEXT;
