/**
 * The bounds docs/serve.md states for the service's HTTP server ("What the
 * proxy guarantees", the flags table) are the code's: read from the page and
 * compared with the constants and the CLI default.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { serveCommand } from '../../../packages/cli/src/cli/serve.js';
import { parseDuration } from '../../../packages/ratecontract/src/index.js';
import {
  DEFAULT_HEADERS_TIMEOUT_MS,
  KEEP_ALIVE_TIMEOUT_MS,
  MAX_CHECK_INTERVAL_MS,
  MAX_HEADER_BYTES,
  REQUEST_TIMEOUT_MS,
  serverOptions,
} from '../../../packages/cli/src/serve/server-options.js';
import { ROOT } from './helpers.js';

const page = readFileSync(join(ROOT, 'docs', 'serve.md'), 'utf8');

function match(re: RegExp): string {
  const m = re.exec(page);
  if (m?.[1] === undefined) throw new Error(`docs/serve.md has no match for ${String(re)}`);
  return m[1];
}

describe('docs/serve.md states the server bounds the code has', () => {
  it('--headers-timeout: the flags table, the CLI default and the constant agree', () => {
    const documented = match(/^\| `--headers-timeout D` \| (\S+) \|/m);
    expect(parseDuration(documented, 'doc')).toBe(DEFAULT_HEADERS_TIMEOUT_MS);
    expect(serveCommand.options['headers-timeout']?.default).toBe(documented);
    expect(match(/a head not received within `--headers-timeout` \(default (\S+)\)/)).toBe(documented);
  });

  it('the head size, the request bound, the check interval and the keep-alive timeout', () => {
    expect(Number(match(/a head \(request line and fields\) over (\d+) KiB/)) * 1024).toBe(MAX_HEADER_BYTES);
    expect(Number(match(/a whole request not received within (\d+) minutes/)) * 60_000).toBe(REQUEST_TIMEOUT_MS);
    expect(page).toContain('each is checked at least once a second');
    expect(MAX_CHECK_INTERVAL_MS).toBe(1000);
    expect(Number(match(/An idle keep-alive connection is closed after (\d+) s/)) * 1000).toBe(KEEP_ALIVE_TIMEOUT_MS);
  });

  it('serverOptions sets the strict parser and every bound explicitly', () => {
    expect(serverOptions()).toEqual({
      insecureHTTPParser: false,
      maxHeaderSize: MAX_HEADER_BYTES,
      headersTimeout: DEFAULT_HEADERS_TIMEOUT_MS,
      requestTimeout: REQUEST_TIMEOUT_MS,
      keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
      connectionsCheckingInterval: MAX_CHECK_INTERVAL_MS,
      requireHostHeader: false,
      joinDuplicateHeaders: false,
    });
    // A short head bound is checked more often (a quarter of it), and the request bound never falls below it.
    expect(serverOptions(1000)).toMatchObject({ headersTimeout: 1000, connectionsCheckingInterval: 250, requestTimeout: REQUEST_TIMEOUT_MS });
    expect(serverOptions(600_000)).toMatchObject({ requestTimeout: 600_000, connectionsCheckingInterval: MAX_CHECK_INTERVAL_MS });
  });
});
