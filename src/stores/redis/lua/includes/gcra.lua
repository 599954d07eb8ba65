--[[
Twin of src/algorithms/gcra.ts. State: "t f" (the TAT as t + f/N ms,
0 <= f < N).
]]
-- Built on first use in a call (see algo() in common.lua).
BUILDERS['gcra'] = function()
  return {
    decode = function(raw)
      local t, f = two(raw)
      return { t = t, f = f }
    end,
    encode = function(s)
      return string.format('%.0f %.0f', s.t, s.f)
    end,
    decide = function(s, now, cost, p)
      local W = p.window
      local N = p.limit
      local tolerance = p.burst * W
      -- TAT relative to now, in units of 1/N ms, floored at now.
      local tat = 0
      if s ~= nil then
        tat = math.max(0, (s.t - now) * N + s.f)
      end
      local nxt = tat + cost * W
      if nxt <= tolerance then
        local st = nil
        if nxt > 0 then
          st = { t = now + math.floor(nxt / N), f = math.fmod(nxt, N) }
        end
        return true, st, math.floor((tolerance - nxt) / W), ceil_div(nxt, N), 0, 0
      end
      local st = nil
      if tat > 0 then
        st = { t = now + math.floor(tat / N), f = math.fmod(tat, N) }
      end
      local retry = ceil_div(nxt - tolerance, N)
      if cost > p.burst then
        retry = INF
      end
      return false, st, math.floor((tolerance - tat) / W), ceil_div(tat, N), retry, 0
    end,
    refund = function(s, now, cost, p)
      local tat = (s.t - now) * p.limit + s.f - cost * p.window
      if tat > 0 then
        return { t = now + math.floor(tat / p.limit), f = math.fmod(tat, p.limit) }
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
