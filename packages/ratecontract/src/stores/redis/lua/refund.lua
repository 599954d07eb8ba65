--[[
refund.lua: gives back what ops consumed, the twin of runRefund in
src/core/chain.ts (compensation when another store or slot group rejected
the request). An op whose key is gone (expired) has nothing to give back.
A refund never lengthens a state's life, so the key keeps its TTL when that
is shorter than the recomputed one.

KEYS[i]  state key of op i (i = 1..n); on a Cluster all in one hash slot
ARGV[1]  TTL grace in ms (0 in server-time mode)
ARGV[2]  n, the number of ops
ARGV[3 + 8*(i-1) .. 10 + 8*(i-1)], for op i:
         algorithm, limit, windowMs, burst, queue ('1'/'0'), cost,
         now (the `now` the op was decided at, or '' for the server clock),
         leaseId ('' if none)

Reply: the number of keys changed (an integer).
]]
-- @include common
-- @include fixed-window
-- @include sliding-window
-- @include sliding-log
-- @include token-bucket
-- @include leaky-bucket
-- @include gcra
-- @include concurrency

local grace = tonumber(ARGV[1])
local n = tonumber(ARGV[2])
if #KEYS ~= n then
  return redis.error_reply('ratecontract: refund got ' .. #KEYS .. ' keys for ' .. tostring(n) .. ' ops')
end
local changed = 0
for i = 1, n do
  local b = 2 + 8 * (i - 1)
  local a = algo(ARGV[b + 1])
  local p = params(ARGV[b + 2], ARGV[b + 3], ARGV[b + 4], ARGV[b + 5])
  local cost = tonumber(ARGV[b + 6])
  local now = clock(ARGV[b + 7])
  local lease = ARGV[b + 8]
  local state = load(KEYS[i], a)
  if state ~= nil then
    local cap = redis.call('PTTL', KEYS[i])
    save(KEYS[i], a, p, a.refund(state, now, cost, p, lease), now, grace, cap)
    changed = changed + 1
  end
end
return changed
