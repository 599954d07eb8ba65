/**
 * A strict NodeNext consumer of the packed tarball (test/types/packed.test.ts
 * compiles it): the user's own context, typed, through the core and every
 * adapter. Each `@ts-expect-error` is a refusal the types must make; an
 * expectation that stops holding fails the compile.
 */
import type { IncomingMessage } from 'node:http';
import { createLimiter, type Decision, type Limiter, type RequestContext } from 'ratecontract';
import { createGuard } from 'ratecontract/node';
import { rateLimit as expressRateLimit } from 'ratecontract/express';
import { rateLimit as honoRateLimit } from 'ratecontract/hono';
import { rateLimitPlugin, type FastifyRateLimitOptions } from 'ratecontract/fastify';
import type { Context } from 'hono';

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
function expectType<T extends true>(): T | undefined {
  return undefined;
}

interface AccountCtx {
  readonly account: string;
  readonly ip?: string;
}

// Key and cost functions get the user's context type without a cast.
const limiter = createLimiter<AccountCtx>({
  limits: [
    { name: 'per-account', purpose: 'abuse', limit: 5, window: '15m', key: (ctx) => ctx.account.toLowerCase() },
    // Built-in specs keep working on the base fields.
    { name: 'per-ip', purpose: 'shedding', limit: 100, window: '1m', key: 'ip' },
  ],
});
expectType<Equal<typeof limiter, Limiter<AccountCtx>>>();

export async function run(): Promise<Decision> {
  await limiter.check({ account: 'a', ip: '203.0.113.7' });
  // @ts-expect-error a check without `account` is refused
  await limiter.check({ ip: '203.0.113.7' });
  return limiter.check({ account: 'b' });
}

createLimiter<AccountCtx>({
  limits: [
    // @ts-expect-error a key function reading a field the context does not have
    { name: 'typo', purpose: 'abuse', limit: 5, window: '15m', key: (ctx) => ctx.acount },
  ],
});

// The default context stays the base one: its fields, and only those.
const plain = createLimiter({ limits: [{ name: 'ip', purpose: 'shedding', limit: 10, window: '1s', key: 'ip' }] });
expectType<Equal<typeof plain, Limiter<RequestContext>>>();
// @ts-expect-error an unknown field on the base context is a typo, not a field
void plain.check({ principle: 'x' });

// Adapters: a limiter with fields of its own needs a `context` hook, typed with the framework's request.
createGuard(limiter, {
  context: (req, base) => {
    expectType<Equal<typeof req, IncomingMessage>>();
    return { ...base, account: String(req.headers['x-account']) };
  },
});
// @ts-expect-error without `context`, the guard could not give the limiter an `account`
createGuard(limiter);
// @ts-expect-error nor with options that lack it
createGuard(limiter, { advertise: 'always' });
// A base-context limiter needs no hook.
createGuard(plain);

expressRateLimit(limiter, { context: async (req, base) => ({ ...base, account: req.get('x-account') ?? 'anonymous' }) });
// @ts-expect-error Express too
expressRateLimit(limiter);

// Hono: generic over the app's Env, so the hooks see the app's variables.
interface AppEnv {
  Variables: { tenant: string };
}
honoRateLimit<AppEnv, AccountCtx>(limiter, {
  context: (c, base) => {
    const tenant: string = c.get('tenant');
    return { ...base, account: tenant };
  },
  trustProxy: 1,
});
// @ts-expect-error Hono too
honoRateLimit(limiter, { trustProxy: 1 });
export const honoCtx: Context | undefined = undefined;

const fastifyOptions: FastifyRateLimitOptions<AccountCtx> = { limiter, context: (req, base) => ({ ...base, account: req.id }) };
export { fastifyOptions, rateLimitPlugin };
