--[[
chain.lua: decides a whole chain of ops (any mix of algorithms) atomically,
the twin of runChain in src/core/chain.ts:
  1. every op is decided against the same `now`;
  2. the chain admits iff every enforcing (non-shadow) op admits;
  3. an op consumes iff it admits, has cost, and either the chain admits or
     its limit counts rejected attempts;
  4. an op that admits but does not consume reports the unconsumed figures
     (a cost-0 peek).
Every state is read before any is written, as runChain does.

KEYS[i]  state key of op i (i = 1..n); on a Cluster all in one hash slot
ARGV[1]  now in ms (client-time mode), or '' for the server clock (TIME)
ARGV[2]  TTL grace in ms added to every written key (0 in server-time mode)
ARGV[3]  '1': also report the peek figures of consumed ops (a Cluster caller
         needs them if another slot group rejects the chain), else '0'
ARGV[4]  n, the number of ops
ARGV[5 + 8*(i-1) .. 12 + 8*(i-1)], for op i:
         algorithm, limit, windowMs, burst, queue ('1'/'0'), cost,
         flags (1 = shadow, 2 = countRejected, summed), leaseId ('' if none)

Reply: { now, then 8 integers per op: allowed (0/1), consumed (0/1),
         remaining, resetMs, retryAfterMs (-1 = never: the cost can never
         fit), delayMs, peekRemaining, peekResetMs }
         (peek figures are 0 unless requested and the op consumed)
]]
-- @include common
-- @include fixed-window
-- @include sliding-window
-- @include sliding-log
-- @include token-bucket
-- @include leaky-bucket
-- @include gcra
-- @include concurrency

local now = clock(ARGV[1])
local grace = tonumber(ARGV[2])
local want_peek = ARGV[3] == '1'
local n = tonumber(ARGV[4])
if #KEYS ~= n then
  return redis.error_reply('ratecontract: chain got ' .. #KEYS .. ' keys for ' .. tostring(n) .. ' ops')
end

local ops = {}
local chain_allowed = true
for i = 1, n do
  local b = 4 + 8 * (i - 1)
  local a = algo(ARGV[b + 1])
  local p = params(ARGV[b + 2], ARGV[b + 3], ARGV[b + 4], ARGV[b + 5])
  local flags = tonumber(ARGV[b + 7])
  local op = {
    a = a,
    p = p,
    cost = tonumber(ARGV[b + 6]),
    shadow = flags % 2 == 1,
    count_rejected = flags >= 2,
    lease = ARGV[b + 8],
  }
  op.pre = load(KEYS[i], a)
  op.r = a.decide(op.pre, now, op.cost, p, op.lease)
  if not op.r.allowed and not op.shadow then
    chain_allowed = false
  end
  ops[i] = op
end

local out = { now }
for i = 1, n do
  local op = ops[i]
  local r = op.r
  if r.allowed and op.cost > 0 and (chain_allowed or op.count_rejected) then
    save(KEYS[i], op.a, op.p, r.state, now, grace, nil)
    local peek_remaining, peek_reset = 0, 0
    if want_peek then
      local peek = op.a.decide(op.pre, now, 0, op.p, op.lease)
      peek_remaining, peek_reset = peek.remaining, peek.reset
    end
    out[#out + 1] = 1
    out[#out + 1] = 1
    out[#out + 1] = r.remaining
    out[#out + 1] = r.reset
    out[#out + 1] = 0
    out[#out + 1] = r.delay
    out[#out + 1] = peek_remaining
    out[#out + 1] = peek_reset
  elseif r.allowed then
    local peek = r
    if op.cost > 0 then
      peek = op.a.decide(op.pre, now, 0, op.p, op.lease)
    end
    out[#out + 1] = 1
    out[#out + 1] = 0
    out[#out + 1] = peek.remaining
    out[#out + 1] = peek.reset
    out[#out + 1] = 0
    out[#out + 1] = 0
    out[#out + 1] = 0
    out[#out + 1] = 0
  else
    out[#out + 1] = 0
    out[#out + 1] = 0
    out[#out + 1] = r.remaining
    out[#out + 1] = r.reset
    out[#out + 1] = wire_retry(r.retry)
    out[#out + 1] = 0
    out[#out + 1] = 0
    out[#out + 1] = 0
  end
end
return out
