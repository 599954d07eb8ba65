import { check } from './harness.js';
import { rlsConfigTarget } from './targets/rls-config.js';
import { contractTarget } from './targets/contract.js';
const bomb = 'a: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n';
for (const t of [rlsConfigTarget, contractTarget]) {
  for (const input of [bomb, 'domain: a\ndescriptors: &d\n  - key: k\n    descriptors: *d\n', 'domain: &x a\ndescriptors:\n  - key: *x\n', 'domain: a\ndescriptors:\n  - &k { key: k }\n  - *k\n', '? [a]\n: 1\n', 'domain: !!binary aGVsbG8=\n', 'domain: a\ndescriptors:\n  - { key: k, rate_limit: { unit: second, requests_per_unit: 1, burst: 1.5 } }\n']) {
    console.log(t.name, JSON.stringify(input.slice(0, 30)), (await check(t, input))?.detail.slice(0, 200));
  }
}
