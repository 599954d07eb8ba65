/** The kept corpus stays small and named: the bounds of corpus.ts, one folder per target. */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CORPUS_DIR, MAX_FILE_BYTES, MAX_FILES, MAX_TOTAL_BYTES } from './corpus.js';
import { TARGETS } from './targets/index.js';

describe('fuzz corpus', () => {
  const folders = readdirSync(CORPUS_DIR);

  it('has a folder only for a target (or servers, the raw HTTP requests of servers.test.ts)', () => {
    const names = new Set([...TARGETS.map((t) => t.name), 'servers']);
    expect(folders.filter((f) => !names.has(f))).toEqual([]);
  });

  it(`holds at most ${MAX_FILES} files of at most ${MAX_FILE_BYTES} bytes per target, ${MAX_TOTAL_BYTES} bytes in all, named regress-<what>.txt or cov-<sha1>.txt`, () => {
    let total = 0;
    const problems: string[] = [];
    for (const folder of folders) {
      const files = readdirSync(join(CORPUS_DIR, folder));
      if (files.length > MAX_FILES) problems.push(`${folder}: ${files.length} files`);
      for (const f of files) {
        const size = statSync(join(CORPUS_DIR, folder, f)).size;
        total += size;
        if (size > MAX_FILE_BYTES) problems.push(`${folder}/${f}: ${size} bytes`);
        if (!/^(regress-[a-z0-9-]+|cov-[0-9a-f]{12})\.txt$/.test(f)) problems.push(`${folder}/${f}: not regress-<what>.txt or cov-<sha1>.txt`);
      }
    }
    expect(problems).toEqual([]);
    expect(total).toBeLessThanOrEqual(MAX_TOTAL_BYTES);
  });
});
