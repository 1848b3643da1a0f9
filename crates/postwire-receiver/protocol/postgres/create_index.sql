-- The sweep finds expired rows by this index.
CREATE INDEX IF NOT EXISTS {table}_expires_at ON {table} (expires_at)
