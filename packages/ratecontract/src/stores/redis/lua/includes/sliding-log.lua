--[[
Twin of src/algorithms/sliding-log.ts. State: the doubles t0, c0, t1, c1, ...
(admission times, ascending, and the cost admitted at each), packed as in
common.lua (16 bytes per entry), held in Lua as the flat array
{t0, c0, t1, c1, ...}.
]]
-- Built on first use in a call (see algo() in common.lua).
BUILDERS['sliding-log'] = function()
  return {
    decode = function(raw)
      local n = #raw
      if n == 0 or math.fmod(n, 16) ~= 0 then
        bad_state(raw, 'sliding-log')
      end
      return unpack_doubles(raw)
    end,
    encode = pack_doubles,
    decide = function(s, now, cost, p)
      local W = p.window
      local N = p.limit
      local cutoff = now - W
      local start = 1
      local used = 0
      local len = 0
      if s ~= nil then
        len = #s
        while start <= len and s[start] <= cutoff do
          start = start + 2
        end
        for i = start + 1, len, 2 do
          used = used + s[i]
        end
      end
      -- The live entries, copied (the input state is never modified).
      local live = nil
      if s ~= nil and start <= len then
        live = {}
        for i = start, len do
          live[#live + 1] = s[i]
        end
      end
      if used + cost <= N then
        local nxt = live
        if cost > 0 then
          nxt = live or {}
          local last = #nxt - 1
          if last >= 1 and nxt[last] == now then
            nxt[last + 1] = nxt[last + 1] + cost
          else
            nxt[#nxt + 1] = now
            nxt[#nxt + 1] = cost
          end
        end
        local reset = 0
        if nxt ~= nil then
          reset = nxt[#nxt - 1] + W - now
        end
        return true, nxt, N - used - cost, reset, 0, 0
      end
      local retry = INF
      if cost <= N and live ~= nil then
        -- Oldest entries leave the window first; find when enough has left.
        local need = used + cost - N
        local freed = 0
        for i = 1, #live, 2 do
          freed = freed + live[i + 1]
          if freed >= need then
            retry = live[i] + W - now
            break
          end
        end
      end
      local reset = 0
      if live ~= nil then
        reset = live[#live - 1] + W - now
      end
      return false, live, N - used, reset, retry, 0
    end,
    refund = function(s, now, cost, p)
      local copy = {}
      for i = 1, #s do
        copy[i] = s[i]
      end
      local i = #copy - 1
      while i >= 1 do
        if copy[i] == now then
          local left = copy[i + 1] - cost
          if left > 0 then
            copy[i + 1] = left
          else
            table.remove(copy, i)
            table.remove(copy, i)
          end
          break
        end
        i = i - 2
      end
      if #copy > 0 then
        return copy
      end
      return nil
    end,
    expires = function(s, p)
      return s[#s - 1] + p.window
    end,
  }
end
