--[[
Twin of src/algorithms/sliding-window.ts. State: the doubles w, c, p
(current window start, its count, the previous window's count), packed as
in common.lua (24 bytes).
]]
local function sw_roll(s, w, W)
  if s == nil then
    return 0, 0
  end
  if s.w == w then
    return s.c, s.p
  end
  if s.w == w - W then
    return 0, s.c
  end
  return 0, 0
end

-- The exact range (N * W <= 2^49): the cross-multiplied rule in plain
-- products (twin of decideExact).
local function sw_decide_exact(s, now, cost, p)
  local W = p.window
  local N = p.limit
  local w = math.floor(now / W) * W
  local c, prev = sw_roll(s, w, W)
  local elapsed = now - w
  local weighted = prev * (W - elapsed)
  local capacity = N * W
  if weighted + (c + cost) * W <= capacity then
    local nxt = c + cost
    local reset = 0
    if nxt > 0 then
      reset = w + 2 * W - now
    elseif prev > 0 then
      reset = w + W - now
    end
    local st = nil
    if nxt > 0 or prev > 0 then
      st = { w = w, c = nxt, p = prev }
    end
    return true, st, math.floor((capacity - weighted - nxt * W) / W), reset, 0, 0
  end
  local retry_at = INF
  if cost <= N then
    local room = N - c - cost
    -- Within the current window the previous window's weight decays.
    if room >= 0 and prev > 0 then
      local e = W - math.floor((room * W) / prev)
      if e < W then
        retry_at = w + e
      end
    end
    if retry_at == INF then
      -- Next window: the current count becomes the previous one.
      local e = 0
      if c ~= 0 then
        e = math.max(0, W - math.floor(((N - cost) * W) / c))
      end
      retry_at = w + W + e
    end
  end
  local st = nil
  if c > 0 or prev > 0 then
    st = { w = w, c = c, p = prev }
  end
  local reset = 0
  if c > 0 then
    reset = w + 2 * W - now
  elseif prev > 0 then
    reset = w + W - now
  end
  return false, st, math.max(0, math.floor((capacity - weighted - c * W) / W)), reset, retry_at - now, 0
end

-- Beyond 2^49: the same rule through mul_div_floor (twin of decideQuota).
local function sw_decide_quota(s, now, cost, p)
  local W = p.window
  local N = p.limit
  local w = math.floor(now / W) * W
  local c, prev = sw_roll(s, w, W)
  local elapsed = now - w
  -- The previous window's weight, rounded up: ceil(prev * (W - elapsed) / W),
  -- exactly (see mulDivFloor in the TypeScript twin).
  local held = prev - mul_div_floor(prev, elapsed, W)
  if held + c + cost <= N then
    local nxt = c + cost
    local reset = 0
    if nxt > 0 then
      reset = w + 2 * W - now
    elseif prev > 0 then
      reset = w + W - now
    end
    local st = nil
    if nxt > 0 or prev > 0 then
      st = { w = w, c = nxt, p = prev }
    end
    return true, st, N - nxt - held, reset, 0, 0
  end
  local retry_at = INF
  if cost <= N then
    local room = N - c - cost
    -- Within the current window the previous window's weight decays.
    if room >= 0 and prev > 0 then
      local e = W - mul_div_floor(room, W, prev)
      if e < W then
        retry_at = w + e
      end
    end
    if retry_at == INF then
      -- Next window: the current count becomes the previous one.
      local e = 0
      if c ~= 0 and N - cost < c then
        e = W - mul_div_floor(N - cost, W, c)
      end
      retry_at = w + W + e
    end
  end
  local st = nil
  if c > 0 or prev > 0 then
    st = { w = w, c = c, p = prev }
  end
  local reset = 0
  if c > 0 then
    reset = w + 2 * W - now
  elseif prev > 0 then
    reset = w + W - now
  end
  return false, st, math.max(0, N - c - held), reset, retry_at - now, 0
end

-- Built on first use in a call (see algo() in common.lua).
BUILDERS['sliding-window'] = function()
  return {
    decode = function(raw)
      if #raw ~= 24 then
        bad_state(raw, 'sliding-window')
      end
      local w, c, prev = sunpack('<ddd', raw)
      return { w = w, c = c, p = prev }
    end,
    encode = function(s)
      return spack('<ddd', s.w, s.c, s.p)
    end,
    -- Twin of decideInto: the same split as the TypeScript algorithm.
    decide = function(s, now, cost, p)
      if p.limit * p.window <= EXACT_PRODUCT then
        return sw_decide_exact(s, now, cost, p)
      end
      return sw_decide_quota(s, now, cost, p)
    end,
    refund = function(s, now, cost, p)
      local w = math.floor(now / p.window) * p.window
      if s.w ~= w then
        return s
      end
      return { w = w, c = math.max(0, s.c - cost), p = s.p }
    end,
    expires = function(s, p)
      if s.c > 0 then
        return s.w + 2 * p.window
      end
      return s.w + p.window
    end,
  }
end

--[[
Twin of src/algorithms/sub-windows.ts: the sliding window with precision k
>= 2, run under the name 'sliding-window/k'. State: w (start of the current
sub-window of g = W / k ms) and the k + 1 counts n[0] (current) .. n[k]
(k sub-windows back), packed as k + 2 doubles. The table is keyed by the
algorithm's name, so k is fixed for the table; a value of another length
is refused (bad_state), never misread.
]]
PARAMETRIC['sliding-window'] = function(k)
  local size = 8 * (k + 2)
  local what = 'sliding-window/' .. k

  -- The count i sub-windows back, of s rolled forward by `shift` sub-windows.
  local function rolled(s, shift, i)
    if s == nil then
      return 0
    end
    local j = i - shift
    if j >= 0 and j <= k then
      return s.n[j + 1]
    end
    return 0
  end

  local function last_use(w, n, g, W)
    for i = 0, k do
      if n[i + 1] > 0 then
        return w - i * g + W + g
      end
    end
    return w
  end

  local function decide(s, now, cost, p)
    local W = p.window
    local N = p.limit
    local g = W / k
    local w = math.floor(now / g) * g
    local shift = k + 1
    if s ~= nil then
      shift = math.min(k + 1, math.max(0, (w - s.w) / g))
    end
    local e = now - w
    local rest = 0
    for i = 0, k - 1 do
      rest = rest + rolled(s, shift, i)
    end
    local old = rolled(s, shift, k)
    local held = old - mul_div_floor(old, e, g)
    if held + rest + cost <= N then
      if rest + cost + old <= 0 then
        return true, nil, N - rest - cost - held, 0, 0, 0
      end
      local n = {}
      for i = 0, k do
        n[i + 1] = rolled(s, shift, i)
      end
      n[1] = n[1] + cost
      return true, { w = w, n = n }, N - rest - cost - held, last_use(w, n, g, W) - now, 0, 0
    end
    local retry_at = INF
    if cost <= N then
      local r = rest
      for j = 0, k + 1 do
        local start = w + j * g
        local old_j = 0
        if j <= k then
          old_j = rolled(s, shift, k - j)
        end
        if j > 0 then
          r = r - old_j
        end
        local room = N - r - cost
        if room >= 0 then
          if j > 0 and room >= old_j then
            retry_at = start
            break
          end
          if old_j > 0 then
            local at = g - mul_div_floor(room, g, old_j)
            if at < g then
              retry_at = start + at
              break
            end
          end
        end
      end
    end
    local remaining = math.max(0, N - rest - held)
    if rest + old == 0 then
      return false, nil, remaining, 0, retry_at - now, 0
    end
    local n = {}
    for i = 0, k do
      n[i + 1] = rolled(s, shift, i)
    end
    return false, { w = w, n = n }, remaining, last_use(w, n, g, W) - now, retry_at - now, 0
  end

  return {
    decode = function(raw)
      if #raw ~= size then
        bad_state(raw, what)
      end
      local v = unpack_doubles(raw)
      local n = {}
      for i = 1, k + 1 do
        n[i] = v[i + 1]
      end
      return { w = v[1], n = n }
    end,
    encode = function(s)
      local v = { s.w }
      for i = 1, k + 1 do
        v[i + 1] = s.n[i]
      end
      return pack_doubles(v)
    end,
    decide = decide,
    refund = function(s, now, cost, p)
      local g = p.window / k
      local w = math.floor(now / g) * g
      if s.w ~= w then
        return s
      end
      local n = {}
      for i = 1, k + 1 do
        n[i] = s.n[i]
      end
      n[1] = math.max(0, n[1] - cost)
      return { w = w, n = n }
    end,
    expires = function(s, p)
      return last_use(s.w, s.n, p.window / k, p.window)
    end,
  }
end
