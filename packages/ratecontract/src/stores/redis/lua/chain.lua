--[[
chain.lua: decides a batch of m chains, in order, each atomically and each
any mix of algorithms. Every chain is the twin of runChain in
src/core/chain.ts:
  1. every op of a chain is decided against the same `now`;
  2. a chain admits iff every enforcing (non-shadow) op admits;
  3. an op consumes iff it admits, has cost, and either its chain admits or
     its limit counts rejected attempts;
  4. an op that admits but does not consume reports the unconsumed figures
     (a cost-0 peek).
Every state of a chain is read before any of that chain's states is written,
as runChain does. A later chain in the batch sees what earlier ones wrote, so
a batch decides exactly as the same checks sent one by one, back to back.
Each distinct key is read once per call (GET on first use) and written once
at the end (SET with the TTL of its last change, or DEL), however many checks
of the batch touch it (see view / stage / write_back in common.lua): the
global key of a batch of 16 checks costs one GET and one SET, not 16 of each.
The server clock (TIME) is read once per call in server-time mode.

KEYS     the state keys of every op of every chain, chain after chain, in
         chain order (on a Cluster all in one hash slot)
ARGV[1]  TTL grace in ms added to every written key (0 in server-time mode)
ARGV[2]  '1': also report the peek figures of consumed ops (a Cluster caller
         needs them if another slot group rejects the chain), else '0'
ARGV[3]  '' : every chain is decided at the server clock (TIME, read once);
         'c': every chain carries its own `now` (client-time mode)
ARGV[4]  s, the number of limit specs; then s specs of 7 values each:
         algorithm, limit, windowMs, burst, queue ('1'/'0'),
         flags (1 = shadow, 2 = countRejected, summed), default cost
then     m, the number of chains; then for each chain:
         its now in ms (only when ARGV[3] is 'c'); n, the number of its ops;
         then per op either one value, j (spec j, its default cost, no
         lease), or three: -j, cost, leaseId

Reply: the smallest list of integers that carries the decisions. First,
       in server-time mode only (ARGV[3] is ''), the `now` every chain was
       decided at (TIME, read once); in client-time mode each chain's `now`
       is the one the caller sent, so the reply does not repeat it. Then,
       chain after chain, op after op, one of:
         remaining, resetMs                  admitted and consumed, no delay
                                             (the common case; remaining >= 0)
         -1, remaining, resetMs              admitted without consuming
         -2, remaining, resetMs, retryAfterMs   rejected (retryAfterMs -1 =
                                             never: the cost can never fit)
         -3, remaining, resetMs, delayMs     admitted and consumed, with a
                                             queue delay
       and after each op, when ARGV[2] is '1', peekRemaining and peekResetMs
       (0 unless the op consumed). A plain admitted check of one limit is 2
       integers (plus the call's `now`), not 6.
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
local want_peek = ARGV[2] == '1'
local client_time = ARGV[3] == 'c'
local nspecs = tonumber(ARGV[4])

-- Specs: the algorithm, its params table, shadow, countRejected and default cost, built once per call.
local spec_algo, spec_params, spec_shadow, spec_count, spec_cost = {}, {}, {}, {}, {}
for j = 1, nspecs do
  local b = 4 + 7 * (j - 1)
  spec_algo[j] = algo(ARGV[b + 1])
  spec_params[j] = params(ARGV[b + 2], ARGV[b + 3], ARGV[b + 4], ARGV[b + 5])
  if grace == 0 then
    -- A lease's TTL is the window when it is the latest: the ARGV string is that TTL, formatted already.
    TTL_ARG[spec_params[j].window] = ARGV[b + 3]
  end
  local flags = tonumber(ARGV[b + 6])
  spec_shadow[j] = flags % 2 == 1
  spec_count[j] = flags >= 2
  spec_cost[j] = tonumber(ARGV[b + 7])
end

local first = 5 + 7 * nspecs
local m = tonumber(ARGV[first])

-- Check the shape before anything is written: a malformed batch changes nothing.
local pos, total = first + 1, 0
for _ = 1, m do
  if client_time then
    if tonumber(ARGV[pos]) == nil then
      return redis.error_reply('ratecontract: chain ARGV malformed (now)')
    end
    pos = pos + 1
  end
  local n = tonumber(ARGV[pos])
  if n == nil then
    return redis.error_reply('ratecontract: chain ARGV malformed (n)')
  end
  pos = pos + 1
  for _ = 1, n do
    local j = tonumber(ARGV[pos])
    if j == nil or spec_algo[math.abs(j)] == nil then
      return redis.error_reply('ratecontract: chain op names no spec')
    end
    if j < 0 then
      if tonumber(ARGV[pos + 1]) == nil then
        return redis.error_reply('ratecontract: chain ARGV malformed (cost)')
      end
      pos = pos + 3
    else
      pos = pos + 1
    end
  end
  total = total + n
end
if total ~= #KEYS or pos ~= #ARGV + 1 then
  return redis.error_reply('ratecontract: chain got ' .. #KEYS .. ' keys and ' .. #ARGV .. ' args for ' .. total .. ' ops')
end

local server_now = nil
local arg = first + 1
local key = 0
local out = {}
local o = 0
if not client_time then
  server_now = clock('')
  out[1] = server_now
  o = 1
end
-- Per op of the chain being decided (reused from chain to chain).
local o_spec, o_cost, o_lease, o_pre = {}, {}, {}, {}
local o_ok, o_state, o_rem, o_reset, o_retry, o_delay = {}, {}, {}, {}, {}, {}

for _ = 1, m do
  local now = server_now
  if client_time then
    now = tonumber(ARGV[arg])
    arg = arg + 1
  end
  local n = tonumber(ARGV[arg])
  arg = arg + 1

  local chain_allowed = true
  for i = 1, n do
    local spec = tonumber(ARGV[arg])
    local cost, lease
    if spec < 0 then
      spec = -spec
      cost = tonumber(ARGV[arg + 1])
      lease = ARGV[arg + 2]
      arg = arg + 3
    else
      cost = spec_cost[spec]
      lease = ''
      arg = arg + 1
    end
    local a = spec_algo[spec]
    local pre = view(KEYS[key + i], a)
    local ok, st, rem, reset, retry, delay = a.decide(pre, now, cost, spec_params[spec], lease)
    o_spec[i], o_cost[i], o_lease[i], o_pre[i] = spec, cost, lease, pre
    o_ok[i], o_state[i], o_rem[i], o_reset[i], o_retry[i], o_delay[i] = ok, st, rem, reset, retry, delay
    if not ok and not spec_shadow[spec] then
      chain_allowed = false
    end
  end

  for i = 1, n do
    local spec = o_spec[i]
    local a, p, cost = spec_algo[spec], spec_params[spec], o_cost[i]
    local peek_rem, peek_reset = 0, 0
    if o_ok[i] and cost > 0 and (chain_allowed or spec_count[spec]) then
      stage(KEYS[key + i], a, p, o_state[i], now, grace)
      if want_peek then
        local _, _, r, t = a.decide(o_pre[i], now, 0, p, o_lease[i])
        peek_rem, peek_reset = r, t
      end
      local delay = o_delay[i]
      if delay == 0 then
        out[o + 1], out[o + 2] = o_rem[i], o_reset[i]
        o = o + 2
      else
        out[o + 1], out[o + 2], out[o + 3], out[o + 4] = -3, o_rem[i], o_reset[i], delay
        o = o + 4
      end
    elseif o_ok[i] then
      local rem, reset = o_rem[i], o_reset[i]
      if cost > 0 then
        local _, _, r, t = a.decide(o_pre[i], now, 0, p, o_lease[i])
        rem, reset = r, t
      end
      out[o + 1], out[o + 2], out[o + 3] = -1, rem, reset
      o = o + 3
    else
      out[o + 1], out[o + 2], out[o + 3], out[o + 4] = -2, o_rem[i], o_reset[i], wire_retry(o_retry[i])
      o = o + 4
    end
    if want_peek then
      out[o + 1], out[o + 2] = peek_rem, peek_reset
      o = o + 2
    end
  end
  key = key + n
end
write_back()
return out
