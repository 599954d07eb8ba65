/**
 * The property every fuzz target is held to, for one input: it ends in a
 * result or in the parser's own typed error, within a time bound, leaves
 * the built-in prototypes untouched, and returns objects whose prototypes
 * are the built-in ones or a class's (never a plain object a key such as
 * `__proto__` put there). Used by the bounded tests (test/fuzz/*.test.ts)
 * and by the on-demand coverage-guided runner (test/fuzz/run.ts).
 */
import type fc from 'fast-check';

/** One parser under fuzzing. Inputs are text: what a file, a header or a log line holds. */
export interface FuzzTarget {
  /** Folder name under test/fuzz/corpus/, kebab-case. */
  readonly name: string;
  /** Structure-aware inputs: near-valid shapes that get past a parser's first check. */
  readonly arbitrary: fc.Arbitrary<string>;
  /** Valid inputs (the repository's fixtures and the docs' examples) the mutator starts from. */
  readonly seeds: () => readonly string[];
  /** Tokens the mutator splices in (delimiters, hostile keys, edge numbers). */
  readonly dictionary: readonly string[];
  /** Feeds one input to the parser(s); returns what they returned, throws what they threw. */
  run(input: string): unknown;
  /** Whether a thrown value is the parser's documented error (anything else is a defect). */
  allowed(error: unknown): boolean;
  /** Bound per input in ms (default 50). */
  readonly maxMs?: number;
}

/** What went wrong with one input. */
export interface Finding {
  readonly kind: 'crash' | 'slow' | 'pollution' | 'inherited' | 'oversized';
  readonly detail: string;
}

/** Default bound per input, ms. A slow input is re-run twice and judged on its fastest run, so a GC pause or a busy core does not count. */
export const DEFAULT_MAX_MS = 50;

/** An allowed error's message may be at most this multiple of the input's length, plus `MESSAGE_SLACK` (JSON escapes take up to 6 characters per character). */
const MESSAGE_FACTOR = 8;
const MESSAGE_SLACK = 4096;
/** Most objects walked in one result. */
const WALK_LIMIT = 20_000;

const WATCHED: ReadonlyArray<readonly [string, object]> = [
  ['Object.prototype', Object.prototype],
  ['Array.prototype', Array.prototype],
  ['Function.prototype', Function.prototype],
  ['String.prototype', String.prototype],
  ['Map.prototype', Map.prototype],
];

/** The own keys of the watched prototypes, as one string: any change is pollution. */
function prototypeSignature(): string {
  return WATCHED.map(([name, proto]) => `${name}:${Reflect.ownKeys(proto).map(String).join(',')}`).join('|');
}

const BASELINE = prototypeSignature();

/** Whether `proto` is a prototype a constructor owns (a built-in's or a class's), as opposed to a plain object put in the chain. */
function isConstructorPrototype(proto: object): boolean {
  const d = Object.getOwnPropertyDescriptor(proto, 'constructor');
  return d !== undefined && typeof d.value === 'function' && (d.value as { prototype?: unknown }).prototype === proto;
}

/** The first object reachable from `value` whose prototype chain holds a plain object, as a path; `undefined` when there is none. */
export function inheritedKeys(value: unknown): string | undefined {
  const seen = new Set<object>();
  const stack: Array<readonly [unknown, string]> = [[value, '(result)']];
  while (stack.length > 0 && seen.size < WALK_LIMIT) {
    const [v, path] = stack.pop() as readonly [unknown, string];
    if (v === null || typeof v !== 'object' || seen.has(v)) continue;
    seen.add(v);
    for (let proto = Object.getPrototypeOf(v) as object | null; proto !== null; proto = Object.getPrototypeOf(proto) as object | null) {
      if (!isConstructorPrototype(proto)) return `${path} inherits from a plain object with keys ${JSON.stringify(Reflect.ownKeys(proto).map(String).slice(0, 8))}`;
    }
    if (ArrayBuffer.isView(v)) continue;
    if (v instanceof Map) {
      for (const [k, x] of v) stack.push([x, `${path}.get(${JSON.stringify(String(k)).slice(0, 40)})`]);
      continue;
    }
    if (v instanceof Set) {
      for (const x of v) stack.push([x, `${path}[set]`]);
      continue;
    }
    for (const k of Object.keys(v)) {
      const d = Object.getOwnPropertyDescriptor(v, k);
      if (d !== undefined && 'value' in d) stack.push([d.value, `${path}.${k.slice(0, 40)}`]);
    }
  }
  return undefined;
}

function describeError(error: unknown): string {
  if (error instanceof Error) {
    const at = (error.stack ?? '').split('\n').slice(1, 4).map((l) => l.trim()).join(' < ');
    return `${error.name}: ${error.message.slice(0, 300)}${at === '' ? '' : ` (${at})`}`;
  }
  return `non-Error thrown: ${String(error).slice(0, 300)}`;
}

interface Outcome {
  readonly ms: number;
  readonly result?: unknown;
  readonly error?: unknown;
  readonly threw: boolean;
}

async function once(target: FuzzTarget, input: string): Promise<Outcome> {
  const start = performance.now();
  try {
    let result = target.run(input);
    if (result instanceof Promise) result = await result;
    return { ms: performance.now() - start, result, threw: false };
  } catch (error) {
    return { ms: performance.now() - start, error, threw: true };
  }
}

/**
 * Runs `input` through `target` and judges it. Resolves to `undefined` when
 * it holds, or to what broke. The built-in prototypes are restored after a
 * pollution, so one finding does not spoil the inputs after it.
 */
export async function check(target: FuzzTarget, input: string): Promise<Finding | undefined> {
  const maxMs = target.maxMs ?? DEFAULT_MAX_MS;
  let outcome = await once(target, input);
  const signature = prototypeSignature();
  if (signature !== BASELINE) {
    restorePrototypes();
    return { kind: 'pollution', detail: `a built-in prototype changed: ${diffSignature(signature)}` };
  }
  if (outcome.ms > maxMs) {
    for (let i = 0; i < 2 && outcome.ms > maxMs; i++) {
      const again = await once(target, input);
      if (again.ms < outcome.ms) outcome = again;
    }
    if (outcome.ms > maxMs) return { kind: 'slow', detail: `took ${outcome.ms.toFixed(1)} ms at best of 3 (bound ${maxMs} ms) for ${input.length} characters` };
  }
  if (outcome.threw) {
    if (!target.allowed(outcome.error)) return { kind: 'crash', detail: describeError(outcome.error) };
    const message = outcome.error instanceof Error ? outcome.error.message : '';
    if (message.length > MESSAGE_FACTOR * input.length + MESSAGE_SLACK) return { kind: 'oversized', detail: `an error message of ${message.length} characters for ${input.length} of input` };
    const inherited = inheritedKeys(outcome.error);
    return inherited === undefined ? undefined : { kind: 'inherited', detail: `the error: ${inherited}` };
  }
  const inherited = inheritedKeys(outcome.result);
  return inherited === undefined ? undefined : { kind: 'inherited', detail: inherited };
}

// The watched prototypes' own keys at load, to undo a pollution.
const ORIGINAL = new Map(WATCHED.map(([, proto]) => [proto, new Set(Reflect.ownKeys(proto))]));

function restorePrototypes(): void {
  for (const [proto, keys] of ORIGINAL) {
    for (const k of Reflect.ownKeys(proto)) if (!keys.has(k)) Reflect.deleteProperty(proto, k);
  }
}

function diffSignature(now: string): string {
  const before = new Set(BASELINE.split(/[|,:]/));
  return now.split(/[|,:]/).filter((k) => !before.has(k)).slice(0, 8).join(', ') || '(a key was removed)';
}

/** A readable one-line form of a finding and its input. */
export function formatFinding(target: FuzzTarget, input: string, finding: Finding): string {
  const shown = input.length > 400 ? `${JSON.stringify(input.slice(0, 400))}... (${input.length} characters)` : JSON.stringify(input);
  return `${target.name}: ${finding.kind}: ${finding.detail}\n  input: ${shown}`;
}
