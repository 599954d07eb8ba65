import { describe, expect, it } from 'vitest';
import { ArgumentError, formatUsage, integerOption, parseCommandArgs, processIo, runCommand, type Command, type ParsedArgs } from '../../../packages/cli/src/cli/args.js';

let ran: ParsedArgs | undefined;

const demo: Command = {
  name: 'demo',
  summary: 'a command for the tests',
  positionals: '[FILE...]',
  options: {
    config: { type: 'string', value: 'FILE', description: 'the config file', default: 'the built-in demo' },
    json: { type: 'boolean', description: 'print JSON' },
    count: { type: 'string', value: 'N', description: 'how many' },
  },
  details: 'More words.',
  run(args) {
    ran = args;
    return integerOption(args, 'count', 1, 1, 9) > 5 ? 1 : 0;
  },
};

const bare: Command = { name: 'bare', summary: 'no positionals', options: {}, run: () => 0 };

const file: Command = {
  name: 'file',
  summary: 'one file, as an argument or --config',
  fileOption: 'config',
  options: { config: { type: 'string', value: 'FILE', description: 'the file', default: 'none' }, json: { type: 'boolean', description: 'print JSON' } },
  run: () => 0,
};

describe('parseCommandArgs', () => {
  it('reads --opt value, --opt=value, flags and positionals, and stops options at --', () => {
    expect(parseCommandArgs(demo, ['--config', 'a.yaml', 'x', '--json', '--count=3', '--', '--not-an-option'])).toEqual({
      values: { config: 'a.yaml', json: true, count: '3' },
      positionals: ['x', '--not-an-option'],
    });
    // A value may start with a single dash (stdin is '-').
    expect(parseCommandArgs(demo, ['--config', '-'])).toEqual({ values: { config: '-' }, positionals: [] });
  });

  it('answers help for --help or -h anywhere before --', () => {
    expect(parseCommandArgs(demo, ['--json', '-h'])).toBe('help');
    expect(parseCommandArgs(demo, ['--nope', '--help'])).toBe('help');
    expect(parseCommandArgs(demo, ['--', '--help'])).toEqual({ values: {}, positionals: ['--help'] });
  });

  it.each([
    [['--nope'], 'unknown option --nope'],
    [['-q'], 'unknown option -q'],
    [['--config'], 'option --config needs a value (--config FILE)'],
    [['--config', '--json'], 'option --config needs a value'],
    [['--json=false'], 'option --json takes no value'],
    [['--json', '--json'], 'option --json is given twice'],
  ])('%j: %s', (argv, message) => {
    expect(() => parseCommandArgs(demo, argv)).toThrow(ArgumentError);
    expect(() => parseCommandArgs(demo, argv)).toThrow(message);
  });

  it('refuses positionals when the command takes none', () => {
    expect(() => parseCommandArgs(bare, ['x'])).toThrow('unexpected argument "x"');
  });

  it.each([
    [['--jsno'], 'unknown option --jsno; did you mean --json?'],
    [['--JSON'], 'unknown option --JSON; did you mean --json?'],
    [['--conf=a.yaml'], 'unknown option --conf; did you mean --config?'],
    [['-json'], 'unknown option -json; did you mean --json?'],
    [['-j'], 'unknown option -j'],
    [['--zzz'], 'unknown option --zzz'],
    [['--hepl'], 'unknown option --hepl; did you mean --help?'],
  ])('%j: %s (hints from the command\'s own options)', (argv, message) => {
    let thrown: unknown;
    try {
      parseCommandArgs(file, argv);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ArgumentError);
    expect((thrown as ArgumentError).message).toBe(message);
  });

  it('fileOption: one argument is that option; the same file both ways is one; two files are refused', () => {
    expect(parseCommandArgs(file, ['a.yaml'])).toEqual({ values: { config: 'a.yaml' }, positionals: [] });
    expect(parseCommandArgs(file, ['a.yaml', '--json'])).toEqual({ values: { config: 'a.yaml', json: true }, positionals: [] });
    expect(parseCommandArgs(file, ['--config', 'a.yaml', './a.yaml'])).toEqual({ values: { config: 'a.yaml' }, positionals: [] });
    expect(parseCommandArgs(file, ['--', '-odd.yaml'])).toEqual({ values: { config: '-odd.yaml' }, positionals: [] });
    expect(() => parseCommandArgs(file, ['a.yaml', '--config', 'b.yaml'])).toThrow('two files given: "a.yaml" (FILE) and --config "b.yaml"; give one');
    expect(() => parseCommandArgs(file, ['a.yaml', 'b.yaml'])).toThrow('unexpected argument "b.yaml": give one FILE');
    expect(() => parseCommandArgs(file, ['a.yaml', 'json'])).toThrow('unexpected argument "json": give one FILE; did you mean --json?');
    expect(() => parseCommandArgs(bare, ['help'])).toThrow('unexpected argument "help"; did you mean --help?');
  });

  it('a value error thrown by a command is tied to that command for its usage', async () => {
    await expect(runCommand(demo, ['--count', '12'], processIo())).rejects.toMatchObject({ message: '--count must be an integer from 1 to 9, got "12"', command: demo });
    expect(await runCommand(demo, ['--count', '7'], processIo())).toBe(1);
    expect(ran?.values.count).toBe('7');
  });
});

describe('formatUsage', () => {
  it('prints the synopsis, the summary, every option with its default, -h, and the details', () => {
    expect(formatUsage(demo)).toBe(
      [
        'usage: ratecontract demo [options] [FILE...]',
        '',
        'a command for the tests',
        '',
        'options:',
        '  --config FILE  the config file (default the built-in demo)',
        '  --json         print JSON',
        '  --count N      how many',
        '  -h, --help     print this help and exit',
        '',
        'More words.',
      ].join('\n'),
    );
    expect(formatUsage(demo, true)).not.toContain('More words.');
    expect(formatUsage(file).split('\n').slice(0, 6)).toEqual([
      'usage: ratecontract file [options] [FILE]',
      '',
      'one file, as an argument or --config',
      '',
      'options:',
      '  --config FILE  the file, also given alone as FILE (default none)',
    ]);
    expect(formatUsage(bare)).toBe(['usage: ratecontract bare', '', 'no positionals', '', 'options:', '  -h, --help  print this help and exit'].join('\n'));
  });
});
