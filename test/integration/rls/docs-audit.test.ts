/**
 * docs/rls.md shows what `ratecontract audit --rls` prints for its Config
 * example (with `purpose: abuse` added to the second rule), and the error
 * for an unacknowledged abuse rule that fails open. The built command must
 * print exactly that.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../../helpers/paths.js';
import { runCli } from '../../unit/cli/helpers.js';

let doc = '';
let dir = '';

/** The fenced block of `lang` that follows `heading` (and `after`, when given). */
function block(heading: string, lang: string, after = ''): string {
  const from = doc.indexOf(heading);
  const start = doc.indexOf(`\`\`\`${lang}\n`, after === '' ? from : doc.indexOf(after, from));
  expect(from).toBeGreaterThanOrEqual(0);
  const body = start + lang.length + 4;
  return doc.slice(body, doc.indexOf('```', body));
}

beforeAll(async () => {
  doc = await readFile(join(ROOT, 'docs', 'rls.md'), 'utf8');
  dir = await mkdtemp(join(tmpdir(), 'rc-rls-docs-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('docs/rls.md, audit --rls as printed', () => {
  const config = (): string => block('## Config', 'yaml');

  it('the Config file: both rules get the drop-in default and nothing else', async () => {
    await writeFile(join(dir, 'messaging.yaml'), config());
    const r = await runCli(['audit', '--rls', '--config', 'messaging.yaml'], { cwd: dir });
    expect(r.code, r.stderr).toBe(0);
    const findings = r.stdout.slice(r.stdout.indexOf('findings:')).trim().split('\n');
    expect(findings.slice(1).map((l) => l.split(/\s+/)[1])).toEqual(['RC_AUDIT_DEFAULT_PURPOSE', 'RC_AUDIT_DEFAULT_PURPOSE']);
  });

  it('with purpose: abuse on the second rule, it ends with the findings the page shows', async () => {
    const text = config().replace('requests_per_unit: 100 }', 'requests_per_unit: 100, purpose: abuse }');
    expect(text).toContain('purpose: abuse');
    await writeFile(join(dir, 'messaging.yaml'), text);
    const r = await runCli(['audit', '--rls', '--config', 'messaging.yaml'], { cwd: dir });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.slice(r.stdout.indexOf('findings:'))).toBe(block('## Audit', 'text'));
  });

  it('an abuse rule that fails open without an acknowledgement: the error line the page shows, exit 2', async () => {
    await writeFile(join(dir, 'messaging.yaml'), config().replace('requests_per_unit: 100 }', 'requests_per_unit: 100, purpose: abuse, onError: open }'));
    const r = await runCli(['audit', '--rls', '--config', 'messaging.yaml'], { cwd: dir });
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(block('### One contract model, one compiler', 'text'));
  });
});
