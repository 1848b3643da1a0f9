-- The store's table, created on first use (or by your migrations). token: the claim's,
-- NULL once done; expires_at: the lease's end while claimed, when the id is forgotten once done.
CREATE TABLE IF NOT EXISTS {table} (id text PRIMARY KEY, token text, expires_at timestamptz NOT NULL)
