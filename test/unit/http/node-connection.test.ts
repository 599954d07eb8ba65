import { Agent, createServer, get, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { peerAddress } from '../../../packages/ratecontract/src/http/node-connection.js';

/** A stand-in with a counting `remoteAddress` getter (what a node socket exposes). */
function countingSocket(values: Array<string | undefined>): { socket: Socket; reads: () => number } {
  let reads = 0;
  const socket = {
    get remoteAddress(): string | undefined {
      return values[Math.min(reads++, values.length - 1)];
    },
  } as unknown as Socket;
  return { socket, reads: () => reads };
}

describe('peerAddress', () => {
  it('reads the getter once per socket and returns the same address after', () => {
    const { socket, reads } = countingSocket(['203.0.113.7', '198.51.100.1']);
    expect(peerAddress(socket)).toBe('203.0.113.7');
    expect(peerAddress(socket)).toBe('203.0.113.7');
    expect(peerAddress(socket)).toBe('203.0.113.7');
    expect(reads()).toBe(1);
  });

  it('does not remember a missing address (a closed socket), so a later read tries again', () => {
    const { socket, reads } = countingSocket([undefined, '::1']);
    expect(peerAddress(socket)).toBeUndefined();
    expect(peerAddress(socket)).toBe('::1');
    expect(peerAddress(socket)).toBe('::1');
    expect(reads()).toBe(2);
  });

  it('keeps each socket to its own address', () => {
    const a = countingSocket(['10.0.0.1']);
    const b = countingSocket(['10.0.0.2']);
    expect([peerAddress(a.socket), peerAddress(b.socket), peerAddress(a.socket)]).toEqual(['10.0.0.1', '10.0.0.2', '10.0.0.1']);
  });

  it('answers from a frozen socket-like object, reading the getter each time', () => {
    const { socket, reads } = countingSocket(['192.0.2.9']);
    Object.freeze(socket);
    expect(peerAddress(socket)).toBe('192.0.2.9');
    expect(peerAddress(socket)).toBe('192.0.2.9');
    expect(reads()).toBe(2);
  });

  describe('on a real keep-alive connection', () => {
    const seen: Array<{ address: string | undefined; port: number | undefined }> = [];
    let server: Server;
    let url: string;
    beforeAll(async () => {
      server = createServer((req, res) => {
        seen.push({ address: peerAddress(req.socket), port: req.socket.remotePort });
        res.end('ok');
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    });
    afterAll(async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    });

    it('gives every request on the connection the socket address', async () => {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      try {
        for (let i = 0; i < 3; i++) {
          await new Promise<void>((resolve, reject) => {
            get(url, { agent }, (res) => {
              res.resume();
              res.on('end', resolve);
            }).on('error', reject);
          });
        }
      } finally {
        agent.destroy();
      }
      expect(seen).toHaveLength(3);
      expect(new Set(seen.map((s) => s.port)).size).toBe(1); // one connection
      for (const s of seen) expect(s.address).toBe('127.0.0.1');
    });
  });
});
