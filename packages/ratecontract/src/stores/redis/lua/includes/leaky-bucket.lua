--[[
Twin of src/algorithms/leaky-bucket.ts (meter and queue mode). State: the doubles
l, t (level in units of 1/T, drained K units per ms, time of the last update;
T = W, K = N in the exact range, see bucket_scale in common.lua).
]]
-- Built on first use in a call (see algo() in common.lua).
BUILDERS['leaky-bucket'] = function()
  return {
    decode = function(raw)
      if #raw ~= 16 then
        bad_state(raw, 'leaky-bucket')
      end
      local l, t = sunpack('<dd', raw)
      return { l = l, t = t }
    end,
    encode = function(s)
      return spack('<dd', s.l, s.t)
    end,
    decide = function(s, now, cost, p)
      -- Units: K per ms, T per unit of cost (exact range: K = N, T = W).
      local K = p.K
      local T = p.T
      local depth = p.burst * T
      local level = 0
      if s ~= nil then
        level = math.max(0, s.l - math.max(0, now - s.t) * K)
      end
      local nxt = level + cost * T
      if nxt <= depth then
        local st = nil
        if nxt > 0 then
          st = { l = nxt, t = now }
        end
        local delay = 0
        if p.queue and cost > 0 then
          delay = ceil_div(level, K)
        end
        return true, st, math.floor((depth - nxt) / T), ceil_div(nxt, K), 0, delay
      end
      local st = nil
      if level > 0 then
        st = { l = level, t = now }
      end
      local retry = ceil_div(nxt - depth, K)
      if cost > p.burst then
        retry = INF
      end
      return false, st, math.floor((depth - level) / T), ceil_div(level, K), retry, 0
    end,
    refund = function(s, now, cost, p)
      local l = s.l - cost * p.T
      if l > 0 then
        return { l = l, t = s.t }
      end
      return nil
    end,
    expires = function(s, p)
      return s.t + ceil_div(s.l, p.K)
    end,
  }
end
