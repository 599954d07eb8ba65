// The library on Redis, for bench/soak.js: docs/redis.md's quick start (ioredis `new Redis(url)`, redisStore,
// createLimiter) checking RATE checks a second, spread over 1,000 principals, until killed. Prints `ready`
// once the store decides, then a count line every 10 s on stderr.
//   node --expose-gc --import bench/soak-probe.mjs bench/soak-library.js <redis url> <rate>
import { Redis } from 'ioredis';
import { createLimiter } from '../packages/ratecontract/dist/index.js';
import { redisStore } from '../packages/ratecontract/dist/stores/redis/index.js';

const [url, rateArg] = process.argv.slice(2);
const RATE = Number(rateArg ?? 500);
const client = new Redis(url);
client.on('error', () => undefined);
const limiter = createLimiter({
  defaultStore: redisStore({ client, prefix: 'soak:' }),
  limits: [
    { name: 'login', purpose: 'abuse', algorithm: 'gcra', limit: 100, window: '1m', key: 'principal' },
    { name: 'api', purpose: 'shedding', algorithm: 'sliding-window', limit: 1_000_000, window: '1m', key: 'global' },
  ],
});
let i = 0;
let inFlight = 0;
const counts = { store: 0, other: 0 };
let announced = false;
// Every 10 ms, RATE / 100 checks (at most 500 in flight: a stalled store does not pile them up).
setInterval(() => {
  for (let n = 0; n < RATE / 100 && inFlight < 500; n++) {
    inFlight++;
    void limiter.check({ principal: `p${i++ % 1000}` }).then((d) => {
      inFlight--;
      if (d.results.every((r) => r.source === 'store')) counts.store++;
      else counts.other++;
      if (!announced && counts.store > 100) {
        announced = true;
        process.stdout.write('ready\n');
      }
    });
  }
}, 10);
setInterval(() => process.stderr.write(`${JSON.stringify(counts)}\n`), 10_000).unref();
