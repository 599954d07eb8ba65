import { memoryStore, type Store, type StoreOp, type StoreOpResult } from '../../../packages/ratecontract/src/index.js';

/** One sample of the Prometheus text format. */
export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/** Parses the Prometheus text exposition format (samples only; `# HELP` and `# TYPE` lines are returned apart). */
export function parseExposition(text: string): { samples: Sample[]; types: Map<string, string> } {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('# TYPE ')) {
      const [name, type] = line.slice(7).split(' ');
      types.set(name as string, type as string);
      continue;
    }
    if (line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (m === null) throw new Error(`not a sample line: ${JSON.stringify(line)}`);
    const labels: Record<string, string> = {};
    const body = m[2] ?? '';
    const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?/gy;
    let l: RegExpExecArray | null;
    let consumed = 0;
    while ((l = re.exec(body)) !== null) {
      labels[l[1] as string] = (l[2] as string).replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
      consumed = re.lastIndex;
    }
    if (consumed !== body.length) throw new Error(`bad labels: ${JSON.stringify(body)}`);
    samples.push({ name: m[1] as string, labels, value: Number(m[3]) });
  }
  return { samples, types };
}

/** The value of the one sample of `name` whose labels include `labels`, or `undefined`. */
export function sampleValue(samples: readonly Sample[], name: string, labels: Readonly<Record<string, string>> = {}): number | undefined {
  const found = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`);
  return found[0]?.value;
}

/** An asynchronous store over a memory store: answers after `delayMs` (real time), or fails, or hangs, as switched. */
export class SwitchableStore implements Store {
  readonly kind = 'switchable';
  readonly inner = memoryStore();
  mode: 'ok' | 'fail' | 'hang' = 'ok';
  readonly deadlineMs: number;
  readonly breaker = { failureThreshold: 3, cooldownMs: 60_000 };
  constructor(
    readonly delayMs = 0,
    deadlineMs = 50,
  ) {
    this.deadlineMs = deadlineMs;
  }
  async evaluate(ops: readonly StoreOp[], now: number): Promise<readonly StoreOpResult[]> {
    if (this.mode === 'hang') return new Promise(() => undefined);
    if (this.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.delayMs));
    if (this.mode === 'fail') throw new Error('ECONNRESET secret-connection-detail');
    return this.inner.evaluate(ops, now);
  }
  refund(ops: readonly StoreOp[], now: number): Promise<void> {
    return this.inner.refund(ops, now);
  }
  release(op: StoreOp, now: number): Promise<void> {
    return this.inner.release(op, now);
  }
}
