// Profiling helper (not part of bench:redis): what each piece of
// ratecontract's one-limit GCRA chain costs inside redis-server's Lua, in
// microseconds per call. Runs one EVAL that loads common.lua and gcra.lua
// from src/stores/redis/lua/includes/ (read, never edited) and times each
// piece 200,000 times in a loop with TIME (redis-server CPU, no network).
//   node redis-lua-micro.js   (starts and stops its own redis-server)
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { startRedis } from './redis-server.js';

const dir = new URL('../packages/ratecontract/src/stores/redis/lua/includes/', import.meta.url);
const prelude = readFileSync(new URL('common.lua', dir), 'utf8') + readFileSync(new URL('gcra.lua', dir), 'utf8');
const N = 200_000;
const body = `
local function us() local t = redis.call('TIME'); return tonumber(t[1]) * 1e6 + tonumber(t[2]) end
local N = ${N}
local a = algo('gcra')
local p = params('10', '3600000', '100000000', '0')
local raw = struct.pack('<dd', 1796030550666, 5)
local st = a.decode(raw)
local now = 1796030550000
local res = {}
local function bench(name, f)
  local t0 = us()
  for i = 1, N do f() end
  res[#res + 1] = name .. '=' .. string.format('%.3f', (us() - t0) / N)
end
bench('empty loop', function() end)
bench('params() (one table per op)', function() return params('10', '3600000', '100000000', '0') end)
bench('op table', function() return { a = a, p = p, cost = 1, shadow = false, count_rejected = false, lease = '' } end)
bench("redis.call('GET')", function() return redis.call('GET', 'x') end)
bench('gcra decode (struct.unpack)', function() return a.decode(raw) end)
bench('gcra decide', function() return a.decide(st, now, 1, p) end)
bench('gcra encode (struct.pack)', function() return a.encode(st) end)
bench("redis.call('SET', k, v, 'PX', ttl)", function() return redis.call('SET', 'x', raw, 'PX', '360000000') end)
bench('save() (expires + encode + fmt + SET)', function() return save('y', a, p, st, now, 0, nil) end)
bench('reply: 1 + 2 integers', function() local o = {} for j = 1, 3 do o[#o + 1] = j end return o end)
bench("redis.call('TIME')", function() return redis.call('TIME') end)
return res`;

const r = await startRedis({ maxSeconds: 120, log: (s) => process.stderr.write(s + '\n') });
const c = new Redis({ host: '127.0.0.1', port: r.port });
try {
  const out = await c.eval(prelude + body, 0);
  console.log('| piece (chain.lua, one gcra op) | us per call in redis-server |');
  console.log('| --- | ---: |');
  for (const line of out) {
    const [name, v] = line.split('=');
    console.log(`| ${name} | ${v} |`);
  }
} finally {
  c.disconnect();
  await r.stop();
}
