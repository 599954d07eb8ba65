--[[
peek.lua: what chain.lua would answer for one chain's ops, changing nothing:
no state is written, no TTL is touched, no lease is taken. The chain rule
(an op that admits is reported with the unconsumed figures when the chain
as a whole rejects) is applied by the caller, which may have peeked other
slot groups of the same chain on a Cluster.

KEYS[i]  state key of op i (i = 1..n); on a Cluster all in one hash slot
ARGV[1]  '' : decide at the server clock (TIME); else the client `now` in ms
ARGV[2]  n, the number of ops
ARGV[3 + 7*(i-1) .. 9 + 7*(i-1)], for op i:
         algorithm, limit, windowMs, burst, queue ('1'/'0'), cost, leaseId

Reply: the `now` decided at, then per op 7 integers: outcome (0 = rejected,
       1 = admitted at cost 0, 2 = admitted and would consume), remaining,
       resetMs, retryAfterMs (0 when admitted; -1 = never), delayMs, and the
       remaining and resetMs of a cost-0 decision on the same state.
]]
-- @include common
-- @include fixed-window
-- @include sliding-window
-- @include sliding-log
-- @include token-bucket
-- @include leaky-bucket
-- @include gcra
-- @include concurrency

local n = tonumber(ARGV[2])
if n == nil or #KEYS ~= n or #ARGV ~= 2 + 7 * n then
  return redis.error_reply('ratecontract: peek got ' .. #KEYS .. ' keys and ' .. #ARGV .. ' args')
end
local now = clock(ARGV[1])
local out = { now }
for i = 1, n do
  local b = 2 + 7 * (i - 1)
  local a = algo(ARGV[b + 1])
  local p = params(ARGV[b + 2], ARGV[b + 3], ARGV[b + 4], ARGV[b + 5])
  local cost = tonumber(ARGV[b + 6])
  local lease = ARGV[b + 7]
  local state = load(KEYS[i], a)
  local ok, _, rem, reset, retry, delay = a.decide(state, now, cost, p, lease)
  local _, _, peek_rem, peek_reset = a.decide(state, now, 0, p, lease)
  local at = #out
  if ok then
    out[at + 1], out[at + 4], out[at + 5] = (cost > 0) and 2 or 1, 0, delay
  else
    out[at + 1], out[at + 4], out[at + 5] = 0, wire_retry(retry), 0
  end
  out[at + 2], out[at + 3], out[at + 6], out[at + 7] = rem, reset, peek_rem, peek_reset
end
return out
