-- The state of a key that SET NX found taken, and its time left in ms:
-- {1, ms} a claim ("c:<token>"), {2, ms} a done mark ("d"), {0, 0} gone meanwhile.
local v = redis.call('GET', KEYS[1])
if not v then return {0, 0} end
local ms = redis.call('PTTL', KEYS[1])
if v == 'd' then return {2, ms} end
return {1, ms}
