import { describe, expect, it } from 'vitest';
import { buildRuntime, parseConfig } from '../../../packages/ratecontract/src/config/index.js';
import { ManualClock } from '../../../packages/ratecontract/src/index.js';

const CONTRACT = `stores:
  shared: { type: redis, url: 'redis://127.0.0.1:1', deadline: 50ms }
  local: { type: memory, maxKeys: 10, overflowSlots: 4 }
replicas: discover
limits:
  - { name: per-ip, purpose: shedding, limit: 2, window: 1m, key: ip, store: shared, reason: r }
  - { name: local-ip, purpose: shedding, limit: 5, window: 1m, key: ip, store: local, reason: r }
routes:
  - { match: GET /a, limits: [per-ip, local-ip] }
`;

describe('buildRuntime({ memoryStores: true })', () => {
  it('makes every store a memory store, connects nothing, and decides on the virtual clock', async () => {
    const connected: string[] = [];
    const rt = await buildRuntime(parseConfig(CONTRACT, { file: 'mixed.yaml' }), {
      clock: new ManualClock(1_000_000),
      memoryStores: true,
      connectRedis: (url) => {
        connected.push(url);
        throw new Error('no connection expected');
      },
    });
    try {
      expect(connected).toEqual([]);
      expect(rt.stores.get('shared')?.kind).toBe('memory');
      // A memory store of the file keeps its bounds.
      expect(rt.stores.get('local')).toMatchObject({ kind: 'memory', maxKeys: 10, overflowSlots: 4 });
      const limiter = rt.route('GET', '/a')?.value.limiter;
      const verdicts: Array<boolean | undefined> = [];
      for (let i = 0; i < 3; i++) verdicts.push((await limiter?.check({ ip: '192.0.2.1' }))?.allowed);
      expect(verdicts).toEqual([true, true, false]);
    } finally {
      await rt.close();
    }
  });

  it('without the option, a Redis store is still connected', async () => {
    const connected: string[] = [];
    await expect(
      buildRuntime(parseConfig(CONTRACT, { file: 'mixed.yaml' }), {
        connectRedis: (url) => {
          connected.push(url);
          throw new Error('refused');
        },
      }),
    ).rejects.toThrow('refused');
    expect(connected).toEqual(['redis://127.0.0.1:1']);
  });
});
