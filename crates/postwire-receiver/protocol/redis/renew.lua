-- Extends the caller's claim (ARGV[1], "c:<token>") to ARGV[2] ms from now, only while
-- the key holds it. 1 when extended, 0 when the claim is gone or another copy's.
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
