/**
 * Added latency and a half-open connection (issue 25), made by the fault
 * proxy between the worker's ioredis client (`new Redis(url)`, the quick
 * start) and a real redis-server: 5, 50 and 500 ms added to every chunk in
 * each direction, steady and with jitter (uniform, plus or minus half the
 * latency), for FAULT_MS; and a connection whose server side stops
 * answering without a FIN (the proxy stops forwarding and keeps the socket
 * open). See scenario.ts for the load and every common bound.
 *
 * - 5 ms (and 5 +- 2.5 ms): a round trip of 10 to 15 ms fits the 20 ms
 *   deadline, so the store keeps deciding: at least KEEPS_SHARE of the
 *   fault's checks, the abuse limit never fails closed.
 * - 50 and 500 ms (steady and jittered): every call misses the deadline, so
 *   the breaker opens, each limit follows its fail mode, and the store decides
 *   again within BACK_BOUND_MS of the heal. A slow connection is not a dead
 *   one: nothing reconnects (late replies keep settling calls).
 * - half-open: the dead connection is detected and replaced within
 *   DETECT_BOUND_MS, and the store decides within BACK_BOUND_MS of the new
 *   connection.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startRig, type NetworkRig } from './network-rig.js';
import { assertCommon, assertFallsBack, assertRecovers, measure, runFault, summary, view, workerConfig } from './scenario.js';

const FAULT_MS = 4000;
const RECOVER_MS = 4000;
/** 5 ms added: of the fault's checks the store decides at least this share (on a quiet host all; the host's stalls cost some). */
const KEEPS_SHARE = 0.8;
/** The default `deadConnectionMs` (2000) + the client's reconnect, with room for a loaded host. */
const DETECT_BOUND_MS = 3500;

let rig: NetworkRig | undefined;
afterEach(async () => {
  await rig?.stop();
  rig = undefined;
}, 30_000);

const cases = [
  { ms: 5, jitter: 0 },
  { ms: 5, jitter: 2.5 },
  { ms: 50, jitter: 0 },
  { ms: 50, jitter: 25 },
  { ms: 500, jitter: 0 },
  { ms: 500, jitter: 250 },
] as const;

describe('added latency (fault proxy, ioredis default options, 50 checks in flight)', () => {
  it.each(cases)('$ms ms +- $jitter ms each way for 4 s', async ({ ms, jitter }) => {
    rig = await startRig(workerConfig());
    const r = rig;
    const connections = () => r.accepts.length;
    let before = 0;
    const { marks, report } = await runFault(
      r,
      () => {
        before = connections();
        r.proxy.latency({ ms, jitterMs: jitter });
        return () => r.proxy.heal();
      },
      FAULT_MS,
      RECOVER_MS,
    );
    const f = measure(report, marks);
    const v = view(report, marks);
    console.log(summary(`latency ${ms} +- ${jitter} ms`, f));
    assertCommon(f, report, marks, v);
    if (ms <= 5) {
      expect(f.faultShare, v).toBeGreaterThanOrEqual(KEEPS_SHARE);
      expect(f.failClosedMs, v).toBeUndefined();
    } else {
      assertFallsBack(f, v);
      assertRecovers(f, v);
      expect(f.faultShare, v).toBeLessThan(0.01);
    }
    // A slow connection is not a dead one.
    expect(connections(), v).toBe(before);
    expect(report.events.filter((e) => e.type === 'dead-connection'), v).toEqual([]);
  }, 60_000);
});

describe('a half-open connection (fault proxy stall, ioredis default options)', () => {
  it('is replaced; the store decides again; fail modes, bounds and resources hold', async () => {
    rig = await startRig(workerConfig());
    const r = rig;
    let before = 0;
    // The stall is never healed: the forgotten flow stays forgotten. "Heal" marks when the new connection is expected.
    const { marks, report } = await runFault(
      r,
      () => {
        before = r.accepts.length;
        expect(r.proxy.stall()).toBe(1);
        return () => undefined;
      },
      DETECT_BOUND_MS,
      4500,
    );
    const reconnectAt = r.accepts[before];
    expect(reconnectAt, `no new connection\n${view(report, marks)}`).toBeDefined();
    const f = measure(report, marks, reconnectAt);
    const v = view(report, marks, reconnectAt);
    console.log(summary('half-open', f) + `; new connection ${Math.round((reconnectAt as number) - marks.faultAt)} ms after the stall`);
    expect((reconnectAt as number) - marks.faultAt, v).toBeLessThan(DETECT_BOUND_MS);
    assertCommon(f, report, marks, v);
    assertFallsBack(f, v);
    assertRecovers(f, v);
  }, 60_000);
});
