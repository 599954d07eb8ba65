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
