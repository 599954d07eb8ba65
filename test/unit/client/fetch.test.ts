import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { getEventListeners } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { CLIENT_CHANNELS, createFetch, RateLimitedError, RetryBudgetExceededError, type ClientOptions, type WaitInfo } from '../../../packages/ratecontract/src/client/index.js';
import { asctime, Held, imf, rfc850, scriptedServer, sequence, Virtual, type Scripted, type ScriptedServer } from './helpers.js';

const servers: ScriptedServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function serve(script: (n: number) => Scripted): Promise<ScriptedServer> {
  const s = await scriptedServer(script);
  servers.push(s);
  return s;
}

/** A client on virtual time; `random` 0 unless given, so a server wait is taken exactly. */
function client(t: Virtual, extra: ClientOptions = {}): { fetch: ReturnType<typeof createFetch>; waits: WaitInfo[] } {
  const waits: WaitInfo[] = [];
  const f = createFetch({ sleep: t.sleep, clock: t.clock, random: () => 0, onWait: (w) => waits.push(w), ...extra });
  return { fetch: f, waits };
}

const OK: Scripted = { status: 200, body: 'ok' };

describe('Retry-After is a floor', () => {
  it('delay-seconds: waits that long, then returns the success', async () => {
    const s = await serve((n) => (n === 0 ? { status: 429, headers: { 'retry-after': '7' } } : OK));
    const t = new Virtual();
    const c = client(t);
    const res = await c.fetch(`${s.url}/a`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('ok');
    expect(s.hits).toHaveLength(2);
    expect(t.waits).toEqual([7000]);
    expect(c.waits.map((w) => [w.attempt, w.reason, w.response?.status])).toEqual([[2, 'retry-after', 429]]);
  });

  for (const [form, write] of [
    ['IMF-fixdate', imf],
    ['RFC 850', rfc850],
    ['asctime', asctime],
  ] as const) {
    it(`${form}: read against the response Date, with and without a skewed client clock`, async () => {
      for (const skew of [0, 3_600_000, -86_400_000]) {
        const t = new Virtual();
        const server = t.now + skew; // the server's clock
        const s = await serve((n) => (n === 0 ? { status: 503, headers: { 'retry-after': write(server + 12_000), date: imf(server) } } : OK));
        const c = client(t);
        expect((await c.fetch(s.url)).status).toBe(200);
        expect(t.waits, `skew ${skew}`).toEqual([12_000]);
      }
    });
  }

  it('a date without a Date header is read against the client clock', async () => {
    const t = new Virtual();
    // node:http always sends Date; an empty value removes it.
    const s = await serve((n) => (n === 0 ? { status: 429, headers: { 'retry-after': imf(t.now + 9000), date: '' } } : OK));
    const c = client(t);
    expect((await c.fetch(s.url)).status).toBe(200);
    expect(t.waits).toEqual([9000]);
  });

  it('a date in the past means retry now (plus at most the spread)', async () => {
    const t = new Virtual();
    const s = await serve((n) => (n === 0 ? { status: 429, headers: { 'retry-after': imf(t.now - 60_000), date: imf(t.now) } } : OK));
    const c = client(t, { random: () => 0.999 });
    expect((await c.fetch(s.url)).status).toBe(200);
    expect(t.waits).toHaveLength(1);
    expect(t.waits[0]).toBeLessThan(100); // the spread width at 0 is backoff.base (100 ms)
    expect(c.waits[0]?.reason).toBe('retry-after');
  });

  it('garbage is ignored: the wait is backoff', async () => {
    const s = await serve((n) => (n === 0 ? { status: 429, headers: { 'retry-after': 'in a while' } } : OK));
    const t = new Virtual();
    const c = client(t, { random: () => 0.5, backoff: { base: 1000 } });
    expect((await c.fetch(s.url)).status).toBe(200);
    expect(t.waits).toEqual([500]);
    expect(c.waits[0]?.reason).toBe('backoff');
  });

  it('jitter adds to a server wait and never subtracts from it', async () => {
    const s = await serve((n) => (n === 0 ? { status: 429, headers: { 'retry-after': '30' } } : OK));
    const t = new Virtual();
    const c = client(t, { random: () => 0.5 });
    await c.fetch(s.url);
    // 30 s plus half of a spread of 3 s (a tenth of the wait).
    expect(t.waits).toEqual([31_500]);
  });
});

describe('maxRetryAfter, maxWait, maxAttempts', () => {
  it('a Retry-After above maxRetryAfter gives up at once with the error, without waiting', async () => {
    const s = await serve(() => ({ status: 429, headers: { 'retry-after': '120', 'content-type': 'application/problem+json' }, body: '{"title":"slow down"}' }));
    const t = new Virtual();
    const c = client(t, { maxRetryAfter: '1m' });
    const error = await c.fetch(s.url).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitedError);
    const e = error as RateLimitedError;
    expect(e.code).toBe('RC_RATE_LIMITED');
    expect(e.reason).toBe('max-retry-after');
    expect(e.retryAfterMs).toBe(120_000);
    expect(e.attempts).toBe(1);
    expect(e.status).toBe(429);
    expect(await e.response?.json()).toEqual({ title: 'slow down' });
    expect(t.waits).toEqual([]);
    expect(s.hits).toHaveLength(1);
  });

  it('gives up after maxAttempts with the last response', async () => {
    const s = await serve(() => ({ status: 503, headers: { 'retry-after': '1' } }));
    const t = new Virtual();
    const c = client(t, { maxAttempts: 4 });
    const e = (await c.fetch(s.url).catch((x: unknown) => x)) as RateLimitedError;
    expect(e).toBeInstanceOf(RateLimitedError);
    expect(e.reason).toBe('attempts');
    expect(e.attempts).toBe(4);
    expect(e.retryAfterMs).toBe(1000);
    expect(s.hits).toHaveLength(4);
    expect(t.waits).toEqual([1000, 1000, 1000]);
  });

  it('gives up before a wait that would pass maxWait, instead of sleeping out the budget', async () => {
    const s = await serve(() => ({ status: 429, headers: { 'retry-after': '20' } }));
    const t = new Virtual();
    const c = client(t, { maxWait: '30s', maxAttempts: 10 });
    const e = (await c.fetch(s.url).catch((x: unknown) => x)) as RateLimitedError;
    expect(e.reason).toBe('max-wait');
    expect(t.waits).toEqual([20_000]);
    expect(s.hits).toHaveLength(2);
  });
});

describe('precedence', () => {
  it('Retry-After wins over RateLimit t', async () => {
    const s = await serve((n) =>
      n === 0 ? { status: 429, headers: { 'retry-after': '20', 'ratelimit-policy': '"dynamic";q=100;w=60', ratelimit: '"dynamic";r=0;t=40' } } : OK,
    );
    const t = new Virtual();
    const c = client(t);
    expect((await c.fetch(s.url)).status).toBe(200);
    expect(t.waits).toEqual([20_000]);
    expect(c.waits.map((w) => w.reason)).toEqual(['retry-after']);
  });

  it('without Retry-After, an exhausted RateLimit t is the floor', async () => {
    const s = await serve((n) => (n === 0 ? { status: 429, headers: { ratelimit: '"default";r=0;t=7' } } : OK));
    const t = new Virtual();
    const c = client(t);
    expect((await c.fetch(s.url)).status).toBe(200);
    expect(t.waits).toEqual([7000]);
    expect(c.waits.map((w) => w.reason)).toEqual(['ratelimit']);
  });

  it('without either, capped exponential backoff with full jitter', async () => {
    const s = await serve((n) => (n < 3 ? { status: 503 } : OK));
    const t = new Virtual();
    const c = client(t, { random: sequence(0.5, 0.5, 0.5), maxAttempts: 4, backoff: { base: 100, cap: 300 } });
    expect((await c.fetch(s.url)).status).toBe(200);
    // ceilings 100, 200, 300 (capped), half of each
    expect(t.waits).toEqual([50, 100, 150]);
  });
});

describe('pacing from RateLimit', () => {
  it('waits until t before sending when the quota is spent, instead of spending a request on a 429', async () => {
    const s = await serve(() => ({ status: 200, headers: { ratelimit: '"default";r=0;t=5', 'ratelimit-policy': '"default";q=10;w=5' }, body: 'ok' }));
    const t = new Virtual();
    const c = client(t);
    await c.fetch(s.url);
    expect(t.waits).toEqual([]);
    await c.fetch(s.url);
    expect(s.hits).toHaveLength(2);
    expect(t.waits).toEqual([5000]);
    expect(c.waits.map((w) => [w.attempt, w.reason, w.response])).toEqual([[1, 'ratelimit', undefined]]);
  });

  it('reads the draft-7 dictionary too', async () => {
    const s = await serve(() => ({ status: 200, headers: { ratelimit: 'limit=10, remaining=0, reset=3', 'ratelimit-policy': '10;w=3' } }));
    const t = new Virtual();
    const c = client(t);
    await c.fetch(s.url);
    await c.fetch(s.url);
    expect(t.waits).toEqual([3000]);
  });

  it('ignores the fields of a cached response (Age) and malformed fields', async () => {
    for (const headers of [
      { ratelimit: '"default";r=0;t=5', age: '30' },
      { ratelimit: '"default";r=-3;t=5' },
      { ratelimit: '"default";t=5' },
    ]) {
      const s = await serve(() => ({ status: 200, headers }));
      const t = new Virtual();
      const c = client(t);
      await c.fetch(s.url);
      await c.fetch(s.url);
      expect(t.waits, JSON.stringify(headers)).toEqual([]);
    }
  });

  it('counts what it sends against r: with r=2 left, the third request waits', async () => {
    let r = 3;
    const s = await serve(() => ({ status: 200, headers: { ratelimit: `"default";r=${Math.max(0, --r)};t=10` } }));
    const t = new Virtual();
    const c = client(t);
    await c.fetch(s.url); // learns r=2
    await c.fetch(s.url); // r=1
    await c.fetch(s.url); // r=0
    expect(t.waits).toEqual([]);
    await c.fetch(s.url);
    expect(t.waits).toEqual([10_000]);
  });

  it("'spread' pacing spaces requests at the safe rate min(r/t, q/w), not the naive r/t", async () => {
    // The draft's example: r/t says 1000 per second, q/w says 10 per second.
    const s = await serve(() => ({ status: 200, headers: { ratelimit: '"somepolicy";r=10000;t=10', 'ratelimit-policy': '"somepolicy";q=10000;w=1000' } }));
    const t = new Virtual();
    const c = client(t, { pacing: 'spread' });
    await c.fetch(s.url);
    await c.fetch(s.url);
    await c.fetch(s.url);
    expect(t.waits).toEqual([100, 100]);
  });

  it('a quota in bytes is not counted per request: only r=0 holds', async () => {
    for (const [qu, held] of [
      [';qu="content-bytes"', false],
      ['', true],
    ] as const) {
      const s = await serve(() => ({ status: 200, headers: { ratelimit: '"up";r=1;t=10', 'ratelimit-policy': `"up";q=1000;w=10${qu}` } }));
      const h = new Held();
      const c = createFetch({ sleep: h.sleep, clock: h.clock, random: () => 0 });
      await c(s.url); // r=1
      // Two at once: counted in requests, the second one waits for t.
      const both = Promise.all([c(s.url), c(s.url)]).then(() => 'sent' as const);
      const outcome = await Promise.race([both, h.next().then(() => 'held' as const)]);
      expect(outcome, qu).toBe(held ? 'held' : 'sent');
    }
  });

  it("'off' ignores the fields", async () => {
    const s = await serve(() => ({ status: 200, headers: { ratelimit: '"default";r=0;t=5' } }));
    const t = new Virtual();
    const c = client(t, { pacing: 'off' });
    await c.fetch(s.url);
    await c.fetch(s.url);
    expect(t.waits).toEqual([]);
  });

  it('a pacing wait above maxRetryAfter gives up at once', async () => {
    const s = await serve(() => ({ status: 200, headers: { ratelimit: '"day";r=0;t=36000' } }));
    const t = new Virtual();
    const c = client(t);
    await c.fetch(s.url);
    const e = (await c.fetch(s.url).catch((x: unknown) => x)) as RateLimitedError;
    expect(e).toBeInstanceOf(RateLimitedError);
    expect(e.reason).toBe('max-retry-after');
    expect(e.attempts).toBe(0);
    expect(e.response).toBeUndefined();
    expect(e.retryAfterMs).toBe(36_000_000);
    expect(s.hits).toHaveLength(1);
  });
});

describe('what is retried', () => {
  it('a POST is not retried: the 429 is handed back as fetch would', async () => {
    const s = await serve(() => ({ status: 429, headers: { 'retry-after': '1' } }));
    const t = new Virtual();
    const c = client(t);
    const res = await c.fetch(s.url, { method: 'POST', body: 'x' });
    expect(res.status).toBe(429);
    expect(s.hits).toHaveLength(1);
    expect(t.waits).toEqual([]);
  });

  it('a POST with an Idempotency-Key is retried, with the same body and key', async () => {
    const s = await serve((n) => (n === 0 ? { status: 429, headers: { 'retry-after': '1' } } : OK));
    const t = new Virtual();
    const c = client(t);
    const res = await c.fetch(s.url, { method: 'POST', body: JSON.stringify({ a: 1 }), headers: { 'idempotency-key': 'k-1', 'content-type': 'application/json' } });
    expect(res.status).toBe(200);
    expect(s.hits.map((h) => [h.method, h.body, h.headers['idempotency-key']])).toEqual([
      ['POST', '{"a":1}', 'k-1'],
      ['POST', '{"a":1}', 'k-1'],
    ]);
  });

  it('a Request object with a body is cloned for each attempt', async () => {
    const s = await serve((n) => (n < 2 ? { status: 503 } : OK));
    const t = new Virtual();
    const c = client(t);
    const res = await c.fetch(new Request(`${s.url}/put`, { method: 'PUT', body: 'payload' }));
    expect(res.status).toBe(200);
    expect(s.hits.map((h) => [h.method, h.url, h.body])).toEqual([
      ['PUT', '/put', 'payload'],
      ['PUT', '/put', 'payload'],
      ['PUT', '/put', 'payload'],
    ]);
  });

  it('a streamed body is sent once and never retried', async () => {
    const s = await serve(() => ({ status: 503, headers: { 'retry-after': '1' } }));
    const t = new Virtual();
    const c = client(t);
    const body = new ReadableStream<Uint8Array>({
      start(ctl) {
        ctl.enqueue(new TextEncoder().encode('streamed'));
        ctl.close();
      },
    });
    const res = await c.fetch(s.url, { method: 'PUT', body, duplex: 'half' });
    expect(res.status).toBe(503);
    expect(s.hits.map((h) => h.body)).toEqual(['streamed']);
  });

  it('a status outside retryOn is returned at once; retryOn adds statuses', async () => {
    const s = await serve((n) => (n === 0 ? { status: 502 } : OK));
    const t = new Virtual();
    expect((await client(t).fetch(s.url)).status).toBe(502);
    expect((await client(t, { retryOn: [502] }).fetch(s.url)).status).toBe(200);
  });

  it('a network error of an idempotent request is retried with backoff', async () => {
    const s = await serve((n) => (n === 0 ? { status: 0, destroy: true } : OK));
    const t = new Virtual();
    const c = client(t, { random: () => 0.5 });
    const res = await c.fetch(s.url);
    expect(res.status).toBe(200);
    expect(s.hits).toHaveLength(2);
    expect(c.waits.map((w) => [w.reason, w.waitMs])).toEqual([['backoff', 50]]);
  });

  it('a network error of a POST is not retried', async () => {
    const s = await serve(() => ({ status: 0, destroy: true }));
    const t = new Virtual();
    await expect(client(t).fetch(s.url, { method: 'POST', body: 'x' })).rejects.toThrow(TypeError);
    expect(s.hits).toHaveLength(1);
  });
});

describe('abort', () => {
  it('an abort during a wait rejects at once with the signal reason, even if sleep never returns', async () => {
    const s = await serve(() => ({ status: 429, headers: { 'retry-after': '30' } }));
    const controller = new AbortController();
    let slept = 0;
    const c = createFetch({
      sleep: () => {
        slept += 1;
        controller.abort(new Error('user gave up'));
        return new Promise<void>(() => {});
      },
    });
    await expect(c(s.url, { signal: controller.signal })).rejects.toThrow('user gave up');
    expect(slept).toBe(1);
    expect(s.hits).toHaveLength(1);
  });

  it('the client-wide signal aborts waits too, and an aborted signal is refused before sending', async () => {
    const s = await serve(() => ({ status: 429, headers: { 'retry-after': '30' } }));
    const shutdown = new AbortController();
    const c = createFetch({ signal: shutdown.signal, sleep: () => new Promise<void>(() => shutdown.abort(new Error('shutting down'))) });
    await expect(c(s.url)).rejects.toThrow('shutting down');
    await expect(c(s.url)).rejects.toThrow('shutting down');
    expect(s.hits).toHaveLength(1);
  });

  it('a long-lived client signal does not collect a listener per call', async () => {
    const s = await serve(() => OK);
    const shutdown = new AbortController();
    const c = createFetch({ signal: shutdown.signal });
    for (let i = 0; i < 50; i++) await (await c(s.url, { signal: new AbortController().signal })).text();
    expect(getEventListeners(shutdown.signal, 'abort').length).toBeLessThan(5);
  });

  it('with the default sleep, an abort ends a real 30 s wait', async () => {
    const s = await serve(() => ({ status: 429, headers: { 'retry-after': '30' } }));
    const controller = new AbortController();
    const c = createFetch({ onWait: () => setImmediate(() => controller.abort(new Error('stop'))) });
    await expect(c(s.url, { signal: controller.signal })).rejects.toThrow('stop');
  });
});

describe('budgets', () => {
  it('the retry budget caps retries across calls to one origin', async () => {
    const s = await serve(() => ({ status: 503, headers: { 'retry-after': '1' } }));
    const t = new Virtual();
    const c = client(t, { budget: { ratio: 0, minRetries: 2 }, maxAttempts: 5 });
    const e = (await c.fetch(s.url).catch((x: unknown) => x)) as RetryBudgetExceededError;
    expect(e).toBeInstanceOf(RetryBudgetExceededError);
    expect(e).toBeInstanceOf(RateLimitedError);
    expect(e.code).toBe('RC_RETRY_BUDGET_EXCEEDED');
    expect(e.reason).toBe('budget');
    expect(e.attempts).toBe(3);
    expect(e.response?.status).toBe(503);
    // The next call gets no retry at all.
    const e2 = (await c.fetch(s.url).catch((x: unknown) => x)) as RetryBudgetExceededError;
    expect(e2.reason).toBe('budget');
    expect(e2.attempts).toBe(1);
    expect(s.hits).toHaveLength(4);
  });

  it('the budget is earned back by first attempts: retries at most ratio x first attempts', async () => {
    // Each path fails once, then succeeds.
    const seen = new Set<string>();
    const s = await scriptedServer((_n, hit) => {
      if (seen.has(hit.url)) return OK;
      seen.add(hit.url);
      return { status: 503 };
    });
    servers.push(s);
    const t = new Virtual();
    const c = client(t, { budget: { ratio: 0.5, minRetries: 0 } });
    const refused: number[] = [];
    for (let i = 1; i <= 10; i++) {
      try {
        await c.fetch(`${s.url}/${i}`);
      } catch (e) {
        if (e instanceof RetryBudgetExceededError) refused.push(i);
        else throw e;
      }
    }
    // Call i may retry only while retries + 1 <= 0.5 * i: the odd calls are refused.
    expect(refused).toEqual([1, 3, 5, 7, 9]);
  });

  it('adaptive throttling refuses locally once the server rejects most requests', async () => {
    const s = await serve(() => ({ status: 503 }));
    const t = new Virtual();
    const c = client(t, { adaptiveThrottle: { k: 2 }, maxAttempts: 1, random: () => 0.5 });
    let local = 0;
    for (let i = 0; i < 20; i++) {
      const e = (await c.fetch(s.url).catch((x: unknown) => x)) as RateLimitedError;
      if (e instanceof RetryBudgetExceededError && e.reason === 'throttled') local += 1;
    }
    expect(local).toBeGreaterThan(0);
    expect(s.hits.length).toBe(20 - local);
  });
});

describe('events', () => {
  it('publishes waits and give-ups on diagnostics_channel', async () => {
    const s = await serve(() => ({ status: 429, headers: { 'retry-after': '2' } }));
    const t = new Virtual();
    const c = client(t, { maxAttempts: 2 });
    const waits: unknown[] = [];
    const giveUps: unknown[] = [];
    const onWait = (m: unknown): void => void waits.push(m);
    const onGiveUp = (m: unknown): void => void giveUps.push(m);
    subscribe(CLIENT_CHANNELS.wait, onWait);
    subscribe(CLIENT_CHANNELS.giveUp, onGiveUp);
    try {
      await expect(c.fetch(`${s.url}/e`)).rejects.toThrow(RateLimitedError);
    } finally {
      unsubscribe(CLIENT_CHANNELS.wait, onWait);
      unsubscribe(CLIENT_CHANNELS.giveUp, onGiveUp);
    }
    expect(waits).toEqual([{ url: `${s.url}/e`, method: 'GET', attempt: 2, waitMs: 2000, reason: 'retry-after', status: 429 }]);
    expect(giveUps).toHaveLength(1);
    expect((giveUps[0] as { error: RateLimitedError }).error.reason).toBe('attempts');
  });
});
