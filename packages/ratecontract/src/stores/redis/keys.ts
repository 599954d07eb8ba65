import * as crypto from 'node:crypto';

/** Characters of the base64url SHA-256 kept in a Redis key: 22 characters, 132 bits. */
const DIGEST_CHARS = 22;

/**
 * Turns a limit's state identity into a Redis key:
 * `<prefix><limit name>:<algorithm>:<digest of the user key>`. The user key
 * is always hashed (SHA-256, or HMAC-SHA-256 with `secret`), so no raw
 * identifier (IP, phone number, account) is ever written to Redis. The
 * digest alphabet (base64url) has no `{` or `}`, so a key's hash slot is
 * decided by the prefix's hash tag when it has one, else by the whole key.
 */
export function stateKey(prefix: string, limitId: string, key: string, secret: string | undefined): string {
  let digest: string;
  if (secret !== undefined) digest = crypto.createHmac('sha256', secret).update(key, 'utf8').digest('base64url');
  else if (oneShot !== undefined) digest = oneShot('sha256', key, 'base64url');
  else digest = crypto.createHash('sha256').update(key, 'utf8').digest('base64url');
  return `${prefix}${limitId}:${digest.slice(0, DIGEST_CHARS)}`;
}

/** `crypto.hash` (Node >= 20.12): a one-shot digest without a Hash object, several times cheaper for short keys. */
const oneShot = (crypto as { hash?: (algorithm: string, data: string, encoding: 'base64url') => string }).hash;
