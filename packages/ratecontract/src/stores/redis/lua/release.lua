--[[
release.lua: frees one concurrency lease (every lease with that id), the
twin of releaseLease in src/algorithms/concurrency.ts. Releasing never
lengthens the state's life: the key keeps its TTL when that is shorter.

KEYS[1]  state key of the concurrency limit
ARGV[1]  now in ms (client-time mode), or '' for the server clock (TIME)
ARGV[2]  TTL grace in ms (0 in server-time mode)
ARGV[3]  windowMs of the limit (the lease lifetime)
ARGV[4]  leaseId

Reply: 1 if the key existed, else 0.
]]
-- @include common
-- @include concurrency

local now = clock(ARGV[1])
local grace = tonumber(ARGV[2])
local a = algo('concurrency')
local p = params(1, ARGV[3], 1, '0')
local state = load(KEYS[1], a)
if state == nil then
  return 0
end
local cap = redis.call('PTTL', KEYS[1])
save(KEYS[1], a, p, a.refund(state, now, 0, p, ARGV[4]), now, grace, cap)
return 1
