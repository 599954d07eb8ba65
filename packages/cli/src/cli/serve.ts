import { ConfigError } from 'ratecontract';
import { demoConfig } from '../contract/demo.js';
import { loadConfig, type RateContractConfig, type StoreConfig } from 'ratecontract/config';
import { contractTable, demoExamples, startService } from '../serve/index.js';
import { errorText, holdSignals, serverLogger } from '../host/index.js';
import { ArgumentError, durationOption, flagOption, integerOption, stringOption, type Command, type CommandIo, type ParsedArgs } from './args.js';
import { LOG_LEVEL_OPTION, logLevelOption } from './log-level.js';

/** Default port of the API (or proxy). */
export const DEFAULT_PORT = 8080;
/** Default admin port (the OpenTelemetry Prometheus exporter's port). */
export const DEFAULT_ADMIN_PORT = 9464;

export const serveCommand: Command = {
  name: 'serve',
  summary: 'run a contract as a service: the demo API, or a rate-limiting reverse proxy (--upstream), with an admin port',
  options: {
    config: { type: 'string', value: 'FILE', description: 'the contract file (YAML or JSON)', default: 'the built-in demo contract' },
    port: { type: 'string', value: 'N', description: 'port of the API or proxy; 0 takes a free port', default: String(DEFAULT_PORT) },
    host: { type: 'string', value: 'H', description: 'address to listen on', default: '127.0.0.1' },
    upstream: { type: 'string', value: 'URL', description: 'proxy every request to this http:// URL (after the limits) instead of the demo handlers' },
    'upstream-timeout': { type: 'string', value: 'D', description: "bound on the upstream's response headers and on each pause in a body (504 past it)", default: '30s' },
    'headers-timeout': { type: 'string', value: 'D', description: "bound on receiving a request's head from the client (408 past it)", default: '10s' },
    'admin-port': { type: 'string', value: 'N', description: 'port of /metrics, /contract, /healthz, /readyz and the live page; 0 takes a free port', default: String(DEFAULT_ADMIN_PORT) },
    'admin-host': { type: 'string', value: 'H', description: 'address of the admin port', default: '127.0.0.1' },
    redis: { type: 'string', value: 'URL', description: "put every store of the contract on this Redis (redis:// or rediss://)" },
    watch: { type: 'boolean', description: 'reload the config when its file changes (SIGHUP always reloads)' },
    'ready-timeout': { type: 'string', value: 'D', description: 'how long startup waits for each store to be ready before listening anyway', default: '5s' },
    'drain-timeout': { type: 'string', value: 'D', description: 'how long SIGTERM waits for in-flight requests', default: '10s' },
    'log-level': LOG_LEVEL_OPTION,
  },
  details: [
    'Logs are JSON lines on stdout (pino): startup, one line per store, reloads, store errors and',
    'breaker changes; no line per request. The banner (contract table, URLs, example commands) is on',
    'stderr, with a line "listening http://HOST:PORT" and one "admin http://HOST:PORT".',
    '',
    'Signals: SIGTERM and SIGINT stop accepting, drain in-flight requests, close the stores and exit 0.',
    'SIGHUP reloads the config file; an invalid file is refused (logged) and the running contract kept.',
    '',
    'Examples:',
    '  ratecontract serve',
    '  ratecontract serve --config ratecontract.yaml --upstream http://127.0.0.1:3000 --port 8080',
    '  ratecontract serve --redis redis://127.0.0.1:6379 --port 0',
  ].join('\n'),
  run: runServe,
};


/** A `--name URL` option: a URL whose protocol is one of `protocols`, or `undefined` when not given. */
export function urlOption(args: ParsedArgs, name: string, protocols: readonly string[]): URL | undefined {
  const raw = stringOption(args, name);
  if (raw === undefined) return undefined;
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new ArgumentError(`--${name} is not a URL: ${JSON.stringify(raw)}`);
  }
  if (!protocols.includes(u.protocol)) throw new ArgumentError(`--${name} must be a ${protocols.map((p) => p.replace(':', '://')).join(' or ')} URL, got ${JSON.stringify(raw)}`);
  return u;
}

/** `--redis URL`: every store of the contract on that Redis (memory and Redis stores alike), keeping each store's other settings that Redis has. */
export function onRedis(config: RateContractConfig, url: string): RateContractConfig {
  const stores: Record<string, StoreConfig> = {};
  for (const [name, s] of Object.entries(config.stores)) {
    stores[name] = s.type === 'redis' ? { ...s, url } : { type: 'redis', url };
  }
  return { ...config, stores };
}

async function runServe(args: ParsedArgs, io: CommandIo): Promise<number> {
  const signals = holdSignals();
  const file = stringOption(args, 'config');
  const port = integerOption(args, 'port', DEFAULT_PORT, 0, 65535);
  const adminPort = integerOption(args, 'admin-port', DEFAULT_ADMIN_PORT, 0, 65535);
  const host = stringOption(args, 'host') ?? '127.0.0.1';
  const adminHost = stringOption(args, 'admin-host') ?? '127.0.0.1';
  const upstream = urlOption(args, 'upstream', ['http:', 'https:']);
  const redis = urlOption(args, 'redis', ['redis:', 'rediss:']);
  const upstreamTimeoutMs = durationOption(args, 'upstream-timeout', '30s');
  const headersTimeoutMs = durationOption(args, 'headers-timeout', '10s');
  const readyTimeoutMs = durationOption(args, 'ready-timeout', '5s');
  const drainTimeoutMs = durationOption(args, 'drain-timeout', '10s');
  const level = logLevelOption(args);
  const watch = flagOption(args, 'watch');
  if (watch && file === undefined) throw new ArgumentError('--watch needs --config FILE (the built-in demo has no file to watch)');

  let config: RateContractConfig;
  try {
    config = file === undefined ? demoConfig() : await loadConfig(file);
  } catch (error) {
    if (error instanceof ConfigError) {
      io.stderr.write(error.message + '\n');
      return 2;
    }
    throw error;
  }
  const transform = redis === undefined ? undefined : (c: RateContractConfig): RateContractConfig => onRedis(c, redis.toString());

  const logger = serverLogger(level);
  let service;
  try {
    service = await startService({
      config,
      configFile: file,
      transform,
      host,
      port,
      adminHost,
      adminPort,
      upstream,
      upstreamTimeoutMs,
      headersTimeoutMs,
      readyTimeoutMs,
      drainTimeoutMs,
      watch,
      logger,
    });
  } catch (error) {
    const message = errorText(error);
    logger.fatal({ event: 'startup-failed', error: message });
    io.stderr.write(`ratecontract serve: ${message}\n`);
    return error instanceof ConfigError ? 2 : 1;
  }
  const running = service;
  const banner = [
    upstream === undefined
      ? `ratecontract serve: ${file === undefined ? 'demo API on the built-in demo contract' : `${file}, answered by the demo handlers (no --upstream)`}${redis === undefined ? '' : ` on ${redis.host}`}`
      : `ratecontract serve: rate-limiting proxy to ${upstream.origin}${upstream.pathname === '/' ? '' : upstream.pathname}`,
    '',
    contractTable(running.config()),
    '',
    `listening ${running.url}`,
    ...(running.adminUrl === undefined ? [] : [`admin ${running.adminUrl}  (live page /, /metrics, /contract, /healthz, /readyz, /stats.json)`]),
    ...(upstream === undefined && file === undefined ? ['', demoExamples(running.url)] : []),
    '',
  ];
  // The signal handlers are in place before the banner says where it listens.
  const stopped = signals.run(running, (error) => logger.error({ event: 'shutdown-error', error: errorText(error) }));
  io.stderr.write(banner.join('\n') + '\n');
  await stopped;
  return 0;
}
