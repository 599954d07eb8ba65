import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SignJWT, exportJWK } from 'jose';
import { afterAll, describe, expect, it } from 'vitest';
import { identifyFrom } from '../../../packages/cli/src/serve/identify.js';

function req(headers: Record<string, string>, remoteAddress = '127.0.0.1'): IncomingMessage {
  return { headers, socket: { remoteAddress } } as unknown as IncomingMessage;
}

const dir = mkdtempSync(join(tmpdir(), 'rc-jwt-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('identifyFrom (http.identify)', () => {
  it('a header is believed only from a trusted proxy', async () => {
    const id = identifyFrom({ trustProxy: 'loopback', identify: { header: 'x-user-id' } });
    expect(await id?.(req({ 'x-user-id': 'ann' }))).toBe('ann');
    expect(await id?.(req({ 'x-user-id': 'ann' }, '203.0.113.5'))).toBeUndefined();
    expect(await id?.(req({}))).toBeUndefined();
    expect(identifyFrom({})).toBeUndefined();
  });

  it('a JWT with a secret: valid gives the claim; missing, invalid, expired, wrong issuer are anonymous', async () => {
    const secret = 'a-long-enough-test-secret-of-32-bytes!';
    const key = new TextEncoder().encode(secret);
    const id = identifyFrom({ identify: { jwt: { secret, claim: 'tenant', issuer: 'https://issuer.example' } } });
    const good = await new SignJWT({ tenant: 'acme' }).setProtectedHeader({ alg: 'HS256' }).setIssuer('https://issuer.example').setExpirationTime('5m').sign(key);
    const expired = await new SignJWT({ tenant: 'acme' }).setProtectedHeader({ alg: 'HS256' }).setIssuer('https://issuer.example').setExpirationTime(Math.floor(Date.now() / 1000) - 60).sign(key);
    const otherIssuer = await new SignJWT({ tenant: 'acme' }).setProtectedHeader({ alg: 'HS256' }).setIssuer('https://evil.example').sign(key);
    const forged = await new SignJWT({ tenant: 'acme' }).setProtectedHeader({ alg: 'HS256' }).setIssuer('https://issuer.example').sign(new TextEncoder().encode('another-secret-another-secret-32!!'));
    expect(await id?.(req({ authorization: `Bearer ${good}` }))).toBe('acme');
    for (const token of [expired, otherIssuer, forged, 'not.a.jwt']) expect(await id?.(req({ authorization: `Bearer ${token}` }))).toBeUndefined();
    expect(await id?.(req({}))).toBeUndefined();
  });

  it('a JWT with a public key file or a JWKS file', async () => {
    const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const pem = join(dir, 'key.pem');
    writeFileSync(pem, publicKey.export({ type: 'spki', format: 'pem' }));
    const jwks = join(dir, 'jwks.json');
    writeFileSync(jwks, JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256' }] }));
    const token = await new SignJWT({}).setProtectedHeader({ alg: 'ES256', kid: 'k1' }).setSubject('user-7').setExpirationTime('5m').sign(privateKey);
    expect(await identifyFrom({ identify: { jwt: { publicKeyFile: pem, claim: 'sub' } } })?.(req({ authorization: `Bearer ${token}` }))).toBe('user-7');
    expect(await identifyFrom({ identify: { jwt: { jwksFile: jwks, claim: 'sub' } } })?.(req({ authorization: `Bearer ${token}` }))).toBe('user-7');
  });
});
