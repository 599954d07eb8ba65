// Profiling helper (not part of bench:redis): what one EVALSHA / FCALL of
// ratecontract's chain script costs inside redis-server, against variants
// built here from the same src/stores/redis/lua/ files (read, never edited):
//
//   shipped      chain.lua as the store sends it (every algorithm included)
//   gcra-only    the same chain.lua with only common + gcra included: the
//                same code path, but the six other ALGOS tables and their
//                ~30 closures are not built on every call
//   function     the shipped chain.lua loaded once as a Redis 7 Function
//                (FUNCTION LOAD; FCALL): the includes run once (first call),
//                each later call runs only the chain body
//   gcra-min     lua/gcra-min.lua, the redis-benchmark ceiling's script
//
// Each is driven by redis-benchmark (50 clients, -P 16, 200,000 calls, 10,000
// random keys, one gcra limit; and a four-limit chain for the chain
// variants), and measured as redis-server CPU per call (INFO cpu) and
// calls/s. Usage: node redis-lua-cost.js   (starts and stops its own redis-server)

import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { startRedis } from './redis-server.js';
import { chainArgv } from './redis-ceiling.js';

const luaDir = fileURLToPath(new URL('../packages/ratecontract/src/stores/redis/lua/', import.meta.url));

function expand(file, only) {
  return readFileSync(file, 'utf8')
    .split('\n')
    .map((line) => {
      const m = /^-- @include ([a-z0-9-]+)\s*$/.exec(line);
      if (m === null) return line;
      if (only !== undefined && !only.includes(m[1])) return `-- (${m[1]} left out)`;
      return readFileSync(`${luaDir}includes/${m[1]}.lua`, 'utf8');
    })
    .join('\n');
}

/**
 * chain.lua as a Redis Function library. Redis 7.0 runs FUNCTION LOAD's top
 * level without the math/string libraries, so everything before the body is
 * run on the first call and kept (an upvalue of the registered function):
 * every later call runs only the chain body.
 */
function asFunction(text) {
  const bodyStart = text.indexOf('local grace = tonumber(ARGV[1])');
  if (bodyStart < 0) throw new Error('chain.lua changed shape: cannot find its body');
  return [
    '#!lua name=rcbench',
    'local run',
    "redis.register_function('rcchain', function(KEYS, ARGV)",
    '  if run == nil then',
    '    run = (function()',
    text.slice(0, bodyStart),
    '      return function(KEYS, ARGV)',
    text.slice(bodyStart),
    '      end',
    '    end)()',
    '  end',
    '  return run(KEYS, ARGV)',
    'end)',
  ].join('\n');
}

const r = await startRedis({ maxSeconds: 300, log: (s) => process.stderr.write(s + '\n') });
const admin = new Redis({ host: '127.0.0.1', port: r.port });
try {
  const shipped = expand(`${luaDir}chain.lua`);
  const gcraOnly = expand(`${luaDir}chain.lua`, ['common', 'gcra']);
  const min = readFileSync(new URL('./lua/gcra-min.lua', import.meta.url), 'utf8');
  const sha = {
    shipped: await admin.script('LOAD', shipped),
    'gcra-only': await admin.script('LOAD', gcraOnly),
    'gcra-min': await admin.script('LOAD', min),
  };
  await admin.call('FUNCTION', 'LOAD', 'REPLACE', asFunction(shipped));
  const cpu = async () => {
    const t = await admin.info('cpu');
    return Number(/used_cpu_sys:([\d.]+)/.exec(t)[1]) + Number(/used_cpu_user:([\d.]+)/.exec(t)[1]);
  };
  const n = 200_000;
  const rows = [];
  const variants = [
    ['shipped', 1, (k) => ['EVALSHA', sha.shipped, String(k.length), ...k]],
    ['gcra-only', 1, (k) => ['EVALSHA', sha['gcra-only'], String(k.length), ...k]],
    ['function', 1, (k) => ['FCALL', 'rcchain', String(k.length), ...k]],
    ['shipped', 4, (k) => ['EVALSHA', sha.shipped, String(k.length), ...k]],
    ['gcra-only', 4, (k) => ['EVALSHA', sha['gcra-only'], String(k.length), ...k]],
    ['function', 4, (k) => ['FCALL', 'rcchain', String(k.length), ...k]],
  ];
  for (const [name, limits, cmd] of variants) {
    await admin.flushall();
    const keys = Array.from({ length: limits }, (_, j) => `lc${j}:__rand_int__`);
    const argv = [...cmd(keys), ...chainArgv(limits)];
    const c0 = await cpu();
    const x = spawnSync('redis-benchmark', ['-h', '127.0.0.1', '-p', String(r.port), '-c', '50', '-n', String(n), '-r', '10000', '-P', '16', '--csv', ...argv], {
      encoding: 'utf8',
      timeout: 120_000,
    });
    const c1 = await cpu();
    if (x.status !== 0 || x.stderr.includes('ERR')) throw new Error(`${name}: ${x.stderr}`);
    const rps = Number(x.stdout.trim().split('\n').pop().split('","')[1]);
    rows.push({ name, limits, rps, redisUs: ((c1 - c0) * 1e6) / n });
  }
  {
    await admin.flushall();
    const c0 = await cpu();
    const x = spawnSync('redis-benchmark', ['-h', '127.0.0.1', '-p', String(r.port), '-c', '50', '-n', String(n), '-r', '10000', '-P', '16', '--csv', 'EVALSHA', sha['gcra-min'], '1', 'lm:__rand_int__', '360000', String(360000 * 1e8)], {
      encoding: 'utf8',
      timeout: 120_000,
    });
    const c1 = await cpu();
    rows.push({ name: 'gcra-min', limits: 1, rps: Number(x.stdout.trim().split('\n').pop().split('","')[1]), redisUs: ((c1 - c0) * 1e6) / n });
  }
  console.log('| script | limits | calls/s (redis-benchmark -c 50 -P 16) | redis-server CPU us per call |');
  console.log('| --- | ---: | ---: | ---: |');
  for (const x of rows) console.log(`| ${x.name} | ${x.limits} | ${Math.round(x.rps).toLocaleString('en-US')} | ${x.redisUs.toFixed(1)} |`);
  console.log(`load average: ${(await import('node:os')).loadavg().map((v) => v.toFixed(2)).join(' ')}`);
} finally {
  admin.disconnect();
  await r.stop();
}
