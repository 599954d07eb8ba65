--[[
Twin of src/algorithms/gcra.ts. State: the doubles t, f (the TAT as
t + f/K ms, 0 <= f < K; K = N in the exact range, see bucket_scale in common.lua).
]]
-- Built on first use in a call (see algo() in common.lua).
BUILDERS['gcra'] = function()
  return {
    decode = function(raw)
      if #raw ~= 16 then
        bad_state(raw, 'gcra')
      end
      local t, f = sunpack('<dd', raw)
      return { t = t, f = f }
    end,
    encode = function(s)
      return spack('<dd', s.t, s.f)
    end,
    decide = function(s, now, cost, p)
      -- Units: K per ms, T per unit of cost (exact range: K = N, T = W).
      local K = p.K
      local T = p.T
      local tolerance = p.burst * T
      -- TAT relative to now, in units of 1/K ms, floored at now.
      local tat = 0
      if s ~= nil then
        tat = math.max(0, (s.t - now) * K + s.f)
      end
      local nxt = tat + cost * T
      if nxt <= tolerance then
        local st = nil
        if nxt > 0 then
          st = { t = now + math.floor(nxt / K), f = math.fmod(nxt, K) }
        end
        return true, st, math.floor((tolerance - nxt) / T), ceil_div(nxt, K), 0, 0
      end
      local st = nil
      if tat > 0 then
        st = { t = now + math.floor(tat / K), f = math.fmod(tat, K) }
      end
      local retry = ceil_div(nxt - tolerance, K)
      if cost > p.burst then
        retry = INF
      end
      return false, st, math.floor((tolerance - tat) / T), ceil_div(tat, K), retry, 0
    end,
    refund = function(s, now, cost, p)
      local tat = (s.t - now) * p.K + s.f - cost * p.T
      if tat > 0 then
        return { t = now + math.floor(tat / p.K), f = math.fmod(tat, p.K) }
      end
      return nil
    end,
    expires = function(s)
      if s.f > 0 then
        return s.t + 1
      end
      return s.t
    end,
  }
end
