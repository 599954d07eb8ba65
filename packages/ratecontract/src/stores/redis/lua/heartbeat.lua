--[[
heartbeat.lua: replica discovery. Records that limiter instance `id` is
alive until now + ttl, forgets instances whose time is up, and answers how
many are alive. The set (a sorted set scored by expiry) lives exactly as
long as its newest member.

KEYS[1]  the replica set key (<prefix>replicas)
ARGV[1]  now in ms (client-time mode), or '' for the server clock (TIME)
ARGV[2]  instance id
ARGV[3]  ttl in ms (a positive integer)

Reply: the number of live instances, this one included (an integer).
]]
-- @include common

local now = clock(ARGV[1])
local ttl = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', fmt(now))
redis.call('ZADD', KEYS[1], fmt(now + ttl), ARGV[2])
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
redis.call('PEXPIRE', KEYS[1], fmt(tonumber(last[2]) - now))
return redis.call('ZCARD', KEYS[1])
