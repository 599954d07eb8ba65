import { createPublicKey, type JsonWebKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ConfigError } from '../core/errors.js';
import type { RateContractConfig } from './types.js';

function read(path: string, option: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    const code = error instanceof Error && 'code' in error ? String(error.code) : 'error';
    throw new ConfigError('RC_INVALID_OPTION', option, `cannot read ${path} (${code})`, { cause: error });
  }
}

/**
 * Checks that the JWT key files a config names can be read and hold keys:
 * `publicKeyFile` a PEM public key (SPKI, or a certificate), `jwksFile` a
 * JSON Web Key Set whose every key Node can import. Throws a `ConfigError`
 * naming the option. Verifying tokens is the service's job (with `jose`);
 * this makes `ratecontract check` catch a missing or malformed key at once.
 */
export function verifyKeyFiles(config: RateContractConfig): void {
  const id = config.http.identify;
  if (id === undefined || !('jwt' in id)) return;
  const { publicKeyFile, jwksFile } = id.jwt;
  if (publicKeyFile !== undefined) {
    const option = 'http.identify.jwt.publicKeyFile';
    const text = read(publicKeyFile, option);
    if (/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(text)) {
      throw new ConfigError('RC_INVALID_OPTION', option, `${publicKeyFile} holds a private key: give the public key only (the verifier never needs the signing key)`);
    }
    try {
      const key = createPublicKey(text);
      if (key.type !== 'public') throw new Error('not a public key');
    } catch (error) {
      throw new ConfigError('RC_INVALID_OPTION', option, `${publicKeyFile} does not hold a PEM public key (${error instanceof Error ? error.message : String(error)})`, { cause: error });
    }
  }
  if (jwksFile !== undefined) {
    const option = 'http.identify.jwt.jwksFile';
    const text = read(jwksFile, option);
    let keys: unknown;
    try {
      keys = (JSON.parse(text) as { keys?: unknown }).keys;
    } catch (error) {
      throw new ConfigError('RC_INVALID_OPTION', option, `${jwksFile} is not JSON (${error instanceof Error ? error.message : String(error)})`, { cause: error });
    }
    if (!Array.isArray(keys) || keys.length === 0) throw new ConfigError('RC_INVALID_OPTION', option, `${jwksFile} is not a JSON Web Key Set: it needs a non-empty "keys" list`);
    keys.forEach((jwk: unknown, i) => {
      try {
        if (jwk === null || typeof jwk !== 'object' || (jwk as { kty?: unknown }).kty === 'oct') throw new Error('a JWKS for verification holds public keys');
        createPublicKey({ key: jwk as JsonWebKey, format: 'jwk' });
      } catch (error) {
        throw new ConfigError('RC_INVALID_OPTION', option, `${jwksFile}: keys[${i}] is not a usable public key (${error instanceof Error ? error.message : String(error)})`, { cause: error });
      }
    });
  }
}
