/**
 * The store guard under overload: a failure-rate breaker, probes that close
 * it only when the store keeps up (at least every 500 ms by default), a
 * bound on calls in flight, a readiness gate before the first deadline,
 * fallbacks that never starve the event loop, and a silently dead
 * connection handed to the store to replace. The store here is a real memory store behind a switch; time is a
 * manual clock except where a real timer is the behaviour.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { BREAKER_DEFAULTS, DEFAULT_DEAD_CONNECTION_MS } from '../../../packages/ratecontract/src/core/store-circuit.js';
import { CHANNELS, createLimiter, ManualClock, memoryStore, type BreakerOptions, type Store, type StoreOp, type StoreOpResult } from '../../../packages/ratecontract/src/index.js';

const T0 = 1_700_000_000_000;
const LIMITS = [{ name: 'shed', purpose: 'shedding' as const, algorithm: 'gcra' as const, limit: 1_000_000, window: '1h' as const, key: 'principal' as const }];

/** A memory store that can be told to hang or fail, one call at a time or from now on. */
class Switch implements Store {
  readonly kind = 'switch';
  readonly inner = memoryStore();
  mode: 'ok' | 'hang' | 'fail' = 'ok';
  /** Answers, in order, for the next calls; `mode` applies when it is empty. */
  script: Array<'ok' | 'fail'> = [];
  calls = 0;
  readonly hung: Array<() => void> = [];
  ready?: () => Promise<void>;
  deadConnectionMs?: number | false;
  /** Calls to reconnect(); what it answers. */
  reconnects = 0;
  reconnectAnswer = true;
  reconnect?: () => boolean = () => {
    this.reconnects++;
    return this.reconnectAnswer;
  };
  constructor(
    readonly deadlineMs = 20,
    readonly breaker: BreakerOptions = {},
    readonly maxInFlight?: number,
    readonly startupWaitMs?: number,
  ) {}
  evaluate(ops: readonly StoreOp[], now: number): Promise<readonly StoreOpResult[]> {
    this.calls++;
    const mode = this.script.shift() ?? this.mode;
    if (mode === 'hang') return new Promise((resolve) => this.hung.push(() => resolve(this.inner.evaluate(ops, now))));
    if (mode === 'fail') return Promise.reject(new Error('LOADING Redis is loading the dataset in memory'));
    return this.inner.evaluate(ops, now);
  }
  refund(ops: readonly StoreOp[], now: number): Promise<void> {
    return this.inner.refund(ops, now);
  }
  release(op: StoreOp, now: number): Promise<void> {
    return this.inner.release(op, now);
  }
}

const subscriptions: Array<[string, (m: unknown) => void]> = [];
function listen<T>(name: string): T[] {
  const seen: T[] = [];
  const fn = (m: unknown): void => void seen.push(m as T);
  subscribe(name, fn);
  subscriptions.push([name, fn]);
  return seen;
}
afterEach(() => {
  for (const [name, fn] of subscriptions.splice(0)) unsubscribe(name, fn);
});

describe('the breaker opens on a failure rate, not only on consecutive failures', () => {
  it('alternating failures and successes (a drowning store whose late successes reset any run) open it', async () => {
    const clock = new ManualClock(T0);
    const store = new Switch(20, { minimumCalls: 20, failureRate: 0.5, windowMs: 1000 });
    const limiter = createLimiter({ clock, defaultStore: store, limits: LIMITS });
    const transitions = listen<{ to: string; failureRate: number }>(CHANNELS.breaker);
    // Two failures, one success, over and over: never 3 in a row, but a 67% failure rate.
    for (let i = 0; i < 30 && limiter.breakerStates()['(default)'] === 'closed'; i++) {
      store.script = ['fail', 'fail', 'ok'];
      for (let j = 0; j < 3; j++) await limiter.check({ principal: `k${j}` });
      clock.advance(10);
    }
    expect(limiter.breakerStates()['(default)']).toBe('open');
    expect(transitions[0]?.to).toBe('open');
    expect(transitions[0]?.failureRate).toBeGreaterThanOrEqual(0.5);
    const health = limiter.storeHealth()['(default)'];
    expect(health?.state).toBe('open');
    expect(health?.failureRate).toBeGreaterThanOrEqual(0.5);
  });

  it('under heavy traffic a few failures in a healthy stream do not open it', async () => {
    const clock = new ManualClock(T0);
    const store = new Switch();
    const limiter = createLimiter({ clock, defaultStore: store, limits: LIMITS });
    const errors = listen(CHANNELS.storeError);
    for (let i = 0; i < 400; i++) {
      // 5 failures in a row once the window is full of successes: 5 / 400 is far below the rate.
      if (i === 300) store.script = ['fail', 'fail', 'fail', 'fail', 'fail'];
      await limiter.check({ principal: `k${i}` });
      clock.advance(1);
    }
    // The five failures did reach the limiter (more than failureThreshold in a row), and every check called the store.
    expect([errors.length, store.calls]).toEqual([5, 400]);
    expect(limiter.breakerStates()['(default)']).toBe('closed');
  });

  it('under light traffic, consecutive failures open it', async () => {
    const clock = new ManualClock(T0);
    const store = new Switch(20, { failureThreshold: 3 });
    store.mode = 'fail';
    const limiter = createLimiter({ clock, defaultStore: store, limits: LIMITS });
    for (let i = 0; i < 3; i++) {
      await limiter.check({ principal: 'a' });
      clock.advance(2000);
    }
    expect(limiter.breakerStates()['(default)']).toBe('open');
  });

  it('a failed probe doubles the cool-down, up to maxCooldownMs; closing resets it', async () => {
    const clock = new ManualClock(T0);
    const store = new Switch(20, { cooldownMs: 100, maxCooldownMs: 300, probeSuccesses: 1 });
    store.mode = 'fail';
    const limiter = createLimiter({ clock, defaultStore: store, limits: LIMITS });
    for (let i = 0; i < 3; i++) await limiter.check({ principal: 'a' });
    expect(limiter.breakerStates()['(default)']).toBe('open');
    const probeAfter = async (ms: number): Promise<number> => {
      const before = store.calls;
      clock.advance(ms - 1);
      await limiter.check({ principal: 'a' });
      expect(store.calls).toBe(before);
      clock.advance(1);
      await limiter.check({ principal: 'a' });
      return store.calls - before;
    };
    expect(await probeAfter(100)).toBe(1); // fails: next cool-down 200
    expect(await probeAfter(200)).toBe(1); // fails: 400, capped at 300
    expect(await probeAfter(300)).toBe(1);
    store.mode = 'ok';
    expect(await probeAfter(300)).toBe(1);
    expect(limiter.breakerStates()['(default)']).toBe('closed');
    store.mode = 'fail';
    for (let i = 0; i < 3; i++) await limiter.check({ principal: 'a' });
    expect(await probeAfter(100)).toBe(1); // back to the base cool-down
  });

  it('by default the cool-down grows from 200 ms to at most 500 ms, so a recovered store is probed within 500 ms', async () => {
    const clock = new ManualClock(T0);
    const store = new Switch();
    store.mode = 'fail';
    const limiter = createLimiter({ clock, defaultStore: store, limits: LIMITS });
    for (let i = 0; i < 3; i++) await limiter.check({ principal: 'a' });
    const gaps: number[] = [];
    // Each failed probe: how long until the next one goes to the store, in 10 ms steps.
    for (let probe = 0; probe < 6; probe++) {
      const before = store.calls;
      let waited = 0;
      while (store.calls === before && waited < 10_000) {
        clock.advance(10);
        waited += 10;
        await limiter.check({ principal: 'a' });
      }
      gaps.push(waited);
    }
    expect(gaps).toEqual([200, 400, 500, 500, 500, 500]);
  });

  it('half-open lets one probe through at a time and closes only after probeSuccesses good ones', async () => {
    const clock = new ManualClock(T0);
    const store = new Switch(50, { cooldownMs: 100 });
    store.mode = 'fail';
    const limiter = createLimiter({ clock, defaultStore: store, limits: LIMITS });
    for (let i = 0; i < 3; i++) await limiter.check({ principal: 'a' });
    clock.advance(100);
    store.mode = 'hang';
    const before = store.calls;
    const probe = limiter.check({ principal: 'a' });
    // While the probe is out, every other check is decided locally without calling the store.
    const others = await Promise.all(Array.from({ length: 20 }, (_, i) => limiter.check({ principal: `o${i}` })));
    expect(store.calls).toBe(before + 1);
    expect(others.every((d) => d.outcome === 'degraded')).toBe(true);
    store.hung.splice(0).forEach((answer) => answer());
    expect((await probe).outcome).toBe('allowed');
    expect(limiter.breakerStates()['(default)']).toBe('half-open');
    store.mode = 'ok';
    await limiter.check({ principal: 'a' });
    await limiter.check({ principal: 'a' });
    expect(limiter.breakerStates()['(default)']).toBe('closed');
  });

  it('refuses unknown and invalid breaker options, naming them', () => {
    const make = (breaker: BreakerOptions): unknown => createLimiter({ defaultStore: new Switch(20, breaker), limits: LIMITS });
    expect(() => make({ failureRat: 0.5 } as unknown as BreakerOptions)).toThrow(/stores\.\(default\)\.breaker\.failureRat: unknown option/);
    expect(() => make({ failureRate: 1.5 })).toThrow(/breaker\.failureRate: must be in \(0, 1\]/);
    expect(() => make({ probeSuccesses: 0 })).toThrow(/breaker\.probeSuccesses: must be a positive integer/);
  });
});

describe('calls in flight are bounded per store', () => {
  it('a check beyond maxInFlight is decided by its fail mode at once, without calling the store', async () => {
    const store = new Switch(5_000, {}, 4);
    store.mode = 'hang';
    const limiter = createLimiter({ clock: new ManualClock(T0), defaultStore: store, limits: LIMITS });
    const errors = listen<{ reason: string; store: string }>(CHANNELS.storeError);
    const waiting = Array.from({ length: 4 }, (_, i) => limiter.check({ principal: `w${i}` }));
    expect(limiter.storeHealth()['(default)']?.inFlight).toBe(4);
    const shed = await limiter.check({ principal: 'x' });
    expect(shed.outcome).toBe('degraded');
    expect(store.calls).toBe(4);
    expect(errors.map((e) => e.reason)).toEqual(['busy']);
    store.hung.splice(0).forEach((answer) => answer());
    expect((await Promise.all(waiting)).map((d) => d.outcome)).toEqual(['allowed', 'allowed', 'allowed', 'allowed']);
    expect(limiter.storeHealth()['(default)']?.inFlight).toBe(0);
    // Being full is our own protection, not a store failure: the breaker stays closed.
    expect(limiter.breakerStates()['(default)']).toBe('closed');
  });
});

describe('fallback decisions never starve the event loop', () => {
  it('a closed loop of checks on a store with an open breaker still lets timers and I/O run', async () => {
    const store = new Switch();
    store.mode = 'fail';
    const limiter = createLimiter({ defaultStore: store, limits: LIMITS });
    let fired = false;
    setTimeout(() => (fired = true), 0);
    let checks = 0;
    while (!fired && checks < 100_000) {
      await limiter.check({ principal: 'a' });
      checks++;
    }
    expect(fired).toBe(true);
    expect(checks).toBeLessThan(100_000);
  });
});

describe('a store becomes ready before its first deadline starts', () => {
  it('checks made before ready() resolves wait for it and are decided by the store, not timed out', async () => {
    const store = new Switch(20);
    let ready!: () => void;
    store.ready = () => new Promise<void>((resolve) => (ready = resolve));
    const timeouts = listen(CHANNELS.timeout);
    const limiter = createLimiter({ defaultStore: store, limits: LIMITS });
    const early = Array.from({ length: 10 }, (_, i) => limiter.check({ principal: `e${i}` }));
    expect(limiter.storeHealth()['(default)']?.ready).toBe(false);
    // Longer than the 20 ms deadline: the wait for readiness is not a store failure.
    await new Promise((r) => setTimeout(r, 60));
    ready();
    const decisions = await Promise.all(early);
    expect(decisions.map((d) => d.results[0]?.source)).toEqual(Array(10).fill('store'));
    expect(timeouts).toHaveLength(0);
    expect(limiter.storeHealth()['(default)']?.ready).toBe(true);
  });

  it('a store that never becomes ready gives each check its fail mode after startupWaitMs', async () => {
    const store = new Switch(20, {}, undefined, 100);
    store.ready = () => new Promise<void>(() => undefined);
    store.mode = 'fail';
    const started = performance.now();
    const limiter = createLimiter({ defaultStore: store, limits: LIMITS });
    const d = await limiter.check({ principal: 'a' });
    expect(d.outcome).toBe('degraded');
    // The wait is the behaviour: at least the startup wait (timers may fire up to 1 ms early).
    expect(performance.now() - started).toBeGreaterThanOrEqual(99);
  });
});

describe('a silently dead connection is replaced', () => {
  const silent = async (limiter: ReturnType<typeof createLimiter>, clock: ManualClock, ms: number, every = 50): Promise<void> => {
    for (let t = 0; t < ms; t += every) {
      clock.advance(every);
      await limiter.check({ principal: `s${t}` });
    }
  };

  it('calls outstanding for deadConnectionMs with not one reply: reconnect() once per period, and an event', async () => {
    const clock = new ManualClock(T0);
    const store = new Switch();
    store.deadConnectionMs = 1000;
    store.mode = 'hang';
    const events = listen<{ store: string; kind: string; silentMs: number; outstanding: number; reconnected: boolean }>(CHANNELS.deadConnection);
    const limiter = createLimiter({ clock, defaultStore: store, limits: LIMITS });
    await silent(limiter, clock, 950);
    expect(store.reconnects).toBe(0);
    await silent(limiter, clock, 100);
    expect(store.reconnects).toBe(1);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ store: '(default)', kind: 'switch', reconnected: true });
    expect(events[0]?.silentMs).toBeGreaterThanOrEqual(1000);
    expect(events[0]?.outstanding).toBeGreaterThan(0);
    // The open breaker probes the new connection after the base cool-down (200 ms), not the grown one.
    expect(limiter.breakerStates()['(default)']).toBe('open');
    store.mode = 'ok';
    const calls = store.calls;
    clock.advance(199);
    await limiter.check({ principal: 'early' });
    expect(store.calls).toBe(calls);
    clock.advance(1);
    await limiter.check({ principal: 'probe' });
    expect(store.calls).toBe(calls + 1);
    store.mode = 'hang';
    // Silent again from the next look after that answer: once more per period, not on every check.
    await silent(limiter, clock, 2100);
    expect(store.reconnects).toBe(3);
    // Replies come back (late ones too): the silence is over.
    store.hung.splice(0).forEach((answer) => answer());
    store.mode = 'ok';
    await silent(limiter, clock, 3000);
    expect(store.reconnects).toBe(3);
  });

  it('with failure domains, one silent domain among answering ones: reconnect(node) for it alone, an event naming it', async () => {
    const clock = new ManualClock(T0);
    // Two domains by the key's first letter: keys a* live on A, which hangs; b* on B, which answers.
    class Domains extends Switch {
      readonly nodesReconnected: Array<string | undefined> = [];
      readonly domains = (ops: readonly StoreOp[]): readonly string[] => [...new Set(ops.map((o) => (o.key.startsWith('a') ? 'A' : 'B')))];
      override reconnect = (node?: string): boolean => {
        this.nodesReconnected.push(node);
        return true;
      };
      override evaluate(ops: readonly StoreOp[], now: number): Promise<readonly StoreOpResult[]> {
        this.mode = ops.some((o) => o.key.startsWith('a')) ? 'hang' : 'ok';
        return super.evaluate(ops, now);
      }
    }
    const store = new Domains();
    store.deadConnectionMs = 1000;
    const events = listen<{ node: string | undefined; reconnected: boolean }>(CHANNELS.deadConnection);
    const limiter = createLimiter({ clock, defaultStore: store, limits: LIMITS });
    for (let t = 0; t < 1100; t += 50) {
      clock.advance(50);
      // B answers all along: the store as a whole is never silent.
      expect((await limiter.check({ principal: `b${t}` })).results[0]?.source).toBe('store');
      await limiter.check({ principal: `a${t}` });
    }
    expect(store.nodesReconnected).toEqual(['A']);
    expect(events).toMatchObject([{ node: 'A', reconnected: true }]);
  });

  it('a slow store whose late replies keep coming is not silent', async () => {
    const clock = new ManualClock(T0);
    const store = new Switch();
    store.deadConnectionMs = 1000;
    store.mode = 'hang';
    const limiter = createLimiter({ clock, defaultStore: store, limits: LIMITS });
    for (let t = 0; t < 10_000; t += 50) {
      clock.advance(50);
      // Every reply arrives, each long after its deadline.
      store.hung.shift()?.();
      await limiter.check({ principal: `s${t}` });
    }
    expect(store.reconnects).toBe(0);
  });

  it('deadConnectionMs: false never reports; a store without reconnect() is still reported; a throwing one does not fail the check', async () => {
    const clock = new ManualClock(T0);
    const off = new Switch();
    off.deadConnectionMs = false;
    off.mode = 'hang';
    await silent(createLimiter({ clock, defaultStore: off, limits: LIMITS }), clock, 5000);
    expect(off.reconnects).toBe(0);

    const events = listen<{ reconnected: boolean }>(CHANNELS.deadConnection);
    const plain = new Switch();
    delete plain.reconnect;
    plain.mode = 'hang';
    await silent(createLimiter({ clock, defaultStore: plain, limits: LIMITS }), clock, 2100);
    expect(events.map((e) => e.reconnected)).toEqual([false]);

    const throwing = new Switch();
    throwing.mode = 'hang';
    throwing.reconnect = () => {
      throw new Error('boom');
    };
    const limiter = createLimiter({ clock, defaultStore: throwing, limits: LIMITS });
    await silent(limiter, clock, 2100);
    const d = await limiter.check({ principal: 'after' });
    expect(d.outcome).toBe('degraded');
    expect(events.map((e) => e.reconnected)).toEqual([false, false]);
  });

  it('refuses an invalid deadConnectionMs, naming it', () => {
    for (const bad of [0, -1, Number.NaN, Infinity, '1s']) {
      const store = new Switch();
      store.deadConnectionMs = bad as number;
      expect(() => createLimiter({ defaultStore: store, limits: LIMITS })).toThrow(/stores\.\(default\)\.deadConnectionMs: must be a positive number of ms or false/);
    }
  });
});

describe('documented defaults', () => {
  it('docs/fail-modes.md states the cool-downs the code applies; docs/redis.md the dead-connection period', () => {
    const cell = (file: string, option: string): string => {
      const doc = readFileSync(new URL(`../../../docs/${file}`, import.meta.url), 'utf8');
      const line = doc.split('\n').find((l) => l.startsWith(`| \`${option}\` |`));
      if (line === undefined) throw new Error(`docs/${file} has no table row for ${option}`);
      return (line.split('|')[2] as string).trim();
    };
    expect(cell('fail-modes.md', 'cooldownMs')).toBe(String(BREAKER_DEFAULTS.cooldownMs));
    expect(cell('fail-modes.md', 'maxCooldownMs')).toBe(String(BREAKER_DEFAULTS.maxCooldownMs));
    expect(cell('redis.md', 'deadConnectionMs')).toBe(String(DEFAULT_DEAD_CONNECTION_MS));
  });
});
