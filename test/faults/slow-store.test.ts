/**
 * Recovery after a slow store (issue 25): the user's process of
 * docs/redis.md (default client options, 50 checks in flight, a chain of an
 * abuse limit failing `closed` and a shedding limit failing `degraded`)
 * talks to a real redis-server through the fault proxy, which adds 50 ms to
 * every chunk in each direction for 4 s (so every call misses the 20 ms
 * deadline, as it should), then forwards at full speed again.
 *
 * Bounds, stated (generous: the host is shared):
 * - the store decides again (at least 90% of a 100 ms slice, the issue's
 *   measure) within BACK_BOUND_MS of the fault's end (by design within
 *   maxCooldownMs, 500 ms, plus three probes' round trips: under 1 s; the
 *   bound leaves room for a loaded host, where a probe can itself miss its
 *   deadline and cost one more cool-down), and in the 2 s after
 *   that at most AFTER_LOCAL_SHARE of the checks are decided without it (on
 *   main: 61 to 68%; on a quiet host 0; on this shared host a stalled
 *   process here and there makes a few hundred checks miss the deadline);
 * - every check resolves within the deadline plus MARGIN_MS, plus the worst
 *   event-loop stall measured around it;
 * - during the fault the shedding limit is decided locally, never by
 *   nothing; the abuse limit locally, then fail-closed after its grace;
 * - a slow connection is not a dead one: nothing reconnects;
 * - the breaker's probes while it is open cost Redis at most
 *   PROBES_PER_S_BOUND script calls per second (counted by Redis itself);
 * - no unhandled rejection; sockets after recovery no more than before the
 *   fault, timers no more than one per check in flight (scenario.ts,
 *   timerBound).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { redisCli } from '../integration/redis/helpers/redis-server.js';
import { timerBound } from './scenario.js';
import { backFrom, between, sleep, startRig, storeShare, timeline, type NetworkRig } from './network-rig.js';

const LANES = 50;
const DEADLINE_MS = 20;
const MARGIN_MS = 250;
const GRACE_MS = 1000;
const FAULT_MS = 4000;
const LATENCY_MS = 50;
const BACK_BOUND_MS = 1500;
const AFTER_LOCAL_SHARE = 0.05;
/**
 * Steady phase before the fault, a precondition: the store decides at least this share. On a quiet host all of it; on
 * this shared host up to 6% of a steady second's checks have missed the 20 ms deadline.
 */
const STEADY_SHARE = 0.9;
/** One probe per cool-down: at most 1000 / 200 ms = 5 per second, whatever the cool-down grows to. */
const PROBES_PER_S_BOUND = 5;

let rig: NetworkRig | undefined;
afterEach(async () => {
  await rig?.stop();
  rig = undefined;
}, 30_000);

/** Script calls Redis has run, and the CPU time it spent in them (µs), from INFO commandstats. */
async function scriptCalls(port: number): Promise<{ calls: number; usec: number }> {
  const stats = await redisCli(port, 'INFO', 'commandstats');
  let calls = 0;
  let usec = 0;
  for (const m of stats.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+),usec=(\d+)/g)) {
    calls += Number(m[1]);
    usec += Number(m[2]);
  }
  return { calls, usec };
}

describe.each(['ioredis', 'node-redis'] as const)('a slow store, then a healthy one (%s, default options)', (flavour) => {
  it('is back deciding within 1 s of the fault’s end; fail modes hold meanwhile; probes are cheap', async () => {
    rig = await startRig({ flavour, lanes: LANES, graceMs: GRACE_MS });
    await rig.ready(20_000);
    await sleep(2000);
    const connectionsBefore = rig.accepts.length;
    const faultAt = Date.now();
    rig.proxy.latency({ ms: LATENCY_MS });
    // Let the breaker open, then count the script calls Redis runs while it is open.
    await sleep(1500);
    const callsAt = [Date.now(), await scriptCalls(rig.redis.port)] as const;
    await sleep(faultAt + FAULT_MS - 500 - Date.now());
    const callsEnd = [Date.now(), await scriptCalls(rig.redis.port)] as const;
    await sleep(faultAt + FAULT_MS - Date.now());
    rig.proxy.heal();
    const healAt = Date.now();
    await sleep(4000);
    const end = Date.now();
    const report = await rig.report(20_000);
    const { slices } = report;
    const view = `timeline (ms after the fault's end: store/checks): ${timeline(between(slices, faultAt - 300, end), healAt)}\nevents: ${JSON.stringify(report.events.map((e) => ({ ...e, t: Math.round(e.t - healAt) })))}`;

    expect(storeShare(between(slices, faultAt - 1500, faultAt - 100)), view).toBeGreaterThan(STEADY_SHARE);
    // During the fault (almost) nothing is decided by the store once the calls in flight have timed out: only a reply
    // that arrived while the event loop was stalled past the deadline timer still wins (by design, see withDeadline).
    expect(storeShare(between(slices, faultAt + 200, healAt - 100)), view).toBeLessThan(0.001);

    // Back within the bound after the fault's end, and staying there.
    const back = backFrom(slices, healAt, end - 2200);
    expect(back, `the store never decided again\n${view}`).toBeDefined();
    expect((back as number) + 100 - healAt, view).toBeLessThanOrEqual(BACK_BOUND_MS);
    const after = between(slices, (back as number) + 100, (back as number) + 2100);
    expect(1 - storeShare(after), view).toBeLessThanOrEqual(AFTER_LOCAL_SHARE);

    // Fail modes during the fault.
    const fault = between(slices, faultAt + 100, healAt);
    expect(fault.reduce((a, s) => a + s.shedLocal, 0), view).toBeGreaterThan(0);
    expect(slices.reduce((a, s) => a + s.shedNone, 0)).toBe(0);
    const closed = slices.filter((s) => s.failClosed > 0);
    expect(closed.length, `the abuse limit never failed closed\n${view}`).toBeGreaterThan(0);
    expect((closed[0] as { t: number }).t + 100 - faultAt, view).toBeGreaterThanOrEqual(GRACE_MS);

    // A slow connection is not a dead one.
    expect(rig.accepts.length, view).toBe(connectionsBefore);
    expect(report.events.filter((e) => e.type === 'dead-connection'), view).toEqual([]);

    // What the open breaker's probes cost Redis.
    const probesPerS = ((callsEnd[1].calls - callsAt[1].calls) * 1000) / (callsEnd[0] - callsAt[0]);
    const usecPerS = ((callsEnd[1].usec - callsAt[1].usec) * 1000) / (callsEnd[0] - callsAt[0]);
    expect(probesPerS, view).toBeLessThanOrEqual(PROBES_PER_S_BOUND);

    slices.forEach((s, i) => {
      const stall = Math.max(s.stallMs, slices[i - 1]?.stallMs ?? 0);
      // Each check's own time: its duration less the loop's stalls during its own life (a check can span slices whose stalls the neighbouring slice does not show).
      expect(Math.min(s.maxMs - stall, s.maxOwnMs), `slice at ${Math.round(s.t - healAt)} ms: slowest check ${s.maxMs.toFixed(1)} ms (${s.maxOwnMs.toFixed(1)} ms beyond the stalls in its life), loop stalled ${stall.toFixed(1)} ms`).toBeLessThan(DEADLINE_MS + MARGIN_MS);
    });
    expect(report.unhandledRejections).toEqual([]);
    expect(report.uncaughtExceptions).toEqual([]);
    const peak = (from: number, to: number, k: 'sockets' | 'timers'): number => Math.max(...report.resources.filter((r) => r.t >= from && r.t < to).map((r) => r[k]));
    const before = { sockets: peak(faultAt - 1500, faultAt, 'sockets'), timers: peak(faultAt - 1500, faultAt, 'timers') };
    const afterR = { sockets: peak(end - 1500, end, 'sockets'), timers: peak(end - 1500, end, 'timers') };
    expect(afterR.sockets, JSON.stringify({ before, afterR })).toBeLessThanOrEqual(before.sockets);
    expect(afterR.timers, JSON.stringify({ before, afterR })).toBeLessThanOrEqual(timerBound(before.timers, LANES));
    const slowest = Math.max(...slices.map((s) => s.maxMs));
    const flaps = report.events.filter((e) => e.type === 'breaker' && e.t > healAt && (e.detail as { from: string; to: string }).from === 'closed').length;
    console.log(`${flavour}: slowest check ${slowest.toFixed(1)} ms; breaker reopened ${flaps} times after closing; back ${Math.round((back as number) + 100 - healAt)} ms after the fault's end; probes ${probesPerS.toFixed(2)}/s while open, costing Redis ${usecPerS.toFixed(0)} µs/s; local share after ${(1 - storeShare(after)).toFixed(4)}`);
  }, 60_000);
});
