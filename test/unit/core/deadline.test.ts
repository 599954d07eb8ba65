/**
 * The store deadline measures the store, not this process's event loop.
 * `withDeadline` must not declare a timeout while the reply it waits for is
 * already in the socket, unread because the loop was busy. A cold start of
 * four processes on one core showed it: the deadline timer fired at +28 ms,
 * the loop stayed busy until +58 ms, the reply was read at +60 ms, after the
 * timeout had been declared, and the check fell back although the store had
 * answered.
 *
 * Real sockets on loopback and real stalls: a server in a worker thread
 * writes on its own clock while this thread is busy.
 */
import { connect, type Socket } from 'node:net';
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { StoreTimeoutError, withDeadline } from '../../../packages/ratecontract/src/core/store-circuit.js';

/** A long task: the event loop cannot turn for `ms`. */
function busy(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // spin
  }
}

/** The worker: a loopback server; on `{ delays }`, writes one byte to connection i (as the client named it) after delays[i] ms. */
const SERVER = `
const { parentPort } = require('node:worker_threads');
const net = require('node:net');
const conns = [];
const server = net.createServer((s) => s.once('data', (d) => { conns[Number(d.toString())] = s; if (conns.filter(Boolean).length === 2) parentPort.postMessage('connected'); }));
server.listen(0, '127.0.0.1', () => parentPort.postMessage(server.address().port));
parentPort.on('message', (m) => {
  m.delays.forEach((d, i) => setTimeout(() => conns[i].write('x'), d));
});
`;

interface Rig {
  /** Connection 0: the store's reply. Connection 1: some other I/O of the process. */
  readonly sockets: readonly [Socket, Socket];
  /** Asks the worker to write to connection i after delays[i] ms of its own clock. */
  send(delays: readonly [number, number]): void;
  close(): Promise<void>;
}

async function rig(): Promise<Rig> {
  const worker = new Worker(SERVER, { eval: true });
  const port = await new Promise<number>((resolve) => worker.once('message', resolve));
  const connected = new Promise<void>((resolve) => worker.once('message', () => resolve()));
  const sockets = [0, 1].map((i) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => s.write(String(i)));
    return s;
  }) as [Socket, Socket];
  await connected;
  return {
    sockets,
    send: (delays) => worker.postMessage({ delays }),
    close: async () => {
      for (const s of sockets) s.destroy();
      await worker.terminate();
    },
  };
}

describe('withDeadline: the store deadline', () => {
  let cleanup: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of cleanup) await c();
    cleanup = [];
  });

  it('rejects with StoreTimeoutError when no reply comes', async () => {
    const started = performance.now();
    await expect(withDeadline(new Promise<never>(() => undefined), 15)).rejects.toBeInstanceOf(StoreTimeoutError);
    expect(performance.now() - started).toBeGreaterThanOrEqual(14);
  });

  it('resolves with a reply that comes in time, and passes on the store error', async () => {
    await expect(withDeadline(new Promise((r) => setTimeout(() => r('ok'), 5)), 50)).resolves.toBe('ok');
    await expect(withDeadline(Promise.reject(new Error('READONLY')), 50)).rejects.toThrow('READONLY');
  });

  it('a reply that arrived while the loop was stalled before the timer fired still wins', async () => {
    const r = await rig();
    cleanup.push(() => r.close());
    const reply = new Promise<string>((resolve) => r.sockets[0].once('data', (d) => resolve(d.toString())));
    r.send([10, 10_000]);
    const decided = withDeadline(reply, 20);
    busy(150); // the reply arrives at +10, the deadline passes at +20, the loop turns at +150
    await expect(decided).resolves.toBe('x');
  });

  it('a reply that arrived while another I/O callback ran, after the timer fired, still wins', async () => {
    const r = await rig();
    cleanup.push(() => r.close());
    const reply = new Promise<string>((resolve) => r.sockets[0].once('data', (d) => resolve(d.toString())));
    // Other I/O of the process: its callback is a long task (as a burst of other replies and their decisions, or a
    // preemption by the scheduler, can be).
    r.sockets[1].once('data', () => busy(300));
    // The other I/O arrives at +10 and the reply at +200 (worker's clock). This thread is busy until +150: when its
    // loop turns, the deadline timer (+20) fires first, then the poll phase runs the other callback (+150 to +450),
    // during which the reply arrives, unread until the next poll phase. (Wide margins: the worker thread may be late.)
    r.send([200, 10]);
    const decided = withDeadline(reply, 20);
    busy(150);
    await expect(decided).resolves.toBe('x');
  });
});
