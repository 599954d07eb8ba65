/**
 * The on-demand, coverage-guided fuzz run: `npm run fuzz -- --minutes 10`.
 *
 * Inputs come from each target's structure-aware generator and from
 * mutations of its pool (seeds + corpus + every input kept this run). V8's
 * precise block coverage (node:inspector, `Profiler.takePreciseCoverage`) of
 * src/ says which inputs reach code, or a hit count bucket of a block, that no
 * earlier input reached; those join the pool, and with `--save` the corpus
 * (test/fuzz/corpus/<target>/cov-<sha1>.txt, minimised at the end to the
 * smallest set that covers the same, within the bounds of corpus.ts).
 * Inputs run in batches of `BATCH`; a batch that reaches a block no input
 * reached before is halved and re-run until the inputs that did are found
 * (hit counts are summed over a group, so only the blocks, not their count
 * buckets, are compared there; the buckets count for single inputs).
 *
 * Every input is judged by `check` (harness.ts). A finding is printed and
 * written to test/fuzz/findings/<target>/<sha1>.txt (not committed): once
 * the defect is fixed, copy it into corpus/<target>/regress-<what>.txt.
 *
 * Options: --minutes N (default 1), --target NAME[,NAME] (default all),
 * --save, --seed N. Exit 1 when anything was found.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { join, relative } from 'node:path';
import fc from 'fast-check';
import { CORPUS_DIR, MAX_FILE_BYTES, MAX_FILES, readCorpus, ROOT } from './corpus.js';
import { check, formatFinding, type Finding, type FuzzTarget } from './harness.js';
import { mutatedArb } from './mutate.js';
import { TARGETS } from './targets/index.js';

const BATCH = 64;
const SLICE_MS = 2000;
const FINDINGS_DIR = join(ROOT, 'test', 'fuzz', 'findings');

interface Args {
  readonly minutes: number;
  readonly targets: readonly FuzzTarget[];
  readonly save: boolean;
  readonly seed: number;
}

function parseArgs(argv: readonly string[]): Args {
  let minutes = 1;
  let names: string[] | undefined;
  let save = false;
  let seed = Date.now() % 2 ** 31;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = (): string => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    if (a === '--minutes') minutes = Number(value());
    else if (a === '--target') names = value().split(',');
    else if (a === '--save') save = true;
    else if (a === '--seed') seed = Number(value());
    else if (a === '--help' || a === '-h') {
      console.log('usage: npm run fuzz -- [--minutes N] [--target NAME[,NAME]] [--save] [--seed N]\ntargets: ' + TARGETS.map((t) => t.name).join(', '));
      process.exit(0);
    } else throw new Error(`unknown option ${String(a)} (try --help)`);
  }
  if (!Number.isFinite(minutes) || minutes <= 0) throw new Error('--minutes must be a positive number');
  const targets = names === undefined ? TARGETS : names.map((n) => {
    const t = TARGETS.find((x) => x.name === n);
    if (t === undefined) throw new Error(`no target ${n}; targets: ${TARGETS.map((x) => x.name).join(', ')}`);
    return t;
  });
  return { minutes, targets, save, seed };
}

// ---------------------------------------------------------------------------
// Coverage: hit blocks of src/, with their hit counts in buckets, as features.

interface Range {
  readonly startOffset: number;
  readonly endOffset: number;
  readonly count: number;
}
interface ScriptCoverage {
  readonly url: string;
  readonly functions: ReadonlyArray<{ readonly ranges: readonly Range[] }>;
}

const session = new Session();
function post<T>(method: string, params: object = {}): Promise<T> {
  return new Promise((resolve, reject) => session.post(method, params, (error, result) => (error === null ? resolve(result as T) : reject(error))));
}

function bucket(count: number): number {
  if (count <= 3) return count;
  if (count <= 7) return 4;
  if (count <= 15) return 5;
  if (count <= 31) return 6;
  if (count <= 127) return 7;
  return 8;
}

const urlIds = new Map<string, number>();
/**
 * Every block range seen per function (`url id:function start`). V8 lists a
 * nested range only where its count differs from its parent's, so a block's
 * count is that of the innermost listed range holding it: each known block
 * is looked up in every report of its function.
 */
const catalog = new Map<string, Array<readonly [number, number]>>();
let coverageMs = 0;
let takes = 0;

/** The features hit since the last call (taking coverage resets the counters). */
async function takeFeatures(): Promise<Set<string>> {
  const t0 = performance.now();
  const { result } = await post<{ result: ScriptCoverage[] }>('Profiler.takePreciseCoverage');
  const out = new Set<string>();
  for (const script of result) {
    if (!script.url.includes('/src/') || script.url.includes('node_modules')) continue;
    let id = urlIds.get(script.url);
    if (id === undefined) {
      id = urlIds.size;
      urlIds.set(script.url, id);
    }
    for (const fn of script.functions) {
      const first = fn.ranges[0];
      if (first === undefined || first.count === 0) continue;
      const key = `${id}:${first.startOffset}`;
      let known = catalog.get(key);
      if (known === undefined) {
        known = [];
        catalog.set(key, known);
      }
      for (const r of fn.ranges) if (!known.some(([a, b]) => a === r.startOffset && b === r.endOffset)) known.push([r.startOffset, r.endOffset]);
      for (const [a, b] of known) {
        let count = 0;
        let width = Infinity;
        for (const r of fn.ranges) {
          if (r.startOffset <= a && b <= r.endOffset && r.endOffset - r.startOffset < width) {
            width = r.endOffset - r.startOffset;
            count = r.count;
          }
        }
        if (count > 0) out.add(`${id}:${a}:${b}:${bucket(count)}`);
      }
    }
  }
  coverageMs += performance.now() - t0;
  takes++;
  return out;
}

// ---------------------------------------------------------------------------

interface State {
  readonly target: FuzzTarget;
  readonly features: Set<string>;
  /** The blocks (features without their count bucket) reached so far. */
  readonly blocks: Set<string>;
  readonly pool: string[];
  readonly kept: string[];
  readonly found: Map<string, string>;
  runs: number;
  ms: number;
}

function sha1(text: string): string {
  return createHash('sha1').update(text).digest('hex').slice(0, 12);
}

function record(state: State, input: string, finding: Finding): void {
  // One finding per kind and place it was thrown from (the first stack frame), else per message shape.
  const at = /\(at [^()]*?\(?([^()\s]+:\d+:\d+)\)?/.exec(finding.detail)?.[1];
  const key = `${finding.kind}:${at ?? finding.detail.replace(/"[^"]*"|\d+/g, '#')}`;
  if (state.found.has(key)) return;
  const dir = join(FINDINGS_DIR, state.target.name);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${sha1(input)}.txt`);
  writeFileSync(file, input);
  state.found.set(key, file);
  console.log(`\n${formatFinding(state.target, input, finding)}\n  saved: ${relative(ROOT, file)}`);
}

function blockOf(feature: string): string {
  return feature.slice(0, feature.lastIndexOf(':'));
}

function novel(state: State, features: ReadonlySet<string>): boolean {
  let any = false;
  for (const f of features) {
    if (!state.features.has(f)) {
      state.features.add(f);
      state.blocks.add(blockOf(f));
      any = true;
    }
  }
  return any;
}

/** Whether `features` hold a block not reached before. */
function newBlock(state: State, features: ReadonlySet<string>): boolean {
  for (const f of features) if (!state.blocks.has(blockOf(f))) return true;
  return false;
}

/** Runs `inputs` (counters fresh) and returns their coverage. */
async function coverageOf(state: State, inputs: readonly string[]): Promise<Set<string>> {
  await takeFeatures();
  for (const input of inputs) await check(state.target, input);
  return takeFeatures();
}

/** Finds the inputs of a group that reached a new block by halving it, and keeps them. */
async function bisect(state: State, inputs: readonly string[], features: ReadonlySet<string>): Promise<void> {
  if (!newBlock(state, features)) return;
  if (inputs.length === 1) {
    if (novel(state, features)) {
      state.pool.push(inputs[0] as string);
      state.kept.push(inputs[0] as string);
    }
    return;
  }
  const half = Math.ceil(inputs.length / 2);
  for (const part of [inputs.slice(0, half), inputs.slice(half)]) await bisect(state, part, await coverageOf(state, part));
}

/** Runs `inputs` as one batch, judging each; when the batch reaches a new block, bisects it to keep the inputs that did. */
async function runBatch(state: State, inputs: readonly string[]): Promise<void> {
  await takeFeatures();
  const start = performance.now();
  for (const input of inputs) {
    const finding = await check(state.target, input);
    if (finding !== undefined) record(state, input, finding);
  }
  state.ms += performance.now() - start;
  state.runs += inputs.length;
  await bisect(state, inputs, await takeFeatures());
}

/** Coverage of each text, run one at a time from fresh counters. */
async function featuresOf(target: FuzzTarget, texts: readonly string[]): Promise<Set<string>[]> {
  const out: Set<string>[] = [];
  for (const t of texts) {
    await takeFeatures();
    await check(target, t);
    out.push(await takeFeatures());
  }
  return out;
}

/** Writes the kept inputs to the corpus, then keeps the smallest `cov-` files that cover what all of them cover (regress- files always stay). */
async function saveCorpus(state: State): Promise<string> {
  const dir = join(CORPUS_DIR, state.target.name);
  mkdirSync(dir, { recursive: true });
  for (const text of state.kept) if (Buffer.byteLength(text) <= MAX_FILE_BYTES) writeFileSync(join(dir, `cov-${sha1(text)}.txt`), text);
  const entries = readCorpus(state.target.name);
  const regress = entries.filter((e) => !e.file.split('/').pop()?.startsWith('cov-'));
  const cov = entries.filter((e) => e.file.split('/').pop()?.startsWith('cov-')).sort((a, b) => a.text.length - b.text.length || a.file.localeCompare(b.file));
  const covered = new Set<string>();
  for (const fs of await featuresOf(state.target, regress.map((e) => e.text))) for (const f of fs) covered.add(f);
  const covFeatures = await featuresOf(state.target, cov.map((e) => e.text));
  const keep = new Set<string>();
  for (let round = 0; round < cov.length; round++) {
    // Greedy set cover: the entry adding the most, the smaller on a tie.
    let best = -1;
    let bestGain = 0;
    cov.forEach((e, i) => {
      if (keep.has(e.file)) return;
      let gain = 0;
      for (const f of covFeatures[i] as Set<string>) if (!covered.has(f)) gain++;
      if (gain > bestGain) {
        best = i;
        bestGain = gain;
      }
    });
    if (best < 0 || keep.size + regress.length >= MAX_FILES) break;
    keep.add((cov[best] as { file: string }).file);
    for (const f of covFeatures[best] as Set<string>) covered.add(f);
  }
  let removed = 0;
  for (const e of cov) {
    if (!keep.has(e.file)) {
      unlinkSync(join(ROOT, e.file));
      removed++;
    }
  }
  const files = readdirSync(dir);
  const bytes = files.reduce((n, f) => n + statSync(join(dir, f)).size, 0);
  return `${files.length} files, ${bytes} bytes (${keep.size} cov- kept, ${removed} dropped as covered by others)`;
}

async function main(): Promise<void> {
  let args: Args;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (error) {
    console.error(`npm run fuzz: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 2;
    return;
  }
  session.connect();
  await post('Profiler.enable');
  await post('Profiler.startPreciseCoverage', { callCount: true, detailed: true });
  const states: State[] = [];
  for (const target of args.targets) {
    const state: State = { target, features: new Set(), blocks: new Set(), pool: [], kept: [], found: new Map(), runs: 0, ms: 0 };
    const start = [...target.seeds(), ...readCorpus(target.name).map((e) => e.text)];
    for (const input of start) {
      const finding = await check(target, input);
      if (finding !== undefined) record(state, input, finding);
    }
    for (const fs of await featuresOf(target, start)) novel(state, fs);
    state.pool.push(...start);
    states.push(state);
    console.log(`${target.name}: ${start.length} seeds and corpus files reach ${state.features.size} features`);
  }
  const deadline = Date.now() + args.minutes * 60_000;
  let seed = args.seed;
  console.log(`fuzzing ${states.map((s) => s.target.name).join(', ')} for ${args.minutes} min (seed ${args.seed})`);
  while (Date.now() < deadline) {
    for (const state of states) {
      const sliceEnd = Math.min(deadline, Date.now() + SLICE_MS);
      while (Date.now() < sliceEnd) {
        const arb = fc.oneof({ weight: 1, arbitrary: state.target.arbitrary }, { weight: 2, arbitrary: mutatedArb(state.pool, state.target.dictionary) });
        await runBatch(state, fc.sample(arb, { numRuns: BATCH, seed: seed++ }));
      }
    }
    const line = states.map((s) => `${s.target.name} ${s.runs} runs ${s.features.size} features +${s.kept.length}${s.found.size > 0 ? ` ${s.found.size} FOUND` : ''}`).join(' | ');
    process.stdout.write(`\r${line}`);
  }
  console.log(`\n\ncoverage bookkeeping: ${takes} takes, ${Math.round(coverageMs)} ms of ${Math.round(args.minutes * 60_000)} ms`);
  let found = 0;
  for (const s of states) {
    const rate = s.ms > 0 ? Math.round((s.runs / s.ms) * 1000) : 0;
    const saved = args.save ? `; corpus: ${await saveCorpus(s)}` : '';
    console.log(`${s.target.name}: ${s.runs} inputs (${rate}/s while running), ${s.features.size} features, ${s.kept.length} inputs reached new ones, ${s.found.size} findings${saved}`);
    for (const f of s.found.values()) console.log(`  finding: ${relative(ROOT, f)}`);
    found += s.found.size;
  }
  await post('Profiler.stopPreciseCoverage');
  session.disconnect();
  process.exitCode = found > 0 ? 1 : 0;
}

await main();
