/**
 * Partitions and packet loss (issue 25), made by `nft` rules in a network
 * namespace of the test's own (netns.ts): redis-server and the worker run
 * inside it and talk over its loopback; the rules drop packets to and from
 * Redis's port there and nowhere else, and the namespace is deleted after
 * each test, whatever happened. Needs root, `ip` and `nft`: without them the
 * file skips, saying why (Debian: apt-get install nftables).
 *
 * See scenario.ts for the load and every common bound.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { Netns, netnsExists, netnsSupport } from './netns.js';
import { startNetnsRig, type NetnsRig } from './network-rig.js';
import { assertCommon, assertFallsBack, assertRecovers, measure, runFault, summary, view, workerConfig } from './scenario.js';

const support = netnsSupport();
const RUN = support.ok;
if (!support.ok) console.warn(`partition and loss tests skipped: ${support.reason}`);

let rig: NetnsRig | undefined;
let ns: Netns | undefined;
const made: string[] = [];
afterEach(async () => {
  await rig?.stop();
  await ns?.remove();
  rig = undefined;
  ns = undefined;
}, 30_000);
afterAll(() => {
  // Every namespace a test made is gone, whether it passed or not.
  for (const name of made) expect(netnsExists(name), name).toBe(false);
});

function namespace(): Netns {
  ns = Netns.create();
  made.push(ns.name);
  return ns;
}

/**
 * Loss: real packet loss on the namespace's loopback, each packet to or from
 * Redis's port dropped with the given probability, both ways, ACKs
 * included; the kernel's TCP repairs it (fast retransmit when enough data
 * follows, else the RTO, 200 ms at least), so the client sees delay, never a
 * gap. Measured: the store still decides 98.5% (10%) and 99.8% (1%) of the
 * checks; a check whose reply waits for a retransmission misses its deadline
 * and gets its limit's fail mode.
 */
const LOSS_KEEPS_SHARE = 0.8;

describe.skipIf(!RUN)('packet loss (nft numgen in a namespace, ioredis default options)', () => {
  it.each([0.01, 0.1])('%s of packets dropped both ways for 4 s', async (share) => {
    const n = namespace();
    rig = await startNetnsRig(n, workerConfig({ lifetimeMs: 90_000 }));
    const r = rig;
    const { marks, report } = await runFault(r, () => n.loss([r.redis.port], share), 4000, 4000);
    const f = measure(report, marks);
    const v = view(report, marks);
    console.log(summary(`loss ${share}`, f));
    assertCommon(f, report, marks, v);
    expect(f.faultShare, v).toBeGreaterThanOrEqual(LOSS_KEEPS_SHARE);
    assertRecovers(f, v);
  }, 90_000);
});

/**
 * A partition: every packet to and from Redis's port dropped (no RST, no
 * ICMP), then healed. The breaker opens, each limit follows its fail mode,
 * the silent connection is taken for dead after 2 s and replaced, and
 * connects behind the partition go unanswered. After the heal:
 * - ioredis (default options and the fail-fast ones of docs/fail-modes.md):
 *   a new connection within RECONNECT_BOUND_MS and the store deciding within
 *   BACK_BOUND_MS of the heal. With default options that holds because the
 *   store abandons a connect still pending each time the silence is
 *   reported (every 2 s), so ioredis sends a fresh SYN rather than waiting
 *   out its 10 s connectTimeout behind the kernel's SYN backoff (before
 *   that: reconnected 2.2 to 2.3 s and back 2.9 to 3.0 s after the heal).
 * - node-redis (default options): its own connect loop decides when it
 *   tries again (SYN retransmissions 1 and 2 s apart within its 5 s
 *   connectTimeout, then a backoff of up to 2.2 s), so the bound is on the
 *   store deciding within BACK_BOUND_MS of the client's reconnect, and the
 *   reconnect within NODE_REDIS_RECONNECT_BOUND_MS of the heal.
 */
const RECONNECT_BOUND_MS = 1500;
const NODE_REDIS_RECONNECT_BOUND_MS = 4500;

const partitions = [
  { flavour: 'ioredis', clientOptions: 'default', ms: 30_000 },
  { flavour: 'ioredis', clientOptions: 'fail-fast', ms: 10_000 },
  { flavour: 'node-redis', clientOptions: 'default', ms: 10_000 },
] as const;

describe.skipIf(!RUN)('a partition: every packet dropped, no RST (nft in a namespace)', () => {
  it.each(partitions)('$ms ms, then healed ($flavour, $clientOptions options)', async ({ flavour, clientOptions, ms }) => {
    const n = namespace();
    rig = await startNetnsRig(n, workerConfig({ flavour, clientOptions, lifetimeMs: 110_000 }));
    const r = rig;
    const { marks, report } = await runFault(r, () => n.partition([r.redis.port]), ms, 6000);
    const ready = report.events.find((e) => e.type === 'client-ready' && e.t >= marks.faultAt);
    const f = measure(report, marks, flavour === 'node-redis' ? ready?.t : undefined);
    const v = view(report, marks);
    console.log(summary(`partition ${ms} ms (${flavour}, ${clientOptions})`, f));
    assertCommon(f, report, marks, v);
    assertFallsBack(f, v);
    expect(f.deadConnectionMs, v).toBeDefined();
    expect(f.reconnectAfterHealMs, `the client never reconnected\n${v}`).toBeDefined();
    // Not before the heal: nothing gets through a partition.
    expect(f.reconnectAfterHealMs as number, v).toBeGreaterThan(0);
    expect((f.reconnectAfterHealMs as number) - f.stallsToReconnect, v).toBeLessThan(flavour === 'node-redis' ? NODE_REDIS_RECONNECT_BOUND_MS : RECONNECT_BOUND_MS);
    assertRecovers(f, v);
  }, 110_000);
});
