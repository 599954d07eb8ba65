import { ConfigError } from 'ratecontract';
import { loadConfig, type RateContractConfig } from 'ratecontract/config';
import { assertDecidable, EMIT_TARGETS, emitProxyConfig, startDecide, type DenyStatus, type EmitTarget } from '../decide/index.js';
import { contractTable } from '../serve/index.js';
import { authorityHost, errorText, holdSignals, serverLogger } from '../host/index.js';
import { ArgumentError, durationOption, flagOption, integerOption, stringOption, type Command, type CommandIo, type ParsedArgs } from './args.js';
import { LOG_LEVEL_OPTION, logLevelOption } from './log-level.js';
import { DEFAULT_ADMIN_PORT, onRedis, urlOption } from './serve.js';

/** Default port decide answers subrequests on. */
export const DEFAULT_DECIDE_PORT = 9191;

export const decideCommand: Command = {
  name: 'decide',
  summary: 'answer forward-auth subrequests (nginx auth_request, Caddy forward_auth, Traefik forwardAuth, HAProxy) with a contract',
  options: {
    config: { type: 'string', value: 'FILE', description: 'the contract file (YAML or JSON), as for serve (required)' },
    port: { type: 'string', value: 'N', description: 'port the proxy asks; 0 takes a free port', default: String(DEFAULT_DECIDE_PORT) },
    host: { type: 'string', value: 'H', description: 'address to listen on', default: '127.0.0.1' },
    redis: { type: 'string', value: 'URL', description: 'put every store of the contract on this Redis (redis:// or rediss://)' },
    'deny-status': { type: 'string', value: 'S', description: "answer every denial with 403 or 401 (nginx passes no other status), the contract's own in RateContract-Status", default: "the contract's 429 or 503" },
    'admin-port': { type: 'string', value: 'N', description: 'port of /metrics, /contract, /healthz, /readyz, /decide.json and the live page; 0 takes a free port', default: String(DEFAULT_ADMIN_PORT) },
    'admin-host': { type: 'string', value: 'H', description: 'address of the admin port', default: '127.0.0.1' },
    watch: { type: 'boolean', description: 'reload the config when its file changes (SIGHUP always reloads)' },
    'headers-timeout': { type: 'string', value: 'D', description: "bound on receiving a subrequest's head (408 past it)", default: '10s' },
    'ready-timeout': { type: 'string', value: 'D', description: 'how long startup waits for each store to be ready before listening anyway', default: '5s' },
    'drain-timeout': { type: 'string', value: 'D', description: 'how long SIGTERM waits for subrequests in flight', default: '10s' },
    'log-level': LOG_LEVEL_OPTION,
    emit: { type: 'string', value: 'PROXY', description: `write a proxy config for this contract to stdout and exit: ${EMIT_TARGETS.join(', ')}` },
    upstream: { type: 'string', value: 'URL', description: 'with --emit: the http:// application the proxy passes allowed requests to', default: 'http://127.0.0.1:3000' },
    listen: { type: 'string', value: 'HOST:PORT', description: 'with --emit: where the proxy listens', default: '127.0.0.1:8080' },
  },
  details: [
    'The proxy sends each request\'s method and target in X-Forwarded-Method and X-Forwarded-Uri (Caddy,',
    'Traefik) or X-Original-Method and X-Original-URI (nginx). Allowed: 200 with the RateLimit fields;',
    'denied: the contract\'s 429 or 503 with the exact Retry-After, the RateLimit fields and problem+json',
    '(or --deny-status, the contract\'s status in RateContract-Status). A limit decide cannot honour',
    '(a concurrency lease, count: failures, a body key, a cost from Content-Length) is refused at load.',
    '',
    '--emit writes the proxy\'s config from the contract: each route\'s fail mode when decide is',
    'unreachable (shedding routes pass, abuse routes 503), with each limit\'s purpose and reason.',
    '',
    'Examples:',
    '  ratecontract decide --config ratecontract.yaml --deny-status 403',
    '  ratecontract decide --config ratecontract.yaml --emit nginx --upstream http://127.0.0.1:3000 > ratecontract.conf',
  ].join('\n'),
  run: runDecide,
};

function denyStatusOption(args: ParsedArgs): DenyStatus | undefined {
  const raw = stringOption(args, 'deny-status');
  if (raw === undefined || raw === '429') return undefined;
  if (raw === '403' || raw === '401') return Number(raw) as DenyStatus;
  throw new ArgumentError(`--deny-status must be 403 or 401 (or 429, the contract's own status), got ${JSON.stringify(raw)}`);
}

function emitTarget(args: ParsedArgs): EmitTarget | undefined {
  const raw = stringOption(args, 'emit');
  if (raw === undefined) return undefined;
  if (!(EMIT_TARGETS as readonly string[]).includes(raw)) throw new ArgumentError(`--emit must be one of ${EMIT_TARGETS.join(', ')}, got ${JSON.stringify(raw)}`);
  return raw as EmitTarget;
}

function listenOption(args: ParsedArgs): string {
  const raw = stringOption(args, 'listen') ?? '127.0.0.1:8080';
  const m = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(raw);
  if (m === null || Number(m[2]) > 65535) throw new ArgumentError(`--listen must be HOST:PORT, got ${JSON.stringify(raw)}`);
  return raw;
}

async function runDecide(args: ParsedArgs, io: CommandIo): Promise<number> {
  const file = stringOption(args, 'config');
  if (file === undefined) throw new ArgumentError('decide needs --config FILE (the contract the proxy asks about)');
  const port = integerOption(args, 'port', DEFAULT_DECIDE_PORT, 0, 65535);
  const host = stringOption(args, 'host') ?? '127.0.0.1';
  const target = emitTarget(args);
  const emitOnly = ['upstream', 'listen'].filter((n) => args.values[n] !== undefined);
  if (target === undefined && emitOnly.length > 0) throw new ArgumentError(`--${emitOnly[0]} applies with --emit only`);
  const upstream = target === undefined ? undefined : (urlOption(args, 'upstream', ['http:']) ?? new URL('http://127.0.0.1:3000'));
  const listen = target === undefined ? undefined : listenOption(args);
  const adminPort = integerOption(args, 'admin-port', DEFAULT_ADMIN_PORT, 0, 65535);
  const adminHost = stringOption(args, 'admin-host') ?? '127.0.0.1';
  const redis = urlOption(args, 'redis', ['redis:', 'rediss:']);
  const denyStatus = denyStatusOption(args);
  const headersTimeoutMs = durationOption(args, 'headers-timeout', '10s');
  const readyTimeoutMs = durationOption(args, 'ready-timeout', '5s');
  const drainTimeoutMs = durationOption(args, 'drain-timeout', '10s');
  const level = logLevelOption(args);
  const watch = flagOption(args, 'watch');

  let config: RateContractConfig;
  try {
    config = await loadConfig(file);
    assertDecidable(config);
  } catch (error) {
    if (error instanceof ConfigError) {
      io.stderr.write(error.message + '\n');
      return 2;
    }
    throw error;
  }

  if (target !== undefined && upstream !== undefined && listen !== undefined) {
    const command = ['ratecontract decide', ...Object.entries(args.values).flatMap(([k, v]) => (v === undefined ? [] : v === true ? [`--${k}`] : [`--${k}`, v]))].join(' ');
    let text: string;
    try {
      text = emitProxyConfig(target, config, { decide: `${authorityHost(host)}:${port}`, upstream: upstream.host, listen, command });
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      io.stderr.write(error.message + '\n');
      return 2;
    }
    io.stdout.write(text);
    return 0;
  }
  const signals = holdSignals();
  const transform = redis === undefined ? undefined : (c: RateContractConfig): RateContractConfig => onRedis(c, redis.toString());

  const logger = serverLogger(level);
  let running;
  try {
    running = await startDecide({ config, configFile: file, transform, host, port, adminHost, adminPort, denyStatus, headersTimeoutMs, readyTimeoutMs, drainTimeoutMs, watch, logger });
  } catch (error) {
    const message = errorText(error);
    logger.fatal({ event: 'startup-failed', error: message });
    io.stderr.write(`ratecontract decide: ${message}\n`);
    return error instanceof ConfigError ? 2 : 1;
  }
  const decide = running;
  const banner = [
    `ratecontract decide: forward-auth answers for ${file}${redis === undefined ? '' : ` on ${redis.host}`}${denyStatus === undefined ? '' : `, denials as ${denyStatus}`}`,
    '',
    contractTable(decide.config()),
    '',
    `listening ${decide.url}`,
    ...(decide.adminUrl === undefined ? [] : [`admin ${decide.adminUrl}  (live page /, /metrics, /contract, /healthz, /readyz, /stats.json, /decide.json)`]),
    '',
  ];
  // The signal handlers are in place before the banner says where it listens.
  const stopped = signals.run(decide, (error) => logger.error({ event: 'shutdown-error', error: errorText(error) }));
  io.stderr.write(banner.join('\n') + '\n');
  await stopped;
  return 0;
}
