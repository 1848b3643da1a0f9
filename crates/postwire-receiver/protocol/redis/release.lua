-- Deletes the key only while it holds the caller's claim (ARGV[1], "c:<token>").
-- 1 when deleted, 0 otherwise.
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
