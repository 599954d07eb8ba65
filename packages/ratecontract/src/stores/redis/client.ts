import { ConfigError } from '../../core/errors.js';
import type { LuaScript } from './scripts.generated.js';

/**
 * The slice of an ioredis client (`new Redis()` or `new Cluster()`) the store
 * uses. Structural, so the package imports nothing from ioredis.
 */
export interface IoredisLike {
  evalsha(sha: string, numKeys: number, ...keysAndArgs: string[]): Promise<unknown>;
  eval(script: string, numKeys: number, ...keysAndArgs: string[]): Promise<unknown>;
  readonly isCluster?: boolean;
  readonly options?: unknown;
}

/**
 * The slice of a node-redis v4/v5 client (`createClient()` or
 * `createCluster()`) the store uses. Structural, so the package imports
 * nothing from redis.
 */
export interface NodeRedisLike {
  evalSha(sha: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
}

/** Any supported client: ioredis `Redis` / `Cluster`, node-redis `createClient()` / `createCluster()`. */
export type RedisClientLike = IoredisLike | NodeRedisLike;

/** What the store needs from a client: run a script, and know whether it talks to a Cluster. */
export interface ScriptRunner {
  /** `'ioredis'` or `'node-redis'`. */
  readonly flavour: 'ioredis' | 'node-redis';
  /** Whether keys must be grouped by hash slot. */
  readonly cluster: boolean;
  /** A prefix the client itself adds to every key (ioredis `keyPrefix`), which decides slots too. */
  readonly clientKeyPrefix: string;
  /**
   * Runs `script` by EVALSHA; on NOSCRIPT (a restarted, flushed or
   * failed-over server) loads it once with SCRIPT LOAD, shared by every call
   * that met NOSCRIPT meanwhile, and runs EVALSHA again.
   */
  run(script: LuaScript, keys: string[], args: string[]): Promise<unknown>;
  /** SCRIPT LOAD of `scripts` on the server, or on every master of a Cluster. Rejects while a Cluster knows no master yet. */
  preload(scripts: readonly LuaScript[]): Promise<void>;
  /**
   * Calls `listener` once when the client next reports it is ready (both
   * clients emit `'ready'`), and returns a function that removes it. A no-op
   * for a client that is not an event emitter.
   */
  onceReady(listener: () => void): () => void;
  /** Calls `listener` once when the client has ended for good (`'end'`); returns a function that removes it. */
  onceEnded(listener: () => void): () => void;
  /**
   * Replaces the client's connection, taken for silently dead, the way the
   * client itself would after TCP reported the loss: ioredis
   * `disconnect(true)` (reconnect), with the old socket destroyed at once
   * rather than after `disconnectTimeout` waiting for a FIN that cannot
   * come; node-redis (which has no reconnect call) `destroy()` and then
   * `connect()`. Only for a standalone client that reports itself ready
   * (ioredis `status === 'ready'`, node-redis `isReady`): one that is not is
   * already reconnecting; except that an ioredis connect still pending is
   * abandoned, so that it is tried again at once rather than after the
   * kernel's next SYN retransmission. Returns whether it did; never throws.
   */
  reconnect(): boolean;
  /**
   * A Cluster: replaces the connection to one master (`'host:port'`, as
   * `nodeOf` names it), whose calls fell silent while the other masters
   * answered. ioredis: that node's connection is closed at once (its socket
   * destroyed, a pending connect abandoned); the Cluster client drops a node
   * it lost (its default `clusterNodeRetryStrategy` is none), sends the
   * slot's next command to another master, follows the MOVED, and connects
   * to the master anew. node-redis: not done (false). Returns whether it
   * did; never throws.
   */
  reconnectNode(node: string): boolean;
  /**
   * A Cluster: the master that serves `slot` as the client knows it now
   * (`'host:port'`; ioredis `slots[slot][0]`, node-redis
   * `slots[slot].master.address`), or undefined when the client does not
   * know yet. Always undefined on a standalone client.
   */
  nodeOf(slot: number): string | undefined;
}

/** ioredis Cluster: `slots[slot]` lists the node keys serving it, the master first. */
function ioredisNodeOf(c: object): (slot: number) => string | undefined {
  return (slot) => {
    const slots = (c as { slots?: unknown }).slots;
    if (!Array.isArray(slots)) return undefined;
    const nodes: unknown = slots[slot];
    const master: unknown = Array.isArray(nodes) ? nodes[0] : undefined;
    return typeof master === 'string' ? master : undefined;
  };
}

/** node-redis cluster: `slots[slot].master.address`. */
function nodeRedisNodeOf(c: object): (slot: number) => string | undefined {
  return (slot) => {
    const slots = (c as { slots?: unknown }).slots;
    if (!Array.isArray(slots)) return undefined;
    const shard = slots[slot] as { master?: { address?: unknown } } | undefined;
    const address = shard?.master?.address;
    return typeof address === 'string' ? address : undefined;
  };
}

const noNode = (): undefined => undefined;

type Loader = (text: string) => Promise<unknown>;

function method(o: unknown, name: string): ((...args: unknown[]) => unknown) | undefined {
  if (o === null || typeof o !== 'object') return undefined;
  const f = (o as Record<string, unknown>)[name];
  return typeof f === 'function' ? (f as (...args: unknown[]) => unknown).bind(o) : undefined;
}

/** ioredis: `script('LOAD', text)` on the client, or on each of `nodes('master')` of a Cluster. */
function ioredisLoaders(c: IoredisLike, cluster: boolean): Loader[] {
  const nodes = cluster ? method(c, 'nodes') : undefined;
  const targets: unknown[] = nodes === undefined ? [c] : (nodes('master') as unknown[]);
  if (targets.length === 0) throw new Error('redis store: the cluster knows no master yet');
  return targets.map((t) => {
    const script = method(t, 'script');
    if (script === undefined) throw new Error('redis store: this ioredis client has no script()');
    return (text: string) => script('LOAD', text) as Promise<unknown>;
  });
}

/** node-redis: `scriptLoad(text)` on the client, or on `nodeClient(master)` for each of a cluster's `masters`. */
async function nodeRedisLoaders(c: NodeRedisLike, cluster: boolean): Promise<Loader[]> {
  const nodeClient = method(c, 'nodeClient');
  const masters = (c as { masters?: unknown }).masters;
  const targets: unknown[] = cluster && nodeClient !== undefined && Array.isArray(masters) ? await Promise.all(masters.map((m) => nodeClient(m))) : [c];
  if (targets.length === 0) throw new Error('redis store: the cluster knows no master yet');
  return targets.map((t) => {
    const scriptLoad = method(t, 'scriptLoad');
    if (scriptLoad === undefined) throw new Error('redis store: this node-redis client has no scriptLoad()');
    return (text: string) => scriptLoad(text) as Promise<unknown>;
  });
}

async function loadAll(loaders: readonly Loader[], scripts: readonly LuaScript[]): Promise<void> {
  await Promise.all(loaders.flatMap((load) => scripts.map((s) => load(s.text))));
}

/** `once(event, listener)` on an event-emitting client, skipping emissions while `skip()` is true; returns the remover. */
function once(client: object, event: string, listener: () => void, skip: () => boolean = () => false): () => void {
  const on = method(client, 'on');
  const off = method(client, 'removeListener') ?? method(client, 'off');
  if (on === undefined) return () => undefined;
  const heard = (): void => {
    if (skip()) return;
    off?.(event, heard);
    listener();
  };
  on(event, heard);
  return () => void off?.(event, heard);
}

const ignore = (): undefined => undefined;


/** Runs `f`, swallowing what it throws or rejects with (a reconnect must never fail a check). */
function quietly(f: () => unknown): boolean {
  try {
    const r = f();
    if (r instanceof Promise) r.catch(ignore);
    return true;
  } catch {
    return false;
  }
}

/**
 * ioredis: `disconnect(true)`, and the old socket destroyed at once. A
 * connect still pending (status `connecting`, its socket not connected:
 * behind a partition its SYNs go unanswered) is abandoned by destroying its
 * socket, and ioredis tries again by its retryStrategy: otherwise it waits
 * out `connectTimeout` (10 s by default) while the kernel spaces its SYN
 * retransmissions 1, 2 and 4 s apart, and reconnects up to 4 s after the
 * network heals.
 */
function reconnectIoredis(c: object): boolean {
  const status = (c as { status?: unknown }).status;
  if (status === 'connecting') {
    const stream = (c as { stream?: { connecting?: unknown } }).stream;
    const destroy = stream?.connecting === true ? method(stream, 'destroy') : undefined;
    return destroy !== undefined && quietly(() => destroy());
  }
  if (status !== 'ready') return false;
  const disconnect = method(c, 'disconnect');
  if (disconnect === undefined) return false;
  const stream = (c as { stream?: unknown }).stream;
  if (!quietly(() => disconnect(true))) return false;
  // disconnect() ends the socket and waits up to disconnectTimeout (2 s) for the peer's FIN, which a dead flow never sends.
  const destroy = method(stream, 'destroy');
  if (destroy !== undefined) quietly(() => destroy());
  return true;
}

/**
 * ioredis Cluster: the master `node`'s own connection (`cluster.nodes('master')`,
 * found by `host:port`), closed at once: a ready one by `disconnect(true)`
 * with its socket destroyed, a pending connect by destroying its socket.
 * With the Cluster's default `clusterNodeRetryStrategy` (none) the node
 * ends and leaves the pool, and the slot's next command finds it again
 * through a MOVED on a new connection; with a strategy of the user's, it
 * reconnects by it.
 */
function reconnectIoredisNode(c: object, node: string): boolean {
  const nodes = method(c, 'nodes');
  if (nodes === undefined) return false;
  let masters: unknown;
  if (!quietly(() => void (masters = nodes('master')))) return false;
  if (!Array.isArray(masters)) return false;
  for (const r of masters as unknown[]) {
    const o = (r as { options?: { host?: unknown; port?: unknown } } | undefined)?.options;
    if (o === undefined || `${String(o.host)}:${String(o.port)}` !== node) continue;
    const status = (r as { status?: unknown }).status;
    if (status === 'ready') return reconnectIoredis(r as object);
    if (status === 'connecting' || status === 'connect') {
      const stream = (r as { stream?: unknown }).stream;
      const destroy = method(stream, 'destroy');
      return destroy !== undefined && quietly(() => destroy());
    }
    return false;
  }
  return false;
}

/** node-redis: no reconnect call, so `destroy()` (v5; `disconnect()` in v4) and `connect()` again. */
function reconnectNodeRedis(c: object, ending: { self: boolean }): boolean {
  if ((c as { isReady?: unknown }).isReady !== true) return false;
  const destroy = method(c, 'destroy') ?? method(c, 'disconnect');
  const connect = method(c, 'connect');
  if (destroy === undefined || connect === undefined) return false;
  ending.self = true;
  try {
    if (!quietly(() => destroy())) return false;
  } finally {
    ending.self = false;
  }
  return quietly(() => connect());
}

/**
 * Runs a script by EVALSHA. On NOSCRIPT (a restarted, flushed or failed-over
 * server) every call that meets it waits on one shared SCRIPT LOAD of that
 * script and runs EVALSHA again, so a flush under load costs one load, not a
 * full script text per call; if the load itself fails, the call falls back
 * to EVAL.
 */
function scriptRunner(
  evalsha: (script: LuaScript, keys: string[], args: string[]) => Promise<unknown>,
  evalText: (script: LuaScript, keys: string[], args: string[]) => Promise<unknown>,
  preload: (scripts: readonly LuaScript[]) => Promise<void>,
): (script: LuaScript, keys: string[], args: string[]) => Promise<unknown> {
  const loading = new Map<string, Promise<void>>();
  return async (script, keys, args) => {
    try {
      return await evalsha(script, keys, args);
    } catch (error) {
      if (!isNoScript(error)) throw error;
    }
    let load = loading.get(script.sha1);
    if (load === undefined) {
      load = preload([script]).finally(() => loading.delete(script.sha1));
      loading.set(script.sha1, load);
    }
    try {
      await load;
    } catch {
      return await evalText(script, keys, args);
    }
    try {
      return await evalsha(script, keys, args);
    } catch (error) {
      if (!isNoScript(error)) throw error;
      return await evalText(script, keys, args);
    }
  };
}

function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}

function readKeyPrefix(options: unknown): string {
  if (options === null || typeof options !== 'object') return '';
  const o = options as { keyPrefix?: unknown; redisOptions?: { keyPrefix?: unknown } };
  if (typeof o.keyPrefix === 'string') return o.keyPrefix;
  if (typeof o.redisOptions?.keyPrefix === 'string') return o.redisOptions.keyPrefix;
  return '';
}

function hasMethod(o: object, name: string): boolean {
  return typeof (o as Record<string, unknown>)[name] === 'function';
}

/**
 * Wraps the user's client. Detection: ioredis has `evalsha` (and `isCluster`
 * on both `Redis` and `Cluster`); node-redis has `evalSha`, and its cluster
 * has `getSlotRandomNode` / `getSlotMaster`. `cluster` overrides the detection.
 */
export function adaptClient(client: unknown, cluster: boolean | undefined): ScriptRunner {
  if (client === null || typeof client !== 'object') {
    throw new ConfigError('RC_INVALID_OPTION', 'redisStore.client', 'expected an ioredis or node-redis client (Redis, Cluster, createClient() or createCluster())');
  }
  if (hasMethod(client, 'evalsha') && hasMethod(client, 'eval')) {
    const c = client as IoredisLike;
    const isCluster = cluster ?? c.isCluster === true;
    const preload = async (scripts: readonly LuaScript[]): Promise<void> => loadAll(ioredisLoaders(c, isCluster), scripts);
    return {
      flavour: 'ioredis',
      cluster: isCluster,
      clientKeyPrefix: readKeyPrefix(c.options),
      run: scriptRunner(
        (script, keys, args) => c.evalsha(script.sha1, keys.length, ...keys, ...args),
        (script, keys, args) => c.eval(script.text, keys.length, ...keys, ...args),
        preload,
      ),
      preload,
      onceReady: (listener) => once(c, 'ready', listener),
      onceEnded: (listener) => once(c, 'end', listener),
      reconnect: () => !isCluster && reconnectIoredis(c),
      reconnectNode: (node) => isCluster && reconnectIoredisNode(c, node),
      nodeOf: isCluster ? ioredisNodeOf(c) : noNode,
    };
  }
  if (hasMethod(client, 'evalSha') && hasMethod(client, 'eval')) {
    const c = client as NodeRedisLike;
    const isCluster = cluster ?? (hasMethod(client, 'getSlotRandomNode') || hasMethod(client, 'getSlotMaster'));
    const preload = async (scripts: readonly LuaScript[]): Promise<void> => loadAll(await nodeRedisLoaders(c, isCluster), scripts);
    // The 'end' that our own destroy() emits before connect() is not the client ending.
    const ending = { self: false };
    return {
      flavour: 'node-redis',
      cluster: isCluster,
      clientKeyPrefix: '',
      run: scriptRunner(
        (script, keys, args) => c.evalSha(script.sha1, { keys, arguments: args }),
        (script, keys, args) => c.eval(script.text, { keys, arguments: args }),
        preload,
      ),
      preload,
      onceReady: (listener) => once(c, 'ready', listener),
      onceEnded: (listener) => once(c, 'end', listener, () => ending.self),
      reconnect: () => !isCluster && reconnectNodeRedis(c, ending),
      reconnectNode: () => false,
      nodeOf: isCluster ? nodeRedisNodeOf(c) : noNode,
    };
  }
  throw new ConfigError('RC_INVALID_OPTION', 'redisStore.client', 'expected an ioredis or node-redis client: it has neither evalsha (ioredis) nor evalSha (node-redis)');
}
