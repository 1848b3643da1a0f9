-- Claims $1 with token $2 for $3 ms: inserts the row, or takes it over only when it has
-- expired. Answers one row: claimed (this call took it), done (the row is a done mark) and
-- ms_left (of the row that holds it). The row read is the CTE's when it inserted or took
-- over, otherwise the existing one (NULL only while a concurrent insert is not yet
-- visible: busy, briefly).
WITH taken AS (
  INSERT INTO {table} AS t (id, token, expires_at)
  VALUES ($1, $2, clock_timestamp() + $3::float8 * interval '1 millisecond')
  ON CONFLICT (id) DO UPDATE SET token = EXCLUDED.token, expires_at = EXCLUDED.expires_at
    WHERE t.expires_at <= clock_timestamp()
  RETURNING 1
)
SELECT EXISTS (SELECT 1 FROM taken) AS claimed,
  (SELECT token IS NULL FROM {table} WHERE id = $1) AS done,
  (SELECT ceil(extract(epoch FROM expires_at - clock_timestamp()) * 1000)::bigint
     FROM {table} WHERE id = $1) AS ms_left
