import { describe, expect, it } from 'vitest';
import { extractBlocks, planOf, where } from './blocks.js';

const md = [
  '# Page', //                                    1
  '', //                                          2
  '```ts', //                                     3
  "import { createLimiter } from 'ratecontract';", // 4
  '```', //                                       5
  '', //                                          6
  '<!-- fragment: a synopsis -->', //             7
  '```sh', //                                     8
  'npx ratecontract check [--config FILE]', //    9
  '```', //                                       10
  '<!-- run -->', //                              11
  '<!-- prelude', //                              12
  'declare const limiter: unknown;', //           13
  '-->', //                                       14
  '```js', //                                     15
  'console.log(limiter);', //                     16
  '```', //                                       17
  '- a list item:', //                            18
  '', //                                          19
  '  ```yaml', //                                 20
  '  limits: []', //                              21
  '  ```', //                                     22
  '', //                                          23
  '<!-- fragment -->', //                         24
  '', //                                          25
  '````text', //                                  26
  '```', //                                       27
  'still inside', //                              28
  '````', //                                      29
  '~~~yaml', //                                   30
  'domain: messaging', //                         31
  '~~~', //                                       32
].join('\n');

describe('the docs examples extractor', () => {
  const blocks = extractBlocks('docs/page.md', md);

  it('finds every fence, with its line, language and body (indented and longer fences too)', () => {
    expect(blocks.map((b) => [b.line, b.lang, b.body])).toEqual([
      [3, 'ts', "import { createLimiter } from 'ratecontract';"],
      [8, 'sh', 'npx ratecontract check [--config FILE]'],
      [15, 'js', 'console.log(limiter);'],
      [20, 'yaml', 'limits: []'],
      [26, 'text', '```\nstill inside'],
      [30, 'yaml', 'domain: messaging'],
    ]);
  });

  it('reads the markers directly above a fence, and only those', () => {
    expect(blocks.map((b) => [b.fragment, b.run, b.prelude])).toEqual([
      [undefined, false, undefined],
      ['a synopsis', false, undefined],
      [undefined, true, 'declare const limiter: unknown;'],
      [undefined, false, undefined],
      // A blank line between the comment and the fence: the comment marks nothing.
      [undefined, false, undefined],
      [undefined, false, undefined],
    ]);
  });

  it('plans each block by its language and markers; another kind unmarked is a failure', () => {
    expect(blocks.map((b) => planOf(b).kind)).toEqual(['typecheck', 'fragment', 'typecheck', 'contract', 'unmarked', 'rls-config']);
    expect(planOf(blocks[2] as (typeof blocks)[number])).toEqual({ kind: 'typecheck', ext: 'js', run: true });
    expect(where(blocks[2] as (typeof blocks)[number], 0)).toBe('docs/page.md:16');
  });
});
