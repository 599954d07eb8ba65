--[[
common.lua: helpers shared by every ratecontract script (included, not run alone).

Arithmetic: Lua numbers are IEEE doubles, like JavaScript numbers. Every value
stays an integer below 2^53 by construction (the limit compiler bounds
limit * window, or beyond 2^49 the limit, the window and the bucket units;
mul_div_floor keeps the sliding window's products exact), and every expression below repeats the TypeScript twin's
operations in the same order, so both sides round identically. `%` is
written as math.fmod (C fmod, which is what JavaScript `%` computes); Lua's
own `%` differs for negative operands. States are packed doubles (below);
the integers still written as text (TTLs) use '%.0f' so that large ones
never turn into 1e+15 notation.
]]

local INF = math.huge
-- Algorithm twins, by name: decode, encode, decide, refund, expires.
-- decide(state, now, cost, p, lease) returns six values: allowed, the next
-- state, remaining, reset, retry, delay (no table per decision).
local ALGOS = {}
-- Each algorithm's table is built by its builder the first time a call uses it,
-- so a call pays only for the algorithms its ops use.
local BUILDERS = {}
-- Algorithms with a parameter in their name, 'name/k' (the sliding window's
-- precision): PARAMETRIC[name](k) builds the twin for k.
local PARAMETRIC = {}

local function ceil_div(a, b)
  return math.floor((a + b - 1) / b)
end

local function fmt(x)
  return string.format('%.0f', x)
end

--[[
State values are binary: struct.pack of little-endian doubles ('<d', 8
bytes each). A double holds every integer below 2^53 exactly, so a state
value round-trips bit for bit at every magnitude the limit compiler accepts,
and packing or unpacking one costs a copy, not a parse (measured: 0.58 us to
decode and encode a 4-field state, 4.6 us as text). The TypeScript twin of
the format is src/stores/redis/state-codec.ts. A value of the wrong size is
refused with an error (the call then gets each limit's onError), never read
as an empty state.
]]
local spack, sunpack = struct.pack, struct.unpack

local function bad_state(raw, what)
  error('ratecontract: stored ' .. what .. ' state has ' .. #raw .. ' bytes, not a state of this format')
end

-- '<' followed by n 'd's, built once per n (n <= 64): one pack / unpack call for a short array.
local DOUBLES = {}
local function doubles_fmt(n)
  local f = DOUBLES[n]
  if f == nil then
    f = '<' .. string.rep('d', n)
    DOUBLES[n] = f
  end
  return f
end
local D16 = '<dddddddddddddddd'

-- An array of doubles, packed (in chunks of 16 beyond 64 entries: unpack() has a stack limit).
local function pack_doubles(v)
  local n = #v
  if n <= 64 then
    return spack(doubles_fmt(n), unpack(v))
  end
  local parts = {}
  local i = 0
  while i + 16 <= n do
    parts[#parts + 1] = spack(D16, unpack(v, i + 1, i + 16))
    i = i + 16
  end
  if i < n then
    parts[#parts + 1] = spack(doubles_fmt(n - i), unpack(v, i + 1, n))
  end
  return table.concat(parts)
end

-- The array of doubles of `raw` (#raw a multiple of 8).
local function unpack_doubles(raw)
  local n = #raw / 8
  if n <= 64 then
    local v = { sunpack(doubles_fmt(n), raw) }
    v[n + 1] = nil
    return v
  end
  local v = {}
  local i, pos = 0, 1
  while i + 16 <= n do
    v[i + 1], v[i + 2], v[i + 3], v[i + 4], v[i + 5], v[i + 6], v[i + 7], v[i + 8], v[i + 9], v[i + 10], v[i + 11], v[i + 12], v[i + 13], v[i + 14], v[i + 15], v[i + 16], pos = sunpack(D16, raw, pos)
    i = i + 16
  end
  while i < n do
    v[i + 1], pos = sunpack('<d', raw, pos)
    i = i + 1
  end
  return v
end

--[[
A TTL (ms) as the string SET ... PX takes (a string argument costs Redis
less than a Lua number), formatted once per distinct value in a call: the
checks of a batch on one window share their TTLs. tostring is exact for
integers below 1e14 (%.14g) and cheaper than '%.0f'; a script may seed the
table with an ARGV string it already has (see chain.lua).
]]
local TTL_ARG = {}
local function ttl_arg(ms)
  local s = TTL_ARG[ms]
  if s == nil then
    if ms < 1e14 then
      s = tostring(ms)
    else
      s = fmt(ms)
    end
    TTL_ARG[ms] = s
  end
  return s
end

-- The caller's time (client-time mode) or the server clock (TIME), in ms.
local function clock(arg)
  if arg ~= nil and arg ~= '' then
    return tonumber(arg)
  end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function algo(name)
  local a = ALGOS[name]
  if a == nil then
    local build = BUILDERS[name]
    if build == nil then
      local base, k = string.match(tostring(name), '^([a-z-]+)/(%d+)$')
      local make = base and PARAMETRIC[base]
      if not make then
        error('ratecontract: unknown algorithm ' .. tostring(name))
      end
      local kk = tonumber(k)
      build = function()
        return make(kk)
      end
    end
    a = build()
    ALGOS[name] = a
  end
  return a
end

-- Twin of floor(a * b / c) in src/algorithms/types.ts (mulDivFloor): exact
-- for 0 <= a < 2^41, 0 <= b < 2^36, 1 <= c < 2^40 with a quotient below
-- 2^53, even where the product a * b passes 2^53 (b in three 12-bit digits).
local TWO53 = 9007199254740992
local function mul_div_floor(a, b, c)
  local ab = a * b
  if ab < TWO53 then
    return math.floor(ab / c)
  end
  local b0 = b - math.floor(b / 4096) * 4096
  local high = (b - b0) / 4096
  local b1 = high - math.floor(high / 4096) * 4096
  local b2 = (high - b1) / 4096
  local digits = { b2, b1, b0 }
  local q, r = 0, 0
  for i = 1, 3 do
    local x = r * 4096
    local y = a * digits[i]
    local qx = math.floor(x / c)
    local qy = math.floor(y / c)
    local rest = x - qx * c + (y - qy * c)
    local carry = 0
    if rest >= c then
      carry = 1
    end
    q = q * 4096 + qx + qy + carry
    r = rest - carry * c
  end
  return q
end

--[[
Twin of bucketScale in src/algorithms/scale.ts: the units the bucket
algorithms count in, K per ms and T per unit of cost. Exact range
(max(N, B) * W <= 2^49): K = N, T = W. Beyond it: K = 2^j, the largest with
W * K <= 2^51 and B * ceil(W * K / N) <= 2^51, and T = ceil(W * K / N).
]]
local EXACT_PRODUCT = 562949953421312
local SCALED_PRODUCT = 2251799813685248
local function bucket_scale(N, W, B)
  if math.max(N, B) * W <= EXACT_PRODUCT then
    return N, W
  end
  local K = 1
  local T = ceil_div(W, N)
  if W > SCALED_PRODUCT or B * T > SCALED_PRODUCT then
    error('ratecontract: limit outside the bucket algorithms\' range (burst x ceil(window / limit) above 2^51)')
  end
  while true do
    local K2 = K * 2
    if W * K2 > SCALED_PRODUCT then
      break
    end
    local T2 = ceil_div(W * K2, N)
    if B * T2 > SCALED_PRODUCT then
      break
    end
    K = K2
    T = T2
  end
  return K, T
end

-- The params of one limit spec, with the bucket units K and T (used by
-- token-bucket, leaky-bucket and gcra only; computed once per call).
-- `queue` is '1' or '0', then (a limit with plans whose state depends on the
-- plan's rate) ';N,B' per plan sharing the state: save keeps the key until
-- none of those plans needs it.
-- The table is built with every field in one constructor: a field added
-- later makes Lua grow (rehash) the table, which measured 1.5 us a spec.
local function params(limit, window, burst, queue)
  local N, W, B = tonumber(limit), tonumber(window), tonumber(burst)
  local K, T = bucket_scale(N, W, B)
  local p = { limit = N, window = W, burst = B, queue = string.sub(queue, 1, 1) == '1', K = K, T = T, shared = nil }
  if #queue > 1 then
    p.shared = {}
    for n, b in string.gmatch(queue, ';(%d+),(%d+)') do
      local q = { limit = tonumber(n), window = p.window, burst = tonumber(b), queue = p.queue }
      q.K, q.T = bucket_scale(q.limit, q.window, q.burst)
      p.shared[#p.shared + 1] = q
    end
  end
  return p
end

local function load(key, a)
  local raw = redis.call('GET', key)
  if not raw then
    return nil
  end
  return a.decode(raw)
end

-- When `state` stops mattering: the latest end over the spec and every plan
-- sharing its key (`p.shared`), so no sharing plan loses the state early.
local function expires(a, p, state)
  local last = a.expires(state, p)
  if p.shared ~= nil then
    for _, q in ipairs(p.shared) do
      local e = a.expires(state, q)
      if e > last then
        last = e
      end
    end
  end
  return last
end

--[[
Writes `state` under `key`, or deletes the key when the state is empty or
already expired. TTL = the state's remaining useful life (expires - now),
plus `grace` (client-time mode only), and never more than `cap` when `cap`
is positive (refund and release never lengthen a state's life, so they keep
the TTL the key already has when that is shorter).
]]
local function save(key, a, p, state, now, grace, cap)
  if state == nil then
    redis.call('DEL', key)
    return
  end
  local life = expires(a, p, state) - now
  if life <= 0 then
    redis.call('DEL', key)
    return
  end
  local ttl = life + grace
  if cap ~= nil and cap > 0 and cap < ttl then
    ttl = cap
  end
  redis.call('SET', key, a.encode(state), 'PX', ttl_arg(ttl))
end

--[[
A call's view of the keys it decides on. view() reads a key once, on its
first use in the call, and keeps the decoded state in memory; stage() records
a new state there, with the TTL that save() would give it; write_back() then
writes each changed key once (SET with the TTL of its last stage, or DEL).
Deciding a batch of checks against this view gives exactly what reading and
writing the key per check would: within a call nothing else touches the keys,
and the decoded states are never modified in place (every decide returns a
new table). A key used under a second algorithm (a limit whose id was reused
with another algorithm) is written and read again, as per-check GET / SET
would see it.
]]
local VIEW = {}
local VIEW_ORDER = {}

local function write_key(key, e)
  if e.dirty then
    if e.s == nil then
      redis.call('DEL', key)
    else
      redis.call('SET', key, e.a.encode(e.s), 'PX', ttl_arg(e.ttl))
    end
    e.dirty = false
  end
end

local function view(key, a)
  local e = VIEW[key]
  if e == nil then
    e = { a = a, s = load(key, a), dirty = false, ttl = 0 }
    VIEW[key] = e
    VIEW_ORDER[#VIEW_ORDER + 1] = key
  elseif e.a ~= a then
    write_key(key, e)
    e.a, e.s = a, load(key, a)
  end
  return e.s
end

-- The in-memory twin of save() (no cap: a decision may lengthen a state's life).
local function stage(key, a, p, state, now, grace)
  local e = VIEW[key]
  e.dirty = true
  if state == nil then
    e.s = nil
    return
  end
  local life = expires(a, p, state) - now
  if life <= 0 then
    e.s = nil
    return
  end
  e.s, e.ttl = state, life + grace
end

local function write_back()
  for _, key in ipairs(VIEW_ORDER) do
    write_key(key, VIEW[key])
  end
end

-- Infinity (a cost that can never fit) travels as -1.
local function wire_retry(x)
  if x == INF then
    return -1
  end
  return x
end
