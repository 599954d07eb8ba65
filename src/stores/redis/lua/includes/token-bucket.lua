--[[
Twin of src/algorithms/token-bucket.ts. State: "u t" (tokens in units of
1/W token, time of the last update).
]]
-- Built on first use in a call (see algo() in common.lua).
BUILDERS['token-bucket'] = function()
  return {
    decode = function(raw)
      local u, t = two(raw)
      return { u = u, t = t }
    end,
    encode = function(s)
      return string.format('%.0f %.0f', s.u, s.t)
    end,
    decide = function(s, now, cost, p)
      local W = p.window
      local N = p.limit
      local cap = p.burst * W
      local units = cap
      if s ~= nil then
        units = math.min(cap, s.u + math.max(0, now - s.t) * N)
      end
      local need = cost * W
      if units >= need then
        local left = units - need
        local st = nil
        if left < cap then
          st = { u = left, t = now }
        end
        return true, st, math.floor(left / W), ceil_div(cap - left, N), 0, 0
      end
      local st = nil
      if units < cap then
        st = { u = units, t = now }
      end
      local retry = ceil_div(need - units, N)
      if cost > p.burst then
        retry = INF
      end
      return false, st, math.floor(units / W), ceil_div(cap - units, N), retry, 0
    end,
    refund = function(s, now, cost, p)
      local cap = p.burst * p.window
      local u = math.min(cap, s.u + cost * p.window)
      if u < cap then
        return { u = u, t = s.t }
      end
      return nil
    end,
    expires = function(s, p)
      return s.t + ceil_div(p.burst * p.window - s.u, p.limit)
    end,
  }
end
