import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, resolve } from 'node:path';
import type * as YamlModule from 'yaml';
import type { Document, LineCounter } from 'yaml';
import { ConfigError } from '../core/errors.js';
import { ConfigFileError } from './errors.js';
import { verifyKeyFiles } from './key-files.js';
import type { RateContractConfig } from './types.js';
import { parsePath, validateConfig } from './validate.js';

/** Options of `parseConfig`. */
export interface ParseConfigOptions {
  /** The name used in messages, for example `ratecontract.yaml`. */
  readonly file: string;
  /** Folder that relative paths in the file are resolved against. Default: the folder of `file`. */
  readonly baseDir?: string | undefined;
  /** Also read the files the config names (JWT keys) and check they hold keys. Default false; `loadConfig` sets it. */
  readonly checkFiles?: boolean | undefined;
}

type Yaml = typeof YamlModule;
let yaml: Yaml | null | undefined;
/**
 * `yaml` is an optional peer: loaded on the first parse. Without it, a
 * contract written as JSON still loads (with no line numbers in messages);
 * a YAML one is refused with an error that says what to install.
 */
function loadYaml(): Yaml | undefined {
  if (yaml === undefined) {
    try {
      yaml = createRequire(import.meta.url)('yaml') as Yaml;
    } catch {
      yaml = null;
    }
  }
  return yaml ?? undefined;
}

/** Line and column of the value at `option` in the document, or of its nearest enclosing value that exists. */
function position(y: Yaml, doc: Document, lines: LineCounter, option: string): { line: number; column: number } | undefined {
  const { isMap, isNode, isScalar } = y;
  const path = parsePath(option);
  // A named option: point at its key (an unknown or misspelt option is the key itself).
  const last = path[path.length - 1];
  if (typeof last === 'string') {
    const parent: unknown = path.length === 1 ? doc.contents : doc.getIn(path.slice(0, -1), true);
    if (isMap(parent)) {
      const pair = parent.items.find((p) => isScalar(p.key) && p.key.value === last);
      if (pair !== undefined && isNode(pair.key) && pair.key.range) {
        const { line, col } = lines.linePos(pair.key.range[0]);
        return { line, column: col };
      }
    }
  }
  for (let n = path.length; n >= 0; n--) {
    const node: unknown = n === 0 ? doc.contents : doc.getIn(path.slice(0, n), true);
    if (isNode(node) && node.range !== undefined && node.range !== null) {
      const { line, col } = lines.linePos(node.range[0]);
      return { line, column: col };
    }
  }
  return undefined;
}

/**
 * The first alias that refers to a node containing it (`a: &a [*a]`), which
 * would make the data a cycle, with its line and column; `undefined` when
 * there is none. An alias can only name an anchor before it, so a cycle
 * always goes through such an alias. One pass in document order, keeping
 * the latest node of each anchor (as yaml resolves them).
 */
export function cyclicAlias(doc: Document, lines: LineCounter): { line: number; column: number } | undefined {
  const y = loadYaml();
  if (y === undefined) return undefined;
  const { isAlias, visit } = y;
  let found: { line: number; column: number } | undefined;
  const anchors = new Map<string, unknown>();
  visit(doc, {
    Node(_key, node, path) {
      if (!isAlias(node)) {
        if (node.anchor !== undefined) anchors.set(node.anchor, node);
        return undefined;
      }
      const target = anchors.get(node.source);
      if (target === undefined || !path.includes(target as never)) return undefined;
      const { line, col } = lines.linePos(node.range?.[0] ?? 0);
      found = { line, column: col };
      return visit.BREAK;
    },
  });
  return found;
}

/**
 * Parses and validates a config file's text (YAML 1.2, or JSON, which is
 * YAML too). Returns the typed config; throws a `ConfigFileError` naming the
 * file, the path inside it, what is wrong and the line.
 */
export function parseConfig(text: string, options: ParseConfigOptions): RateContractConfig {
  const y = loadYaml();
  if (y === undefined) return parseJson(text, options);
  const { file } = options;
  const lines = new y.LineCounter();
  const doc = y.parseDocument(text, { lineCounter: lines, prettyErrors: true, uniqueKeys: true, strict: true, merge: false, version: '1.2' });
  const problem = doc.errors[0] ?? doc.warnings[0];
  if (problem !== undefined) {
    const at = problem.linePos?.[0];
    const detail = problem.message.split('\n')[0]?.replace(/ at line \d+, column \d+:?$/, '') ?? 'invalid YAML';
    const where = at === undefined ? undefined : { line: at.line, column: at.col };
    throw new ConfigFileError('RC_CONFIG_SYNTAX', file, '', `${where === undefined ? '' : `line ${where.line}, column ${where.column}: `}${detail}`, where);
  }
  const cycle = cyclicAlias(doc, lines);
  if (cycle !== undefined) throw new ConfigFileError('RC_CONFIG_SYNTAX', file, '', `line ${cycle.line}, column ${cycle.column}: an alias refers to a collection that contains it, which would make the data endless`, cycle);
  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: 100 });
  } catch (error) {
    throw new ConfigFileError('RC_CONFIG_SYNTAX', file, '', error instanceof Error ? error.message : String(error), undefined, { cause: error });
  }
  return validated(data, options, (option) => position(y, doc, lines, option));
}

/** Validates parsed data; a `ConfigError` becomes a `ConfigFileError` at the option's place in the file, where known. */
function validated(data: unknown, options: ParseConfigOptions, at: (option: string) => { line: number; column: number } | undefined): RateContractConfig {
  const { file } = options;
  try {
    const config = validateConfig(data, { file, baseDir: options.baseDir ?? dirname(resolve(file)) });
    if (options.checkFiles === true) verifyKeyFiles(config);
    return config;
  } catch (error) {
    if (error instanceof ConfigError) {
      const detail = error.message.startsWith(`${error.option}: `) ? error.message.slice(error.option.length + 2) : error.message;
      throw new ConfigFileError(error.code, file, error.option, detail, at(error.option), { cause: error });
    }
    throw error;
  }
}

/** Without the `yaml` peer: the text must be JSON. */
function parseJson(text: string, options: ParseConfigOptions): RateContractConfig {
  const { file } = options;
  if (!/^\s*[{[]/.test(text)) {
    throw new ConfigFileError(
      'RC_CONFIG_SYNTAX',
      file,
      '',
      'this contract is not JSON, and reading YAML needs the `yaml` package (an optional peer dependency of ratecontract): npm install yaml',
      undefined,
    );
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw new ConfigFileError('RC_CONFIG_SYNTAX', file, '', error instanceof Error ? error.message : String(error), undefined, { cause: error });
  }
  return validated(data, options, () => undefined);
}

/** Reads, parses and validates a config file, and checks the key files it names. An unreadable file throws a `ConfigFileError` with code `RC_CONFIG_UNREADABLE`. */
export async function loadConfig(path: string): Promise<RateContractConfig> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    // Node's text without the syscall and path: "ENOENT: no such file or directory".
    const reason = error instanceof Error && 'code' in error ? `${String(error.code)}: ${error.message.replace(/^[A-Z]+: /, '').split(',')[0] ?? ''}` : String(error);
    throw new ConfigFileError('RC_CONFIG_UNREADABLE', path, '', `cannot read the file (${reason})`, undefined, { cause: error });
  }
  return parseConfig(text, { file: path, checkFiles: true });
}
