-- Extends $1's claim to $3 ms from now while it holds token $2 (no other copy took it
-- over). One row affected when extended.
UPDATE {table} SET expires_at = clock_timestamp() + $3::float8 * interval '1 millisecond'
WHERE id = $1 AND token = $2
