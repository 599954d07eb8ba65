/**
 * The node:http adapter alone, as a Node consumer with @types/node installed
 * and a default `tsc --init` configuration (which loads no @types on its own)
 * imports it: nothing else in the program loads Node's types, so the
 * package's declarations must. test/types/packed.test.ts compiles this with
 * TypeScript 5 and 7, with and without `skipLibCheck`; the assertions catch a
 * type that silently became `any` (skipLibCheck hides the error itself).
 */
import { createLimiter } from 'ratecontract';
import { createGuard, getDecision } from 'ratecontract/node';

type IsAny<T> = 0 extends 1 & T ? true : false;
function notAny<T>(value: T, proof: IsAny<T> extends false ? true : never): void {
  void value;
  void proof;
}

const limiter = createLimiter({ limits: [{ name: 'per-ip', purpose: 'abuse', limit: 5, window: '1m', key: 'ip' }] });
const guard = createGuard(limiter);
type GuardRequest = Parameters<typeof guard>[0];
notAny(guard, true);
notAny(undefined as unknown as GuardRequest, true);
notAny(undefined as unknown as GuardRequest['headers'], true);
notAny(undefined as unknown as Parameters<typeof guard>[1], true);
notAny(getDecision, true);
export { limiter };
