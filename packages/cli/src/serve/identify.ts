import { createPublicKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { createLocalJWKSet, jwtVerify, type JWTVerifyGetKey, type JWTVerifyOptions } from 'jose';
import { trustsPeer } from 'ratecontract/http';
import type { HttpConfig, JwtConfig } from 'ratecontract/config';

/** Who the caller is: the principal, or `undefined` for an anonymous caller. */
export type Identify = (req: IncomingMessage) => string | undefined | Promise<string | undefined>;

function headerValue(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  const s = Array.isArray(v) ? v[0] : v;
  return s === undefined || s === '' ? undefined : s;
}

function bearer(req: IncomingMessage): string | undefined {
  const auth = headerValue(req, 'authorization');
  const m = auth === undefined ? null : /^Bearer[ \t]+([A-Za-z0-9._~+/=-]+)[ \t]*$/i.exec(auth);
  return m?.[1];
}

function jwtIdentify(jwt: JwtConfig): Identify {
  let key: Uint8Array | ReturnType<typeof createPublicKey> | JWTVerifyGetKey;
  if (jwt.secret !== undefined) key = new TextEncoder().encode(jwt.secret);
  else if (jwt.publicKeyFile !== undefined) key = createPublicKey(readFileSync(jwt.publicKeyFile, 'utf8'));
  else key = createLocalJWKSet(JSON.parse(readFileSync(jwt.jwksFile as string, 'utf8')) as Parameters<typeof createLocalJWKSet>[0]);
  const options: JWTVerifyOptions = {
    ...(jwt.issuer !== undefined && { issuer: jwt.issuer }),
    ...(jwt.audience !== undefined && { audience: [...(typeof jwt.audience === 'string' ? [jwt.audience] : jwt.audience)] }),
    ...(jwt.algorithms !== undefined && { algorithms: [...jwt.algorithms] }),
  };
  const claim = jwt.claim;
  return async (req) => {
    const token = bearer(req);
    if (token === undefined) return undefined;
    try {
      // jose checks the signature, exp, nbf and the issuer and audience asked for.
      const { payload } = typeof key === 'function' ? await jwtVerify(token, key, options) : await jwtVerify(token, key, options);
      const v = payload[claim];
      return typeof v === 'string' && v !== '' ? v : typeof v === 'number' ? String(v) : undefined;
    } catch {
      // Missing, invalid or expired: anonymous, not rejected.
      return undefined;
    }
  };
}

/**
 * The `identify` hook of `http.identify`: a header believed only when the
 * socket peer is a trusted proxy (`http.trustProxy`), or a JWT from
 * `Authorization: Bearer` verified with jose. `undefined` when the config
 * identifies nobody.
 */
export function identifyFrom(http: HttpConfig): Identify | undefined {
  const id = http.identify;
  if (id === undefined) return undefined;
  if ('header' in id) {
    const name = id.header.toLowerCase();
    const trusted = trustsPeer(http.trustProxy);
    return (req) => (trusted(req.socket.remoteAddress) ? headerValue(req, name) : undefined);
  }
  return jwtIdentify(id.jwt);
}
