-- Marks $1 done for $3 ms, if it still holds token $2's claim or no live claim at all.
-- One row affected when marked.
INSERT INTO {table} AS t (id, token, expires_at)
VALUES ($1, NULL, clock_timestamp() + $3::float8 * interval '1 millisecond')
ON CONFLICT (id) DO UPDATE SET token = NULL, expires_at = EXCLUDED.expires_at
  WHERE t.token = $2 OR t.expires_at <= clock_timestamp()
