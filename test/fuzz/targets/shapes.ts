/**
 * Building blocks of the structure-aware generators: values that are
 * mostly valid for their option and now and then of the wrong kind, keys
 * that are now and then a prototype's name, and objects that hold such
 * keys as their own (as YAML and JSON parsers make them).
 */
import fc from 'fast-check';
import { Document, isAlias, isCollection, isPair, stringify, visit, type Node, type YAMLMap, type YAMLSeq } from 'yaml';
import { HOSTILE_KEYS } from '../mutate.js';

/** An object with these entries as own, enumerable properties (a `__proto__` entry stays a key; it does not set the prototype). */
export function own(entries: ReadonlyArray<readonly [string, unknown]>): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  for (const [k, v] of entries) Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
  return o;
}

/** Scalars of every kind a YAML or JSON document holds, edges included. */
export const anyScalar: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer({ min: -3, max: 100 }),
  fc.constantFrom(0, -1, 1.5, 2 ** 31, 2 ** 32, 2 ** 53, 2 ** 53 + 2, 1e21, 1e308, -0),
  fc.string({ maxLength: 12 }),
  fc.constantFrom('', ' ', '*', '-', '__proto__', 'constructor', 'toString', '1m', '0ms', 'null', 'true', '~'),
);

/** Any small value: a scalar, a short list or a small mapping. */
export const anyValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 5, arbitrary: anyScalar },
  { weight: 1, arbitrary: fc.array(anyScalar, { maxLength: 3 }) },
  { weight: 1, arbitrary: fc.array(fc.tuple(fc.constantFrom('a', 'type', '__proto__', 'constructor', 'value'), anyScalar), { maxLength: 3 }).map(own) },
);

/** `valid` most of the time, any value now and then. */
export function near<T>(valid: fc.Arbitrary<T>, wrongOneIn = 40): fc.Arbitrary<unknown> {
  return fc.oneof({ weight: wrongOneIn - 1, arbitrary: valid }, { weight: 1, arbitrary: anyValue });
}

/** A name matching `[a-z0-9_-]{1,64}` mostly, a prototype's name or an invalid one sometimes. */
export const nameText: fc.Arbitrary<string> = fc.oneof(
  { weight: 14, arbitrary: fc.stringMatching(/^[a-z][a-z0-9_-]{0,10}$/) },
  { weight: 5, arbitrary: fc.constantFrom(...HOSTILE_KEYS.map((k) => k.toLowerCase()), '__proto__', 'constructor', 'default', 'local', 'memory') },
  { weight: 1, arbitrary: fc.constantFrom('', 'A', 'a b', 'a'.repeat(65), 'é') },
);

/** How often `mapping` includes each option. */
export interface MappingShape {
  /** Present almost always (15 in 16). */
  readonly required?: readonly string[];
  /** Present 1 in 8 (options valid only with others). The rest are present 2 in 3. */
  readonly rare?: readonly string[];
  /** An extra key (a near-miss, a hostile key, junk) 1 in this many. Default 20. */
  readonly extraOneIn?: number;
}

/** A mapping of the options in `fields`, each present as `shape` says, with an extra key now and then. */
export function mapping(fields: Record<string, fc.Arbitrary<unknown>>, shape: MappingShape = {}): fc.Arbitrary<Record<string, unknown>> {
  const names = Object.keys(fields);
  // [weight absent, weight present]
  const odds = (n: string): readonly [number, number] => (shape.required?.includes(n) === true ? [1, 15] : shape.rare?.includes(n) === true ? [7, 1] : [1, 2]);
  const entries = fc.tuple(
    ...names.map((n) => {
      const [absent, present] = odds(n);
      return fc.oneof({ weight: absent, arbitrary: fc.constant(undefined) }, { weight: present, arbitrary: fields[n] as fc.Arbitrary<unknown> });
    }),
  );
  const extraOneIn = shape.extraOneIn ?? 20;
  const extra = fc.oneof(
    { weight: extraOneIn - 1, arbitrary: fc.constant<Array<readonly [string, unknown]>>([]) },
    {
      weight: 1,
      arbitrary: fc.array(fc.tuple(fc.oneof(fc.constantFrom(...HOSTILE_KEYS), fc.constantFrom(...names).map((n) => `${n}x`), fc.string({ maxLength: 6 })), anyValue), { minLength: 1, maxLength: 2 }),
    },
  );
  return fc.tuple(entries, extra).map(([values, more]) => own([...names.flatMap((n, i) => (values[i] === undefined ? [] : [[n, values[i]] as const])), ...more]));
}

/** One structural fault put into a valid document. */
interface Fault {
  readonly pick: number;
  readonly kind: 'replace' | 'add-key' | 'delete' | 'wrap';
  readonly key: string;
  readonly value: unknown;
}

const faultArb: fc.Arbitrary<Fault> = fc.record({
  pick: fc.nat(),
  kind: fc.constantFrom('replace', 'add-key', 'delete', 'wrap'),
  key: fc.oneof(fc.constantFrom(...HOSTILE_KEYS), fc.string({ maxLength: 6 })),
  value: anyValue,
});

type Container = Record<string, unknown> | unknown[];

/** Every container in `doc` with each of its keys, depth first. */
function slots(doc: unknown): Array<readonly [Container, string | number | undefined]> {
  const out: Array<readonly [Container, string | number | undefined]> = [];
  const walk = (v: unknown): void => {
    if (v === null || typeof v !== 'object') return;
    const c = v as Container;
    out.push([c, undefined]);
    if (Array.isArray(c)) {
      c.forEach((x, i) => {
        out.push([c, i]);
        walk(x);
      });
    } else {
      for (const k of Object.keys(c)) {
        out.push([c, k]);
        walk(c[k]);
      }
    }
  };
  walk(doc);
  return out;
}

function applyFault(doc: unknown, f: Fault): void {
  const all = slots(doc);
  if (all.length === 0) return;
  const [c, k] = all[f.pick % all.length] as readonly [Container, string | number | undefined];
  const set = (key: string | number, value: unknown): void => {
    if (Array.isArray(c) && typeof key === 'number') c[key] = value;
    else Object.defineProperty(c, key, { value, enumerable: true, writable: true, configurable: true });
  };
  if (k === undefined || f.kind === 'add-key') {
    if (Array.isArray(c)) c.push(f.value);
    else set(f.key, f.value);
  } else if (f.kind === 'replace') set(k, f.value);
  else if (f.kind === 'wrap') set(k, Array.isArray(c) ? [c[k as number]] : own([[f.key, c[k as string]]]));
  else if (Array.isArray(c)) c.splice(k as number, 1);
  else Reflect.deleteProperty(c, k);
}

/** Valid documents from `valid` with up to `most` structural faults each: a value replaced, a (hostile) key added, a key deleted, a value wrapped. */
export function withFaults<T>(valid: fc.Arbitrary<T>, most = 2): fc.Arbitrary<T> {
  return fc.tuple(valid, fc.array(faultArb, { maxLength: most })).map(([doc, faults]) => {
    const copy = structuredCopy(doc);
    for (const f of faults) applyFault(copy, f);
    return copy;
  });
}

/** A deep copy that keeps own `__proto__` keys as keys. */
function structuredCopy<T>(v: T): T {
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) return v.map((x: unknown) => structuredCopy(x)) as T;
  return own(Object.keys(v).map((k) => [k, structuredCopy((v as Record<string, unknown>)[k])])) as T;
}

/**
 * A document as YAML text with up to `most` aliases put in: each replaces a
 * value with an alias to another node (an earlier one, a later one, or one
 * that contains it), so anchors, aliases, cycles and forward references reach
 * the parser. The form is block or flow.
 */
export function yamlWithAliases(docArb: fc.Arbitrary<unknown>, most = 2): fc.Arbitrary<string> {
  return fc.tuple(docArb, fc.array(fc.tuple(fc.nat(), fc.nat()), { maxLength: most }), fc.boolean()).map(([data, picks, flow]) => {
    const doc = new Document(data);
    const nodes: Node[] = [];
    const hosts: Array<YAMLMap | YAMLSeq> = [];
    visit(doc, {
      Node(_key, node) {
        nodes.push(node);
        if (isCollection(node)) hosts.push(node);
      },
    });
    for (const [target, host] of picks) {
      const t = nodes[target % Math.max(1, nodes.length)];
      const h = hosts[host % Math.max(1, hosts.length)];
      if (t === undefined || h === undefined || h.items.length === 0 || isAlias(t)) continue;
      const i = target % h.items.length;
      const alias = doc.createAlias(t, `a${target % 5}`);
      const item = h.items[i];
      if (isPair(item)) item.value = alias;
      else h.items[i] = alias;
    }
    try {
      return doc.toString(flow ? { collectionStyle: 'flow' } : {});
    } catch {
      return stringify(data);
    }
  });
}
