-- Marks the key done ("d") for ARGV[2] ms, unless another copy's claim or a done mark
-- holds it. ARGV[1] is the caller's "c:<token>". 1 when marked, 0 otherwise.
local v = redis.call('GET', KEYS[1])
if v and v ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], 'd', 'PX', ARGV[2])
return 1
