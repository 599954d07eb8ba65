/**
 * The fenced examples of README.md and docs/, and what the suite does with
 * each (the convention is in docs/README.md):
 *
 * - `ts`, `typescript`, `js`, `javascript`: type-checked against the packed
 *   package (`tsc --strict`, NodeNext); with `<!-- run -->` before the fence,
 *   also run, and it must exit 0.
 * - `yaml`, `yml`: a contract file, which `ratecontract check` and
 *   `ratecontract audit` must pass; a file with a top-level `domain:` is a
 *   rate limit service config, which `ratecontract audit --rls` must pass.
 * - `sh`, `bash`, `shell`: run with bash in the consumer project; it must
 *   exit 0.
 * - anything else, and any block marked `<!-- fragment -->` (or
 *   `<!-- fragment: why -->`): not run; an unmarked block of another kind
 *   is a failure.
 *
 * A `<!-- prelude ... -->` comment before a ts/js fence holds declarations
 * the example assumes (`declare const limiter: Limiter;`); they are put
 * before the block when it is type-checked, never shown.
 */

export interface DocBlock {
  /** The file, relative to the repository. */
  readonly file: string;
  /** 1-based line of the opening fence. */
  readonly line: number;
  /** The info string's first word, lower case (`''` for none). */
  readonly lang: string;
  /** The content, with the fence's indentation removed. */
  readonly body: string;
  /** 1-based line of the first content line. */
  readonly bodyLine: number;
  readonly fragment: string | undefined;
  readonly run: boolean;
  readonly prelude: string | undefined;
}

export type Plan =
  | { readonly kind: 'typecheck'; readonly ext: 'ts' | 'js'; readonly run: boolean }
  | { readonly kind: 'contract' }
  | { readonly kind: 'rls-config' }
  | { readonly kind: 'shell' }
  | { readonly kind: 'fragment'; readonly reason: string }
  | { readonly kind: 'unmarked' };

const FENCE = /^( {0,3}|\s*)(`{3,}|~{3,})\s*([^\s`]*)[^`]*$/;
const TS = new Set(['ts', 'typescript', 'mts']);
const JS = new Set(['js', 'javascript', 'mjs']);
const YAML = new Set(['yaml', 'yml']);
const SHELL = new Set(['sh', 'bash', 'shell']);

/** The HTML comments directly above line `index` (no blank line between), nearest last. */
function commentsAbove(lines: readonly string[], index: number): string[] {
  const found: string[] = [];
  let i = index - 1;
  while (i >= 0) {
    const text = lines[i]?.trim() ?? '';
    if (!text.endsWith('-->')) break;
    let start = i;
    while (start >= 0 && !(lines[start] ?? '').includes('<!--')) start--;
    if (start < 0) break;
    const joined = lines.slice(start, i + 1).map((l) => l.trim()).join('\n');
    const m = /^<!--([\s\S]*)-->$/.exec(joined);
    if (m?.[1] === undefined) break;
    found.unshift(m[1]);
    i = start - 1;
  }
  return found;
}

/** Every fenced block of one Markdown file, with its markers. */
export function extractBlocks(file: string, text: string): DocBlock[] {
  const lines = text.split('\n');
  const blocks: DocBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i] ?? '');
    if (open === null) continue;
    const indent = open[1]?.length ?? 0;
    const fence = open[2] ?? '```';
    const lang = (open[3] ?? '').toLowerCase();
    let end = i + 1;
    const close = new RegExp(`^\\s*${fence[0] === '`' ? '`' : '~'}{${String(fence.length)},}\\s*$`);
    while (end < lines.length && !close.test(lines[end] ?? '')) end++;
    const body = lines
      .slice(i + 1, end)
      .map((l) => l.slice(Math.min(indent, l.length - l.trimStart().length)))
      .join('\n');
    let fragment: string | undefined;
    let run = false;
    let prelude: string | undefined;
    for (const comment of commentsAbove(lines, i)) {
      const c = comment.trim();
      const frag = /^fragment(?::\s*([\s\S]*))?$/.exec(c);
      if (frag !== null) fragment = (frag[1] ?? '').trim() || 'a fragment';
      else if (c === 'run') run = true;
      else if (c.startsWith('prelude')) prelude = c.slice('prelude'.length).replace(/^\s*\n/, '');
    }
    blocks.push({ file, line: i + 1, lang, body, bodyLine: i + 2, fragment, run, prelude });
    i = end;
  }
  return blocks;
}

/** What the suite does with a block. */
export function planOf(block: DocBlock): Plan {
  if (block.fragment !== undefined) return { kind: 'fragment', reason: block.fragment };
  if (TS.has(block.lang)) return { kind: 'typecheck', ext: 'ts', run: block.run };
  if (JS.has(block.lang)) return { kind: 'typecheck', ext: 'js', run: block.run };
  if (YAML.has(block.lang)) return /^domain\s*:/m.test(block.body) ? { kind: 'rls-config' } : { kind: 'contract' };
  if (SHELL.has(block.lang)) return { kind: 'shell' };
  return { kind: 'unmarked' };
}

/** `docs/x.md:12`, as failures name a block. */
export function where(block: DocBlock, bodyOffset?: number): string {
  return `${block.file}:${String(bodyOffset === undefined ? block.line : block.bodyLine + bodyOffset)}`;
}
