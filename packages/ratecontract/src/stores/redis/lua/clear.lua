--[[
clear.lua: forgets the state of keys (limiter.reset): deletes each key.

KEYS[i]  the state keys to delete; on a Cluster all in one hash slot
ARGV     none

Reply: the number of keys that existed (an integer).
]]
local removed = 0
for i = 1, #KEYS do
  removed = removed + redis.call('DEL', KEYS[i])
end
return removed
