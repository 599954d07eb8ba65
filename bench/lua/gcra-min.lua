--[[
gcra-min.lua: the smallest GCRA decision a Redis rate limiter can make, for
the redis-benchmark ceiling (bench/redis.js). Same Redis calls as
ratecontract's chain.lua on one gcra limit (TIME, GET, SET PX), same
decision (admit iff the new TAT stays within the tolerance), none of its
generality (one algorithm, one key, no peek figures, TAT in whole ms).

KEYS[1]  state key: the theoretical arrival time (TAT), ms
ARGV[1]  emission interval T = window / limit, ms
ARGV[2]  tolerance = burst * T, ms
Reply: { allowed (0/1), retryAfterMs }
]]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local T = tonumber(ARGV[1])
local tol = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then
  tat = now
end
local nxt = tat + T
if nxt - now > tol then
  return { 0, nxt - now - tol }
end
redis.call('SET', KEYS[1], string.format('%.0f', nxt), 'PX', string.format('%.0f', nxt - now))
return { 1, 0 }
