-- Deletes up to $1 expired rows. The outer condition checks expiry again on the row it
-- deletes: a claim that took an expired row over after the sub-select read it (and
-- before this delete locked it) is a live claim then, and is kept.
DELETE FROM {table}
WHERE id IN (SELECT id FROM {table} WHERE expires_at < clock_timestamp() LIMIT $1)
  AND expires_at < clock_timestamp()
