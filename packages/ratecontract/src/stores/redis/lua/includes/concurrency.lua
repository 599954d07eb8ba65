--[[
Twin of src/algorithms/concurrency.ts. State: the leases in order, each
packed as struct '<ddI4c0': the doubles exp and cost, the id's length in
bytes (a 4-byte unsigned integer) and the id's bytes, with nothing between
leases (the length lets a lease id hold any byte).
]]
-- Built on first use in a call (see algo() in common.lua).
BUILDERS['concurrency'] = function()
  return {
    decode = function(raw)
      local out = {}
      local pos = 1
      local n = #raw
      while pos <= n do
        if n - pos < 19 then
          bad_state(raw, 'concurrency')
        end
        local exp, cost, id, nxt = sunpack('<ddI4c0', raw, pos)
        out[#out + 1] = { exp = exp, cost = cost, id = id }
        pos = nxt
      end
      if #out == 0 then
        bad_state(raw, 'concurrency')
      end
      return out
    end,
    encode = function(s)
      local parts = {}
      for i, l in ipairs(s) do
        parts[i] = spack('<ddI4c0', l.exp, l.cost, #l.id, l.id)
      end
      return table.concat(parts)
    end,
    decide = function(s, now, cost, p, lease)
      local N = p.limit
      -- One pass over the leases: what the live ones hold, the last expiry,
      -- and whether the live ones are already in expiry order (they are when
      -- every lease got the same lifetime, the usual case).
      local total, nlive, used, last = 0, 0, 0, now
      local in_order, prev = true, -INF
      if s ~= nil then
        total = #s
        for i = 1, total do
          local l = s[i]
          local e = l.exp
          if e > now then
            nlive = nlive + 1
            used = used + l.cost
            if e > last then
              last = e
            end
            if e < prev then
              in_order = false
            end
            prev = e
          end
        end
      end
      -- The live leases, in order; the input itself when none has expired (it is never modified).
      local live = s
      if nlive < total then
        live = {}
        for i = 1, total do
          local l = s[i]
          if l.exp > now then
            live[#live + 1] = l
          end
        end
      end
      if used + cost <= N then
        if cost > 0 then
          local grown = {}
          for i = 1, nlive do
            grown[i] = live[i]
          end
          grown[nlive + 1] = { id = lease or '', exp = now + p.window, cost = cost }
          live = grown
          nlive = nlive + 1
          last = now + p.window
        end
        local st = nil
        if nlive > 0 then
          st = live
        end
        return true, st, N - used - cost, last - now, 0, 0
      end
      local retry = INF
      if cost <= N then
        local by_expiry = live
        if not in_order then
          by_expiry = {}
          for i = 1, nlive do
            by_expiry[i] = live[i]
          end
          -- Ties need no stable order: equal expiries give the same answer.
          table.sort(by_expiry, function(a, b)
            return a.exp < b.exp
          end)
        end
        local need = used + cost - N
        local freed = 0
        for i = 1, nlive do
          local l = by_expiry[i]
          freed = freed + l.cost
          if freed >= need then
            retry = l.exp - now
            break
          end
        end
      end
      local st = nil
      if nlive > 0 then
        st = live
      end
      return false, st, N - used, last - now, retry, 0
    end,
    -- Refunding a lease releases it.
    refund = function(s, now, cost, p, lease)
      local left = {}
      for _, l in ipairs(s) do
        if l.id ~= (lease or '') then
          left[#left + 1] = l
        end
      end
      if #left > 0 then
        return left
      end
      return nil
    end,
    expires = function(s)
      local last = 0
      for _, l in ipairs(s) do
        if l.exp > last then
          last = l.exp
        end
      end
      return last
    end,
  }
end
