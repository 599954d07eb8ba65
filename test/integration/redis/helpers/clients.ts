/** Real clients for the test servers: ioredis and node-redis, standalone and Cluster. */
import { Cluster, Redis } from 'ioredis';
import { createClient, createCluster } from 'redis';
import type { RedisClientLike } from '../../../../packages/ratecontract/src/stores/redis/index.js';
import { startRedis, type RedisServer } from './redis-server.js';

export type Flavour = 'ioredis' | 'node-redis';

/** A connected client and how to close it. */
export interface TestClient {
  readonly flavour: Flavour;
  readonly client: RedisClientLike;
  close(): Promise<void>;
}

export async function connectStandalone(flavour: Flavour, port: number): Promise<TestClient> {
  if (flavour === 'ioredis') {
    const client = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 20 });
    await client.connect();
    return { flavour, client, close: async () => void (await client.quit()) };
  }
  const client = createClient({ url: `redis://127.0.0.1:${port}` });
  client.on('error', () => undefined);
  await client.connect();
  return { flavour, client, close: () => client.close() };
}

export async function connectCluster(flavour: Flavour, ports: readonly number[]): Promise<TestClient> {
  if (flavour === 'ioredis') {
    const client = new Cluster(
      ports.map((port) => ({ host: '127.0.0.1', port })),
      { lazyConnect: true },
    );
    await client.connect();
    return { flavour, client, close: async () => void (await client.quit()) };
  }
  const client = createCluster({ rootNodes: ports.map((port) => ({ url: `redis://127.0.0.1:${port}` })) });
  client.on('error', () => undefined);
  await client.connect();
  return { flavour, client, close: () => client.close() };
}

/**
 * Starts one standalone redis-server and an ioredis client for the current
 * test file (beforeAll), stopped in afterAll. Returns a getter for the client.
 */
export function useStandaloneIoredis(hooks: {
  beforeAll: (fn: () => Promise<void>, timeout?: number) => void;
  afterAll: (fn: () => Promise<void>, timeout?: number) => void;
}): () => TestClient {
  let server: RedisServer | undefined;
  let io: TestClient | undefined;
  hooks.beforeAll(async () => {
    server = await startRedis();
    io = await connectStandalone('ioredis', server.port);
  }, 30_000);
  hooks.afterAll(async () => {
    await io?.close();
    await server?.stop();
  }, 30_000);
  return () => {
    if (io === undefined) throw new Error('redis test server not started');
    return io;
  };
}
