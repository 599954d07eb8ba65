import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv, type ValidateFunction } from 'ajv';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { parseConfig } from '../../../packages/ratecontract/src/config/index.js';
import { DEMO_CONFIG_YAML } from '../../../packages/cli/src/contract/demo.js';
import { LIMIT_OPTIONS } from '../../../packages/ratecontract/src/core/compile.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const fixtures = fileURLToPath(new URL('./fixtures/', import.meta.url));
const schema = JSON.parse(readFileSync(`${root}packages/ratecontract/schema.json`, 'utf8')) as Record<string, unknown>;
// strictTypes/strictRequired only lint if/then subschemas; unknown keywords and formats stay errors.
const validateSchema: ValidateFunction = new Ajv({ strict: true, strictTypes: false, strictRequired: false }).compile(schema);

function files(dir: string): { name: string; text: string; expected: string | undefined }[] {
  return readdirSync(`${fixtures}${dir}`)
    .sort()
    .map((name) => {
      const text = readFileSync(`${fixtures}${dir}/${name}`, 'utf8');
      return { name, text, expected: /^# error: (.*)$/m.exec(text)?.[1] };
    });
}

function validatorAnswer(name: string, text: string): string {
  try {
    parseConfig(text, { file: name, baseDir: fixtures });
    return 'valid';
  } catch (error) {
    return (error as Error).message;
  }
}

const good = files('good');
const bad = files('bad');
const semantic = files('semantic');
const syntax = files('syntax');

describe('the JSON Schema and the validator give the same answers', () => {
  it('has a corpus worth the name', () => {
    expect(good.length).toBeGreaterThanOrEqual(6);
    expect(bad.length).toBeGreaterThanOrEqual(35);
    for (const f of [...bad, ...semantic, ...syntax]) expect(f.expected, `${f.name} pins its error`).toBeDefined();
  });

  it.each(good.map((f) => [f.name, f] as const))('good/%s: both accept', (_n, f) => {
    expect(validatorAnswer(f.name, f.text)).toBe('valid');
    expect(validateSchema(parse(f.text)), JSON.stringify(validateSchema.errors)).toBe(true);
  });

  it.each(bad.map((f) => [f.name, f] as const))('bad/%s: both refuse, with the pinned message', (_n, f) => {
    expect(validatorAnswer(f.name, f.text)).toBe(f.expected);
    expect(validateSchema(parse(f.text))).toBe(false);
  });

  it('the built-in demo contract is valid for both', () => {
    expect(validatorAnswer('demo', DEMO_CONFIG_YAML)).toBe('valid');
    expect(validateSchema(parse(DEMO_CONFIG_YAML)), JSON.stringify(validateSchema.errors)).toBe(true);
  });
});

describe('what the schema cannot express: only the validator refuses', () => {
  // Cross-references, duplicate names and route shapes, the exact-arithmetic
  // bound, cost against burst, CIDR prefix lengths. docs/config.md lists them.
  it.each(semantic.map((f) => [f.name, f] as const))('semantic/%s', (_n, f) => {
    expect(validatorAnswer(f.name, f.text)).toBe(f.expected);
    expect(validateSchema(parse(f.text)), 'if the schema learns to refuse this, move the file to bad/').toBe(true);
  });

  it.each(syntax.map((f) => [f.name, f] as const))('syntax/%s is refused with its line', (_n, f) => {
    expect(validatorAnswer(f.name, f.text)).toBe(f.expected);
    expect(f.expected).toMatch(/: line \d+, column \d+: /);
  });
});

describe('the schema and the library agree on option names', () => {
  it('a limit in the schema has exactly the options compileLimit accepts', () => {
    const limit = (schema.definitions as Record<string, { properties: Record<string, unknown> }>).limit;
    expect(Object.keys(limit?.properties ?? {}).sort()).toEqual([...LIMIT_OPTIONS].sort());
  });

  it('every top-level, store and http option of the schema is accepted by the validator', () => {
    const defs = schema.definitions as Record<string, { properties?: Record<string, unknown> }>;
    const http = Object.keys(defs.http?.properties ?? {});
    expect(http.length).toBeGreaterThan(5);
    // Each name alone in an otherwise valid file: refused only for its value, never as unknown.
    for (const key of http) {
      const answer = validatorAnswer('x.yaml', `limits: []\nroutes: []\nhttp:\n  ${key}: {}\n`);
      expect(answer, key).not.toContain('unknown option');
    }
    for (const key of Object.keys(schema.properties as object)) {
      expect(validatorAnswer('x.yaml', `limits: []\nroutes: []\n${key}: {}\n`), key).not.toContain('unknown option');
    }
  });

  it('package.json exports the schema and ships it', () => {
    const pkg = JSON.parse(readFileSync(`${root}packages/ratecontract/package.json`, 'utf8')) as { exports: Record<string, unknown>; files: string[] };
    expect(pkg.exports['./schema.json']).toBe('./schema.json');
    expect(pkg.files).toContain('schema.json');
  });
});
