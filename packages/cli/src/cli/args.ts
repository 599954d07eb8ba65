import { resolve } from 'node:path';
import type { Readable } from 'node:stream';
import { parseArgs } from 'node:util';
import { parseDuration } from 'ratecontract';
import { closest } from 'ratecontract/internal';

/**
 * The shared shape of every subcommand: it declares its options and usage
 * once, in a `Command`, and `runCommand` parses `argv` against it (with
 * `node:util` `parseArgs`), answers `--help` / `-h` with the usage on stdout,
 * and turns every mistake into an `ArgumentError` that `run` (run.ts) prints to
 * stderr with the usage, exit code 2, never a stack trace. Every command's
 * unknown options and stray arguments are refused here, in one wording, with
 * a did-you-mean hint when an option is close.
 *
 * Adding a command: write `src/cli/<name>.ts` exporting a `Command`, add it
 * to `COMMANDS` in `run.ts`, which lists it in `ratecontract help` and runs it.
 * A command reads and writes through the `CommandIo` it is handed, never
 * `process.stdout` itself, so that `run` works in-process as well as in the
 * `ratecontract` process (`main.ts`).
 */

/** Something a command writes text to: a process's stdout or stderr, or a test's buffer. */
export interface TextSink {
  write(text: string): unknown;
}

/** Where a command reads (`-` for a log or a trace) and writes: the process's streams in `main.ts`, others in tests. */
export interface CommandIo {
  readonly stdin: Readable;
  readonly stdout: TextSink;
  readonly stderr: TextSink;
}

/** The process's own streams. `stdin` is looked up only when a command reads it (`-`). */
export function processIo(): CommandIo {
  return {
    get stdin(): Readable {
      return process.stdin;
    },
    stdout: process.stdout,
    stderr: process.stderr,
  };
}

/** One option of a command. Every option is long (`--name`); values are strings until the command checks them. */
export interface OptionSpec {
  /** `string` takes a value (`--limit 5` or `--limit=5`); `boolean` is a flag. */
  readonly type: 'string' | 'boolean';
  /** Placeholder of the value in the usage (`N`, `FILE`). Default `VALUE`. */
  readonly value?: string;
  /** One line on what it does; the default goes in `default`. */
  readonly description: string;
  /** The default as the user would type it, shown in the usage. */
  readonly default?: string;
}

/** What a parsed command line holds: every given option by name (strings and `true`), and the positionals. */
export interface ParsedArgs {
  readonly values: Readonly<Record<string, string | true | undefined>>;
  readonly positionals: readonly string[];
}

/** A subcommand: its usage, its options, and what it does with them. */
export interface Command {
  readonly name: string;
  /** One line for `ratecontract help`. */
  readonly summary: string;
  /** Positionals in the synopsis, for example `[FILE...]`; the command reads them from `positionals`. Commands without positionals (or `fileOption`) refuse them. */
  readonly positionals?: string;
  /**
   * The string option that one argument stands for: with `'config'`,
   * `check FILE` is `check --config FILE`. One such argument is taken; the
   * same file given both ways is accepted, two different ones are refused.
   */
  readonly fileOption?: string;
  readonly options: Readonly<Record<string, OptionSpec>>;
  /** Paragraphs printed after the options in `--help`. */
  readonly details?: string;
  /** Runs the command with checked arguments, reading and writing through `io`; resolves to the exit code. */
  run(args: ParsedArgs, io: CommandIo): Promise<number> | number;
}

/**
 * A mistake on the command line: an unknown option, a missing or bad value.
 * `run` (run.ts) prints `ratecontract <command>: <message>` and the command's
 * usage to stderr and exits 2.
 */
export class ArgumentError extends Error {
  /** The command whose usage to print, when known. */
  readonly command: Command | undefined;

  constructor(message: string, command?: Command) {
    super(message);
    this.name = 'ArgumentError';
    this.command = command;
  }
}

/** Exit code for bad usage (unknown command or option, bad value). */
export const EXIT_USAGE = 2;

const HELP = new Set(['help', 'h']);

/**
 * `'; did you mean --json?'` when `word` (its dashes and any `=value` dropped)
 * is close to an option of `command` (a small edit away, or the start of only
 * one of them, 3 characters or more), else `''`.
 */
function optionHint(command: Command, word: string): string {
  const bare = word.replace(/^-+/, '').replace(/=.*$/s, '');
  if (bare === '') return '';
  const names = [...Object.keys(command.options), 'help'];
  const starts = bare.length >= 3 ? names.filter((n) => n.startsWith(bare.toLowerCase())) : [];
  const hit = closest(bare, names) ?? (starts.length === 1 ? starts[0] : undefined);
  return hit === undefined ? '' : `; did you mean --${hit}?`;
}

/**
 * Parses `argv` against `command.options`. Returns `'help'` when `--help` or
 * `-h` is anywhere before a `--` (help wins over every other mistake), else the
 * values. Throws `ArgumentError` for an unknown option (`unknown option --x`,
 * with a did-you-mean hint when an option is close), a string option without
 * a value (`--limit` last, or followed by another `--option`), a value given to
 * a flag (`--json=1`), an option given twice, or an argument the command does
 * not take (`unexpected argument "x"`). A command's `fileOption` takes one
 * argument as that option's value.
 */
export function parseCommandArgs(command: Command, argv: readonly string[]): ParsedArgs | 'help' {
  // Non-strict with tokens, so that every mistake gets our message naming the
  // option, and so that --help is seen even next to an unknown option.
  const { tokens } = parseArgs({
    args: [...argv],
    options: Object.fromEntries(Object.entries(command.options).map(([name, o]) => [name, { type: o.type }])),
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  if (tokens.some((t) => t.kind === 'option' && HELP.has(t.name))) return 'help';
  const values: Record<string, string | true> = {};
  const positionals: string[] = [];
  const takes = command.positionals !== undefined ? Infinity : command.fileOption !== undefined ? 1 : 0;
  for (const token of tokens) {
    if (token.kind === 'option-terminator') continue;
    if (token.kind === 'positional') {
      if (positionals.length >= takes) {
        const given = takes === 1 ? `: give one ${command.options[command.fileOption ?? '']?.value ?? 'FILE'}` : '';
        throw new ArgumentError(`unexpected argument ${JSON.stringify(token.value)}${given}${optionHint(command, token.value)}`, command);
      }
      positionals.push(token.value);
      continue;
    }
    const spec = Object.hasOwn(command.options, token.name) ? command.options[token.name] : undefined;
    if (spec === undefined) {
      // A short group (`-json` is -j -s -o -n to parseArgs) is named as it was typed.
      const typed = token.rawName.startsWith('--') ? token.rawName : (argv[token.index] ?? token.rawName);
      throw new ArgumentError(`unknown option ${typed}${optionHint(command, typed)}`, command);
    }
    if (Object.hasOwn(values, token.name)) throw new ArgumentError(`option ${token.rawName} is given twice`, command);
    if (spec.type === 'boolean') {
      if (token.value !== undefined) throw new ArgumentError(`option ${token.rawName} takes no value`, command);
      values[token.name] = true;
    } else {
      // parseArgs takes the next argument whatever it is; `--limit --json` means a forgotten value.
      if (token.value === undefined || (!token.inlineValue && token.value.startsWith('--'))) {
        throw new ArgumentError(`option ${token.rawName} needs a value (${token.rawName} ${spec.value ?? 'VALUE'})`, command);
      }
      values[token.name] = token.value;
    }
  }
  const file = command.fileOption;
  if (file !== undefined && command.positionals === undefined) {
    const [arg] = positionals;
    if (arg !== undefined) {
      const option = values[file];
      if (typeof option === 'string' && resolve(option) !== resolve(arg)) {
        throw new ArgumentError(`two files given: ${JSON.stringify(arg)} (${command.options[file]?.value ?? 'FILE'}) and --${file} ${JSON.stringify(option)}; give one`, command);
      }
      values[file] = option ?? arg;
    }
    return { values, positionals: [] };
  }
  return { values, positionals };
}

/**
 * The `--help` text of a command, generated from its declaration. `brief`
 * leaves out the closing paragraphs (the form printed with a usage error).
 */
export function formatUsage(command: Command, brief = false): string {
  const entries = Object.entries(command.options);
  const synopsis = [`usage: ratecontract ${command.name}`];
  if (entries.length > 0) synopsis.push('[options]');
  if (command.positionals !== undefined) synopsis.push(command.positionals);
  else if (command.fileOption !== undefined) synopsis.push(`[${command.options[command.fileOption]?.value ?? 'FILE'}]`);
  const left = entries.map(([name, o]) => (o.type === 'string' ? `--${name} ${o.value ?? 'VALUE'}` : `--${name}`));
  left.push('-h, --help');
  const width = Math.max(...left.map((l) => l.length));
  const lines = [synopsis.join(' '), '', command.summary, '', 'options:'];
  entries.forEach(([name, o], i) => {
    const also = name === command.fileOption && command.positionals === undefined ? `, also given alone as ${o.value ?? 'FILE'}` : '';
    const text = o.default !== undefined ? `${o.description}${also} (default ${o.default})` : `${o.description}${also}`;
    lines.push(`  ${(left[i] ?? '').padEnd(width)}  ${text}`);
  });
  lines.push(`  ${'-h, --help'.padEnd(width)}  print this help and exit`);
  if (command.details !== undefined && !brief) lines.push('', command.details.trimEnd());
  return lines.join('\n');
}

/** Parses `argv` for `command`, prints its usage for `--help` (exit 0), else runs it. */
export async function runCommand(command: Command, argv: readonly string[], io: CommandIo): Promise<number> {
  const parsed = parseCommandArgs(command, argv);
  if (parsed === 'help') {
    io.stdout.write(formatUsage(command) + '\n');
    return 0;
  }
  try {
    return await command.run(parsed, io);
  } catch (error) {
    // Value checks deep in a command need not know which command they serve.
    if (error instanceof ArgumentError && error.command === undefined) throw new ArgumentError(error.message, command);
    throw error;
  }
}

/** A string option's value, or undefined when not given. */
export function stringOption(args: ParsedArgs, name: string): string | undefined {
  const v = args.values[name];
  return typeof v === 'string' ? v : undefined;
}

/** Whether a flag was given. */
export function flagOption(args: ParsedArgs, name: string): boolean {
  return args.values[name] === true;
}

/**
 * An integer option from `min` to `max`: the default when absent, an
 * `ArgumentError` naming the option for anything else.
 */
export function integerOption(args: ParsedArgs, name: string, fallback: number, min: number, max: number): number {
  const raw = stringOption(args, name);
  if (raw === undefined) return fallback;
  const n = /^[0-9]+$/.test(raw.trim()) ? Number(raw.trim()) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new ArgumentError(`--${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}`);
  }
  return n;
}

/** A positive duration option (`8ms`, `5s`, or integer ms): the default when absent, an `ArgumentError` naming the option otherwise. */
export function durationOption(args: ParsedArgs, name: string, fallback: string): number {
  const raw = stringOption(args, name) ?? fallback;
  try {
    const ms = parseDuration(/^\d+$/.test(raw.trim()) ? Number(raw.trim()) : raw, `--${name}`);
    if (ms <= 0) throw new Error(`--${name} must be positive, got ${JSON.stringify(raw)}`);
    return ms;
  } catch (error) {
    throw new ArgumentError(error instanceof Error ? error.message : String(error));
  }
}
