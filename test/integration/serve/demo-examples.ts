/**
 * The demo banner's "try it" examples as a user meets them: read from the
 * printed banner, run as printed with real curl under bash, and held to what
 * each caption says. A printed example with no check here fails, so a new
 * example cannot go untested.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { expect } from 'vitest';

/** One printed example: its caption (the `#` lines above it, joined) and its command lines as printed. */
export interface PrintedExample {
  readonly caption: string;
  readonly command: string;
}

/** The examples of a banner: the lines after `try it`, up to the first blank line. */
export function printedExamples(banner: string): PrintedExample[] {
  const lines = banner.split('\n');
  const start = lines.findIndex((l) => l.startsWith('try it'));
  if (start < 0) throw new Error(`the banner has no "try it" section:\n${banner}`);
  const out: Array<{ caption: string[]; command: string[] }> = [];
  for (const line of lines.slice(start + 1)) {
    if (line.trim() === '') break;
    if (!line.startsWith('  ')) continue; // the introduction, wrapped
    if (line.startsWith('  # ')) {
      const last = out.at(-1);
      if (last === undefined || last.command.length > 0) out.push({ caption: [line.slice(4)], command: [] });
      else last.caption.push(line.slice(4));
    } else {
      const last = out.at(-1);
      if (last === undefined) throw new Error(`a command without a caption: ${line}`);
      last.command.push(line.slice(2));
    }
  }
  return out.map((e) => ({ caption: e.caption.join(' '), command: e.command.join('\n') }));
}

export interface Ran {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs one printed command with bash, as pasted into a terminal (bounded: 60 s). */
export async function runPrinted(command: string): Promise<Ran> {
  const proc = spawn('timeout', ['--signal=KILL', '60', 'bash', '-c', command], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const [code] = (await once(proc, 'exit')) as [number | null];
  return { code, stdout, stderr };
}

interface Answer {
  readonly status: number;
  readonly fields: Map<string, string>;
  readonly body: string;
}

/** `curl -s -i` answers, one after another (each followed by the example's `echo`). */
function answers(text: string): Answer[] {
  const parts = text.split(/^(?=HTTP\/1\.1 \d{3})/m).filter((p) => p.trim() !== '');
  return parts.map((p) => {
    const [head = '', body = ''] = p.split('\r\n\r\n', 2);
    const [statusLine = '', ...fieldLines] = head.split('\r\n');
    const fields = new Map<string, string>();
    for (const f of fieldLines) {
      const i = f.indexOf(':');
      fields.set(f.slice(0, i).toLowerCase(), f.slice(i + 1).trim());
    }
    return { status: Number(statusLine.split(' ')[1]), fields, body: body.trim() };
  });
}

/** Status lines and Retry-After lines (`-D -` piped through grep), in order, without the CRs. */
function statusAndRetryAfter(text: string): Array<{ status: number } | { retryAfter: string }> {
  return text
    .replaceAll('\r', '')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => {
      const s = /^HTTP\/\S+ (\d{3})\b/.exec(l);
      if (s !== null) return { status: Number(s[1]) };
      const r = /^retry-after: *(\S+)$/i.exec(l);
      if (r !== null) return { retryAfter: r[1] as string };
      throw new Error(`unexpected output line ${JSON.stringify(l)}`);
    });
}

/** What each caption promises, checked against what its command printed. */
const CHECKS: ReadonlyArray<{ readonly caption: RegExp; readonly check: (stdout: string) => void }> = [
  {
    caption: /^429: otp-recipient allows 3 codes per 15 minutes to one phone; the 4th is refused with Retry-After: 300$/,
    check: (stdout) => {
      expect(statusAndRetryAfter(stdout)).toEqual([{ status: 202 }, { status: 202 }, { status: 202 }, { status: 429 }, { retryAfter: '300' }]);
    },
  },
  {
    caption: /^429 to a tenant \(x-tenant, believed from loopback\): each answer tells it RateLimit-Policy and RateLimit;/,
    check: (stdout) => {
      const all = answers(stdout);
      expect(all.map((a) => a.status)).toEqual([202, 202, 202, 429]);
      for (const a of all) {
        expect(a.fields.get('ratelimit-policy')).toMatch(/^"otp-recipient";q=3;w=900;/);
        expect(a.fields.get('ratelimit')).toMatch(/^"otp-recipient";r=\d;t=\d+;/);
      }
      const refused = all[3] as Answer;
      expect(refused.fields.get('retry-after')).toBe('300');
      expect(refused.fields.get('content-type')).toBe('application/problem+json');
      expect(JSON.parse(refused.body)).toMatchObject({ status: 429, 'violated-policies': ['otp-recipient'] });
      for (const a of all.slice(0, 3)) expect(a.fields.has('retry-after')).toBe(false);
    },
  },
  {
    caption: /^503: otp-global allows 50 sends a second\..* the rest get 503 with Retry-After: 1/,
    check: (stdout) => {
      const counts = new Map<string, number>();
      for (const line of stdout.replaceAll('\r', '').split('\n').filter((l) => l.trim() !== '')) {
        const m = /^\s*(\d+) (.+)$/.exec(line);
        if (m === null) throw new Error(`not a uniq -c line: ${JSON.stringify(line)}`);
        const s = /^HTTP\/\S+ (\d{3})\b/.exec(m[2] as string);
        counts.set(s !== null ? (s[1] as string) : (m[2] as string).toLowerCase(), Number(m[1]));
      }
      const admitted = counts.get('202') ?? 0;
      const shed = counts.get('503') ?? 0;
      expect([...counts.keys()].sort()).toEqual(['202', '503', 'retry-after: 1']);
      expect(admitted + shed).toBe(150);
      // 50 a second with a burst of 50: the 150 requests of one curl take well under a second on an idle machine
      // (0.12 s measured on a loaded one); up to 2 s still leaves some 503s. The other examples spend at most 8.
      expect(admitted).toBeGreaterThanOrEqual(40);
      expect(shed).toBeGreaterThanOrEqual(1);
      expect(counts.get('retry-after: 1')).toBe(shed);
    },
  },
  {
    caption: /^GET \/health has no limit: 20 in a row from one address, all 200$/,
    check: (stdout) => {
      expect(stdout.trim().split(/\s+/)).toEqual(new Array<string>(20).fill('200'));
    },
  },
];

/** The check for a caption; fails when the banner prints an example nobody checks. */
export function checkFor(example: PrintedExample): (stdout: string) => void {
  const found = CHECKS.filter((c) => c.caption.test(example.caption));
  if (found.length !== 1) throw new Error(`${found.length} checks for the printed example ${JSON.stringify(example.caption)}`);
  return (found[0] as (typeof CHECKS)[number]).check;
}

/** The global limit (50 a second) is what the 503 example spends: the next example waits for its Retry-After, as a person pasting it would. */
export function spendsTheGlobalLimit(example: PrintedExample): boolean {
  return example.caption.startsWith('503:');
}

/** Runs the examples in `order` and checks each against its caption; returns the outputs. */
export async function runAndCheck(examples: readonly PrintedExample[], order: readonly number[]): Promise<Ran[]> {
  const out: Ran[] = [];
  for (const i of order) {
    const example = examples[i] as PrintedExample;
    const check = checkFor(example);
    const ran = await runPrinted(example.command);
    expect(ran, `example ${JSON.stringify(example.caption)}`).toMatchObject({ code: 0, stderr: '' });
    try {
      check(ran.stdout);
    } catch (error) {
      throw new Error(`the example "${example.caption}" (run in the order ${order.join(', ')}) did not show what it says:\n${ran.stdout}\n${String(error)}`);
    }
    out.push(ran);
    if (spendsTheGlobalLimit(example)) await new Promise((resolve) => setTimeout(resolve, 1_100));
  }
  return out;
}
