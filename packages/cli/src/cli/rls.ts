import { ConfigError, memoryStore, type Store } from 'ratecontract';
import { plural } from '../contract/plural.js';
import { redisStore, type RedisClientLike } from 'ratecontract/redis';
import { loadRlsConfig, type RlsConfig } from '../rls/config.js';
import { rulesTable } from '../rls/rules-table.js';
import { startRls } from '../rls/server.js';
import { errorText, holdSignals, logConnectionError, LogThrottle, redactUrl, serverLogger, waitForStores } from '../host/index.js';
import { ArgumentError, durationOption, flagOption, integerOption, stringOption, type Command, type CommandIo, type ParsedArgs } from './args.js';
import { LOG_LEVEL_OPTION, logLevelOption } from './log-level.js';

/** Default ports of envoyproxy/ratelimit: gRPC 8081, HTTP 8080. */
export const DEFAULT_GRPC_PORT = 8081;
export const DEFAULT_HTTP_PORT = 8080;
/** Default Redis call deadline: well inside Envoy's 20 ms timeout for the whole call. */
export const DEFAULT_RLS_DEADLINE = '8ms';

export const rlsCommand: Command = {
  name: 'rls',
  summary: "an Envoy global rate limit service (envoy.service.ratelimit.v3) on envoyproxy/ratelimit's config files",
  options: {
    config: { type: 'string', value: 'FILE|DIR', description: 'a config file, or a directory of *.yaml files (one domain each)', default: './config' },
    'grpc-port': { type: 'string', value: 'N', description: 'port of ShouldRateLimit and grpc.health.v1; 0 takes a free port', default: String(DEFAULT_GRPC_PORT) },
    'http-port': { type: 'string', value: 'N', description: 'port of POST /json and GET /healthcheck; 0 takes a free port', default: String(DEFAULT_HTTP_PORT) },
    'admin-port': { type: 'string', value: 'N', description: 'port of /metrics, /contract, /healthz, /readyz and the live page; 0 takes a free port', default: 'none' },
    host: { type: 'string', value: 'H', description: 'address to listen on', default: '127.0.0.1' },
    redis: { type: 'string', value: 'URL', description: 'keep the counters on this Redis (redis:// or rediss://); default: this process' },
    'redis-deadline': { type: 'string', value: 'D', description: 'deadline of one Redis call; past it each rule answers by its onError', default: DEFAULT_RLS_DEADLINE },
    'response-headers': { type: 'boolean', description: 'add RateLimit-Policy, RateLimit and Retry-After to response_headers_to_add' },
    'no-watch': { type: 'boolean', description: 'do not reload when the config changes on disk (SIGHUP still reloads)' },
    'ready-timeout': { type: 'string', value: 'D', description: 'how long startup waits for Redis before listening anyway', default: '5s' },
    'drain-timeout': { type: 'string', value: 'D', description: 'how long SIGTERM waits for calls in flight', default: '5s' },
    'log-level': LOG_LEVEL_OPTION,
  },
  details: [
    "Reads envoyproxy/ratelimit's YAML files unchanged (domain, descriptors, rate_limit, shadow_mode,",
    'detailed_metric, replaces, wildcards), with optional clauses on each rate_limit: algorithm, burst,',
    'purpose, onError, acknowledgeFailOpen, reason, store (see docs/rls.md).',
    '',
    'Logs are JSON lines on stdout (pino): startup (with the bound ports), the store, reloads and',
    'refused configs. stderr has the rules and the lines "grpc HOST:PORT", "listening http://HOST:PORT"',
    'and "admin http://HOST:PORT".',
    '',
    'Signals: SIGTERM and SIGINT report NOT_SERVING, drain, close the store and exit 0. SIGHUP reloads.',
    '',
    'Examples:',
    '  ratecontract rls --config ./config',
    '  ratecontract rls --config ./config --redis redis://127.0.0.1:6379 --grpc-port 0 --http-port 0 --admin-port 0',
  ].join('\n'),
  run: runRls,
};

interface IoredisModule {
  readonly default: new (url: string, options?: Record<string, unknown>) => RedisClientLike & { quit(): Promise<unknown>; on(event: 'error', l: (e: unknown) => void): unknown };
}

async function runRls(args: ParsedArgs, io: CommandIo): Promise<number> {
  const signals = holdSignals();
  const configPath = stringOption(args, 'config') ?? './config';
  const grpcPort = integerOption(args, 'grpc-port', DEFAULT_GRPC_PORT, 0, 65535);
  const httpPort = integerOption(args, 'http-port', DEFAULT_HTTP_PORT, 0, 65535);
  const adminRaw = stringOption(args, 'admin-port');
  const adminPort = adminRaw === undefined ? undefined : integerOption(args, 'admin-port', 0, 0, 65535);
  const host = stringOption(args, 'host') ?? '127.0.0.1';
  const deadlineMs = durationOption(args, 'redis-deadline', DEFAULT_RLS_DEADLINE);
  const readyTimeoutMs = durationOption(args, 'ready-timeout', '5s');
  const drainTimeoutMs = durationOption(args, 'drain-timeout', '5s');
  const level = logLevelOption(args);
  const redisRaw = stringOption(args, 'redis');
  let redis: URL | undefined;
  if (redisRaw !== undefined) {
    try {
      redis = new URL(redisRaw);
    } catch {
      throw new ArgumentError(`--redis is not a URL: ${JSON.stringify(redisRaw)}`);
    }
    if (redis.protocol !== 'redis:' && redis.protocol !== 'rediss:') throw new ArgumentError(`--redis must be a redis:// or rediss:// URL, got ${JSON.stringify(redisRaw)}`);
  }

  let config: RlsConfig;
  try {
    config = await loadRlsConfig(configPath);
  } catch (error) {
    if (error instanceof ConfigError) {
      io.stderr.write(error.message + '\n');
      return 2;
    }
    throw error;
  }

  const logger = serverLogger(level);
  let store: Store;
  let closeStore: (() => Promise<void>) | undefined;
  if (redis === undefined) store = memoryStore();
  else {
    const name = 'ioredis';
    let mod: IoredisModule;
    try {
      mod = (await import(name)) as IoredisModule;
    } catch {
      io.stderr.write('ratecontract rls: --redis needs the ioredis package: npm install ioredis\n');
      return 2;
    }
    const throttle = new LogThrottle();
    const client = new mod.default(redis.toString(), { maxRetriesPerRequest: 1, enableOfflineQueue: true });
    client.on('error', (error: unknown) => logConnectionError(logger, throttle, 'default', error));
    store = redisStore({ client, deadlineMs, prefix: 'rc:rls:' });
    closeStore = async () => {
      await client.quit().catch(() => undefined);
    };
  }
  const storesReady = await waitForStores(
    [{ name: 'default', store, url: redis === undefined ? undefined : redactUrl(redis), fields: redis === undefined ? undefined : { deadlineMs } }],
    readyTimeoutMs,
    logger,
  );

  let running;
  try {
    running = await startRls({
      config,
      configPath,
      defaultStore: store,
      storesReady,
      storeType: redis === undefined ? 'memory' : 'redis',
      host,
      grpcPort,
      httpPort,
      adminPort,
      responseHeaders: flagOption(args, 'response-headers'),
      watch: !flagOption(args, 'no-watch'),
      drainTimeoutMs,
      logger,
      closeStore,
    });
  } catch (error) {
    const message = errorText(error);
    logger.fatal({ event: 'startup-failed', error: message });
    io.stderr.write(`ratecontract rls: ${message}\n`);
    await closeStore?.();
    return 1;
  }
  const rls = running;
  // The signal handlers are in place before the lines that say where it listens.
  const stopped = signals.run(rls, (error) => logger.error({ event: 'shutdown-error', error: errorText(error) }));
  const rows = rulesTable(config).map((r) => `  ${r.path}: ${r.bound}${r.algorithm === undefined ? '' : ` (${r.algorithm})`}, purpose ${r.purpose}${r.onError === undefined ? '' : `, onError ${r.onError}`}${r.shadow ? ', shadow' : ''}`);
  io.stderr.write(
    [
      `ratecontract rls: ${plural(config.files.length, 'file')}, ${plural(config.domains.size, 'domain')}, ${plural(config.rules.length, 'rule')}, counters ${redis === undefined ? 'in this process' : `on ${redis.host}`}`,
      ...rows,
      '',
      `grpc ${rls.grpcAddress}`,
      `listening ${rls.httpUrl}`,
      ...(rls.adminUrl === undefined ? [] : [`admin ${rls.adminUrl}  (live page /, /metrics, /contract, /healthz, /readyz, /stats.json)`]),
      '',
    ].join('\n') + '\n',
  );
  await stopped;
  return 0;
}
