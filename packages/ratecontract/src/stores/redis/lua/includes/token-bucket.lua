--[[
Twin of src/algorithms/token-bucket.ts. State: the doubles u, t (tokens in
units of 1/T token, refilled K units per ms, time of the last update; T = W, K = N
in the exact range, see bucket_scale in common.lua).
]]
-- Built on first use in a call (see algo() in common.lua).
BUILDERS['token-bucket'] = function()
  return {
    decode = function(raw)
      if #raw ~= 16 then
        bad_state(raw, 'token-bucket')
      end
      local u, t = sunpack('<dd', raw)
      return { u = u, t = t }
    end,
    encode = function(s)
      return spack('<dd', s.u, s.t)
    end,
    decide = function(s, now, cost, p)
      -- Units: K per ms, T per token (exact range: K = N, T = W).
      local K = p.K
      local T = p.T
      local cap = p.burst * T
      local units = cap
      if s ~= nil then
        units = math.min(cap, s.u + math.max(0, now - s.t) * K)
      end
      local need = cost * T
      if units >= need then
        local left = units - need
        local st = nil
        if left < cap then
          st = { u = left, t = now }
        end
        return true, st, math.floor(left / T), ceil_div(cap - left, K), 0, 0
      end
      local st = nil
      if units < cap then
        st = { u = units, t = now }
      end
      local retry = ceil_div(need - units, K)
      if cost > p.burst then
        retry = INF
      end
      return false, st, math.floor(units / T), ceil_div(cap - units, K), retry, 0
    end,
    refund = function(s, now, cost, p)
      local cap = p.burst * p.T
      local u = math.min(cap, s.u + cost * p.T)
      if u < cap then
        return { u = u, t = s.t }
      end
      return nil
    end,
    expires = function(s, p)
      return s.t + ceil_div(p.burst * p.T - s.u, p.K)
    end,
  }
end
