/**
 * `addFields` (the node:http and Express adapters' admitted path) keeps every
 * line of a flat field list the application gives `writeHead` afterwards:
 * without it, Node would set the list name by name once the guard's fields
 * are set, keeping only the last line of each repeated field. Property over
 * random lists (repeated names in any case, the guard's own names among them),
 * on real `ServerResponse` objects.
 */
import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { addFields } from '../../../packages/ratecontract/src/http/node-connection.js';
import { fcBudget } from '../../helpers/fc-budget.js';

const NAMES = ['set-cookie', 'Set-Cookie', 'link', 'Link', 'vary', 'x-a', 'RateLimit', 'ratelimit-policy', 'content-type'];
const CONTRACT = { 'RateLimit-Policy': '"p";q=5;w=60', RateLimit: '"p";r=4;t=60' };

function response(): ServerResponse {
  return new ServerResponse(new IncomingMessage(new Socket()));
}

describe('addFields then writeHead(status, flat list)', () => {
  it('keeps every line of each name of the list, in order; the list replaces the guard field of the same name; the others stay', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.constantFrom(...NAMES), fc.stringMatching(/^[!-~]{1,12}$/)), { maxLength: 16 }), fc.boolean(), (list, statusMessage) => {
        const res = response();
        addFields(res, CONTRACT);
        const flat = list.flat();
        if (statusMessage) res.writeHead(200, 'OK', flat);
        else res.writeHead(200, flat);
        const expected = new Map<string, string[]>();
        for (const [name, value] of list) expected.set(name.toLowerCase(), [...(expected.get(name.toLowerCase()) ?? []), value]);
        for (const [name, vs] of expected) expect(res.getHeader(name)).toEqual(vs.length === 1 ? vs[0] : vs);
        for (const [name, value] of Object.entries(CONTRACT)) if (!expected.has(name.toLowerCase())) expect(res.getHeader(name)).toBe(value);
      }),
      fcBudget({ runs: 300, ms: 2000 }),
    );
  });

  it('leaves the other forms of writeHead as Node has them (an object, no fields, an odd list refused)', () => {
    const res = response();
    addFields(res, CONTRACT);
    res.writeHead(201, { 'set-cookie': ['a=1', 'b=2'], RateLimit: 'mine' });
    expect(res.getHeader('set-cookie')).toEqual(['a=1', 'b=2']);
    expect(res.getHeader('ratelimit')).toBe('mine');
    expect(res.statusCode).toBe(201);
    const bare = response();
    addFields(bare, CONTRACT);
    bare.writeHead(204);
    expect(bare.getHeader('ratelimit-policy')).toBe(CONTRACT['RateLimit-Policy']);
    const odd = response();
    addFields(odd, CONTRACT);
    expect(() => odd.writeHead(200, ['set-cookie'])).toThrow(/headers/);
  });

  it('wraps once, over a writeHead another middleware installed, and only when it added a field', () => {
    const res = response();
    const calls: unknown[][] = [];
    const theirs = res.writeHead.bind(res);
    Reflect.set(res, 'writeHead', (...args: unknown[]) => {
      calls.push(args);
      return (theirs as (...a: unknown[]) => ServerResponse)(...args);
    });
    addFields(res, CONTRACT);
    addFields(res, CONTRACT);
    res.writeHead(200, ['link', '<a>', 'link', '<b>']);
    expect(calls).toEqual([[200]]);
    expect(res.getHeader('link')).toEqual(['<a>', '<b>']);
    const untouched = response();
    const own = Reflect.get(untouched, 'writeHead') as unknown;
    addFields(untouched, {});
    expect(Reflect.get(untouched, 'writeHead')).toBe(own);
  });
});
