-- Forgets $1's claim while it holds token $2. One row affected when forgotten.
DELETE FROM {table} WHERE id = $1 AND token = $2
