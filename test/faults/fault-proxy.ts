/**
 * A fault-injecting TCP proxy for the fault tests (toxiproxy-style): it sits
 * between a Redis client and a redis-server the test started, on a free
 * loopback port, and forwards bytes both ways until told otherwise.
 *
 * Faults, each applied to every connection from the moment it is set:
 *
 * - `latency({ ms, jitterMs, direction })`: every chunk read from one side is
 *   written to the other `ms` later, plus or minus up to `jitterMs` (uniform).
 *   Bytes keep their order, as on a TCP connection: a chunk is never written
 *   before the one read ahead of it, so jitter delays, it never reorders.
 *   Chunks are pipelined (like propagation delay on a link), not serialised:
 *   50 chunks sent together arrive together, `ms` later.
 * - `loss({ share, rtoMs, direction })`: approximates packet loss. A byte
 *   stream cannot lose bytes (TCP retransmits them), so throwing chunks away
 *   would model nothing real: it would desynchronise the protocol, which TCP
 *   never does. What an application sees of loss is delay: a lost segment is
 *   sent again after the retransmission timeout, and every byte behind it
 *   waits (head-of-line blocking). So each chunk is "lost" with probability
 *   `share` and then delivered after `rtoMs` (default 200 ms, Linux's minimum
 *   RTO), and each retransmission is lost again with the same probability,
 *   doubling the wait (TCP's exponential backoff). What it does not model: loss
 *   per segment (a chunk here may be many segments, or a part of one), fast
 *   retransmit (after three duplicate ACKs a sender resends within about one
 *   round trip, not an RTO, when enough data follows the loss), tail loss
 *   probes, RTO computed from the measured RTT, lost ACKs, and the congestion
 *   window's halving after a loss (lower throughput for a while).
 * - `stall()`: the connections open now stop forwarding for good, in both
 *   directions, and keep their sockets open: no FIN, no RST, no error, reads
 *   paused (so the peers' writes fill the socket buffers, as with a path that
 *   stopped acknowledging). Connections opened later work normally. This is
 *   a flow a load balancer or NAT forgot, or a failover behind a virtual IP:
 *   the client's socket looks healthy and nothing it sends is ever answered.
 * - `resetPeers()`: every open connection is reset (RST to both peers).
 * - `heal()`: clears latency and loss. Stalled connections stay stalled (the
 *   forgotten flow does not come back); new ones are clean.
 *
 * `close()` destroys every socket and timer the proxy holds; every proxy
 * still open when the process exits is closed too. Tests close it in
 * `afterEach`/`finally`, so a failing test leaves nothing behind.
 */
import { createConnection, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

/** Which way a fault applies: `up` is client to server, `down` server to client. */
export type Direction = 'up' | 'down' | 'both';

interface Faults {
  latencyMs: number;
  jitterMs: number;
  lossShare: number;
  rtoMs: number;
}

const clean = (): Faults => ({ latencyMs: 0, jitterMs: 0, lossShare: 0, rtoMs: 200 });

/** One direction of one connection: chunks read from `from`, due at `at`, written in order to `to`. */
class Lane {
  readonly queue: Array<{ at: number; chunk: Buffer }> = [];
  /** When the last chunk queued is due: no later chunk may be written before it. */
  lastAt = 0;
  timer: NodeJS.Timeout | undefined;
  constructor(
    readonly from: Socket,
    readonly to: Socket,
    readonly faults: () => Faults,
    readonly random: () => number,
  ) {}

  push(chunk: Buffer): void {
    const f = this.faults();
    const now = performance.now();
    let delay = f.latencyMs;
    if (f.jitterMs > 0) delay += (this.random() * 2 - 1) * f.jitterMs;
    // Loss: each (re)transmission is lost with probability `lossShare`; each loss waits one RTO, doubling.
    for (let rto = f.rtoMs; f.lossShare > 0 && this.random() < f.lossShare && rto <= 60_000; rto *= 2) delay += rto;
    const at = Math.max(now + Math.max(0, delay), this.lastAt);
    this.lastAt = at;
    if (this.queue.length === 0 && at <= now) {
      this.to.write(chunk);
      return;
    }
    this.queue.push({ at, chunk });
    this.#arm();
  }

  #arm(): void {
    if (this.timer !== undefined || this.queue.length === 0) return;
    const head = this.queue[0] as { at: number };
    this.timer = setTimeout(() => {
      this.timer = undefined;
      const now = performance.now();
      while (this.queue.length > 0 && (this.queue[0] as { at: number }).at <= now + 0.5) {
        const { chunk } = this.queue.shift() as { chunk: Buffer };
        if (!this.to.destroyed) this.to.write(chunk);
      }
      this.#arm();
    }, Math.max(0, head.at - performance.now()));
  }

  stop(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.queue.length = 0;
  }
}

/** One proxied connection: the client's socket, ours to the server, and a lane each way. */
class Pair {
  stalled = false;
  readonly up: Lane;
  readonly down: Lane;
  constructor(
    readonly client: Socket,
    readonly server: Socket,
    up: () => Faults,
    down: () => Faults,
    random: () => number,
    onClose: (p: Pair) => void,
  ) {
    this.up = new Lane(client, server, up, random);
    this.down = new Lane(server, client, down, random);
    client.on('data', (c: Buffer) => this.stalled || this.up.push(c));
    server.on('data', (c: Buffer) => this.stalled || this.down.push(c));
    const end = (): void => {
      if (this.stalled) return;
      this.destroy();
      onClose(this);
    };
    // A peer that closes or fails closes the other side too (as a proxy does), unless the pair is stalled.
    client.on('close', end).on('error', () => undefined);
    server.on('close', end).on('error', () => undefined);
  }

  stall(): void {
    this.stalled = true;
    this.up.stop();
    this.down.stop();
    this.client.pause();
    this.server.pause();
  }

  reset(): void {
    this.up.stop();
    this.down.stop();
    this.client.resetAndDestroy();
    this.server.resetAndDestroy();
  }

  destroy(): void {
    this.up.stop();
    this.down.stop();
    this.client.destroy();
    this.server.destroy();
  }
}

/** Options of `startFaultProxy`. */
export interface FaultProxyOptions {
  /** The server's port on 127.0.0.1. */
  readonly targetPort: number;
  /** Seed of the proxy's random numbers (jitter, loss), so a run can be repeated. Default 1. */
  readonly seed?: number | undefined;
}

const open = new Set<FaultProxy>();
process.on('exit', () => {
  for (const p of open) p.destroyAll();
});

/** mulberry32: a small seeded generator, so that a faulty run is reproducible from its seed. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export class FaultProxy {
  readonly #server: Server;
  readonly #targetPort: number;
  readonly #pairs = new Set<Pair>();
  readonly #random: () => number;
  #up: Faults = clean();
  #down: Faults = clean();
  /** Connections accepted since the proxy started. */
  accepted = 0;

  private constructor(server: Server, targetPort: number, seed: number) {
    this.#server = server;
    this.#targetPort = targetPort;
    this.#random = seeded(seed);
    server.on('connection', (client) => this.#accept(client));
  }

  static async start(options: FaultProxyOptions): Promise<FaultProxy> {
    const server = createServer();
    const proxy = new FaultProxy(server, options.targetPort, options.seed ?? 1);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    open.add(proxy);
    return proxy;
  }

  get port(): number {
    return (this.#server.address() as AddressInfo).port;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Connections open now (stalled ones included). */
  get connections(): number {
    return this.#pairs.size;
  }

  /** Stalled connections open now. */
  get stalled(): number {
    let n = 0;
    for (const p of this.#pairs) if (p.stalled) n++;
    return n;
  }

  #accept(client: Socket): void {
    this.accepted++;
    client.setNoDelay(true);
    const server = createConnection({ host: '127.0.0.1', port: this.#targetPort });
    server.setNoDelay(true);
    const pair = new Pair(
      client,
      server,
      () => this.#up,
      () => this.#down,
      this.#random,
      (p) => this.#pairs.delete(p),
    );
    this.#pairs.add(pair);
  }

  #set(direction: Direction, change: Partial<Faults>): void {
    if (direction !== 'down') this.#up = { ...this.#up, ...change };
    if (direction !== 'up') this.#down = { ...this.#down, ...change };
  }

  /** Adds `ms` (plus or minus up to `jitterMs`) to every chunk in `direction` (default both). */
  latency(options: { readonly ms: number; readonly jitterMs?: number | undefined; readonly direction?: Direction | undefined }): void {
    if (!(options.ms >= 0) || !((options.jitterMs ?? 0) >= 0)) throw new RangeError('latency: ms and jitterMs must be >= 0');
    this.#set(options.direction ?? 'both', { latencyMs: options.ms, jitterMs: options.jitterMs ?? 0 });
  }

  /** Loses each chunk in `direction` with probability `share`, delivering it after `rtoMs` per loss, doubling (see the file's header). */
  loss(options: { readonly share: number; readonly rtoMs?: number | undefined; readonly direction?: Direction | undefined }): void {
    if (!(options.share >= 0 && options.share < 1)) throw new RangeError('loss: share must be in [0, 1)');
    this.#set(options.direction ?? 'both', { lossShare: options.share, rtoMs: options.rtoMs ?? 200 });
  }

  /** Stops forwarding on every connection open now, keeping its sockets open (no FIN, no RST); returns how many. */
  stall(): number {
    let n = 0;
    for (const p of this.#pairs) {
      if (p.stalled) continue;
      p.stall();
      n++;
    }
    return n;
  }

  /** Resets (RST) every open connection, stalled ones included. */
  resetPeers(): void {
    for (const p of this.#pairs) p.reset();
    this.#pairs.clear();
  }

  /** Clears latency and loss; stalled connections stay stalled. */
  heal(): void {
    this.#up = clean();
    this.#down = clean();
  }

  /** Destroys every connection at once (used on exit). */
  destroyAll(): void {
    for (const p of this.#pairs) p.destroy();
    this.#pairs.clear();
  }

  /** Stops listening and destroys every connection and timer. */
  async close(): Promise<void> {
    if (!open.delete(this)) return;
    this.destroyAll();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

/** Starts a proxy to `targetPort` on a free loopback port. */
export function startFaultProxy(options: FaultProxyOptions): Promise<FaultProxy> {
  return FaultProxy.start(options);
}
