/**
 * The kept corpus (test/fuzz/corpus/<target>/) and the seeds read from the
 * repository's fixtures and the docs' examples.
 *
 * Corpus files are inputs as text, one input per file, UTF-8. Two kinds:
 * `regress-<what>.txt`, written by hand for a defect the fuzzers found (kept
 * forever), and `cov-<sha1>.txt`, written by `npm run fuzz -- --save` for an
 * input that reached code no other corpus input reached (replaced when a
 * smaller set covers the same). Bounds: at most `MAX_FILES` files and
 * `MAX_FILE_BYTES` per file per target, `MAX_TOTAL_BYTES` in all;
 * test/fuzz/corpus.test.ts holds them.
 */
import { readdirSync, readFileSync, statSync, existsSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { extractBlocks, planOf } from '../unit/docs/blocks.js';

/** The repository's root. */
export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** test/fuzz/corpus. */
export const CORPUS_DIR = join(ROOT, 'test', 'fuzz', 'corpus');

/** Most corpus files of one target. */
export const MAX_FILES = 40;
/** Largest corpus file, bytes. */
export const MAX_FILE_BYTES = 4096;
/** The whole corpus, bytes. */
export const MAX_TOTAL_BYTES = 384 * 1024;

/** One kept input. */
export interface CorpusEntry {
  /** Path relative to the repository, for messages. */
  readonly file: string;
  readonly text: string;
}

/** The corpus of `target`, sorted by name (empty when it has none yet). */
export function readCorpus(target: string): CorpusEntry[] {
  const dir = join(CORPUS_DIR, target);
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((n) => n.endsWith('.txt'))
    .sort()
    .map((n) => ({ file: relative(ROOT, join(dir, n)), text: readFileSync(join(dir, n), 'utf8') }));
}

/** Every file's text in `dir` (relative to the root) whose name ends in one of `exts`, sorted by name. */
export function filesIn(dir: string, exts: readonly string[]): string[] {
  const abs = join(ROOT, dir);
  if (!existsSync(abs)) return [];
  const out: string[] = [];
  for (const n of readdirSync(abs).sort()) {
    const p = join(abs, n);
    if (statSync(p).isDirectory()) out.push(...filesIn(join(dir, n), exts));
    else if (exts.some((e) => n.endsWith(e))) out.push(readFileSync(p, 'utf8'));
  }
  return out;
}

let docBlocksCache: ReturnType<typeof extractBlocks> | undefined;

/** The fenced blocks of README.md and docs/*.md. */
function docBlocks(): ReturnType<typeof extractBlocks> {
  if (docBlocksCache !== undefined) return docBlocksCache;
  const files = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((n) => n.endsWith('.md')).map((n) => join('docs', n))];
  docBlocksCache = files.flatMap((f) => extractBlocks(f, readFileSync(join(ROOT, f), 'utf8')));
  return docBlocksCache;
}

/** The docs' contract files (`yaml` blocks without a top-level `domain:`). */
export function docContracts(): string[] {
  return docBlocks().filter((b) => planOf(b).kind === 'contract').map((b) => b.body);
}

/** The docs' rate limit service configs (`yaml` blocks with a top-level `domain:`). */
export function docRlsConfigs(): string[] {
  return docBlocks().filter((b) => planOf(b).kind === 'rls-config').map((b) => b.body);
}

/** Every inline code span and block line of the docs that matches `pattern`, for seeds such as header values. */
export function docLines(pattern: RegExp): string[] {
  const out = new Set<string>();
  for (const b of docBlocks()) for (const line of b.body.split('\n')) if (pattern.test(line)) out.add(line.trim());
  return [...out];
}
