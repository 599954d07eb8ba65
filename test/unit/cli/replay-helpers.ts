import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';

/** 2026-12-01T10:00:00Z. */
export const T0 = Date.UTC(2026, 11, 1, 10, 0, 0);

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** `[01/Dec/2026:10:00:00 +0000]` without the brackets. */
export function clfTime(ms: number): string {
  const d = new Date(ms);
  const p = (n: number): string => String(n).padStart(2, '0');
  return `${p(d.getUTCDate())}/${MONTHS[d.getUTCMonth()] as string}/${d.getUTCFullYear()}:${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())} +0000`;
}

/** One request of a generated log. */
export interface Req {
  readonly time: number;
  readonly method: string;
  /** Path and query. */
  readonly target: string;
  readonly ip: string;
  readonly status?: number;
  readonly principal?: string;
  readonly tenant?: string;
}

export function combinedLine(r: Req): string {
  return `${r.ip} - ${r.principal ?? '-'} [${clfTime(r.time)}] "${r.method} ${r.target} HTTP/1.1" ${r.status ?? 200} 123 "-" "test/1.0"`;
}

export function jsonLine(r: Req): string {
  return JSON.stringify({
    time: new Date(r.time).toISOString(),
    method: r.method,
    path: r.target,
    ip: r.ip,
    status: r.status ?? 200,
    ...(r.principal !== undefined && { principal: r.principal }),
    ...(r.tenant !== undefined && { tenant: r.tenant }),
  });
}

/** A temporary folder, removed by `cleanup`. */
export function scratch(): { dir: string; file(name: string, content: string | Buffer): string; gzip(name: string, content: string): string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'rc-replay-'));
  return {
    dir,
    file(name, content) {
      const path = join(dir, name);
      writeFileSync(path, content);
      return path;
    },
    gzip(name, content) {
      const path = join(dir, name);
      writeFileSync(path, gzipSync(content));
      return path;
    },
    cleanup() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The parts of `--json` the tests read. */
export interface Report {
  log: { file: string; format: string; lines: number; records: number; blank: number; malformed: number; malformedLines: Array<{ line: number; reason: string }>; late: number };
  keys: 'hashed' | 'shown';
  contract: ReportContract;
  against: null | {
    config: string;
    newlyRejected: number;
    newlyRejectedByLimit: Array<{ limit: string; requests: number }>;
    newlyRejectedByKey: Array<{ limit: string; key: string; requests: number; error: number }>;
    noLongerRejected: number;
    noLongerRejectedByLimit: Array<{ limit: string; requests: number }>;
    noLongerRejectedByKey: Array<{ limit: string; key: string; requests: number; error: number }>;
    old: ReportContract;
  };
  notes: string[];
  run: { elapsedMs: number; linesPerSecond: number; peakRssBytes: number };
}

export interface ReportContract {
  config: string;
  totals: {
    requests: number;
    limited: number;
    unlimited: number;
    unrouted: number;
    unroutedLines: Array<{ line: number; method: string; path: string }>;
    rejected: number;
    shadowRejected: number;
    wouldReject: number;
  };
  limits: Array<{
    name: string;
    key: string;
    shadow: boolean;
    routes: string[];
    checked: number;
    unkeyed: number;
    wouldReject: number;
    share: number;
    decided: number;
    firstTrip: { time: string; line: number } | null;
    topKeys: Array<{ key: string; rejections: number; error: number }>;
  }>;
}
