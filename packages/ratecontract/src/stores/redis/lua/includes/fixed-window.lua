--[[
Twin of src/algorithms/fixed-window.ts. State: the doubles w, c (window start,
count), packed as in common.lua (16 bytes).
]]
-- Built on first use in a call (see algo() in common.lua).
BUILDERS['fixed-window'] = function()
  return {
    decode = function(raw)
      if #raw ~= 16 then
        bad_state(raw, 'fixed-window')
      end
      local w, c = sunpack('<dd', raw)
      return { w = w, c = c }
    end,
    encode = function(s)
      return spack('<dd', s.w, s.c)
    end,
    decide = function(s, now, cost, p)
      local W = p.window
      local N = p.limit
      local w = math.floor(now / W) * W
      local c = 0
      if s ~= nil and s.w == w then
        c = s.c
      end
      local reset = w + W - now
      if c + cost <= N then
        local nxt = c + cost
        if nxt > 0 then
          return true, { w = w, c = nxt }, N - nxt, reset, 0, 0
        end
        return true, nil, N - nxt, 0, 0, 0
      end
      local st = nil
      if c > 0 then
        st = { w = w, c = c }
      end
      local retry = reset
      if cost > N then
        retry = INF
      end
      return false, st, N - c, c > 0 and reset or 0, retry, 0
    end,
    refund = function(s, now, cost, p)
      local w = math.floor(now / p.window) * p.window
      if s.w ~= w then
        return s
      end
      local c = s.c - cost
      if c > 0 then
        return { w = w, c = c }
      end
      return nil
    end,
    expires = function(s, p)
      return s.w + p.window
    end,
  }
end
