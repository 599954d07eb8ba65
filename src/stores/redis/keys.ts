import { createHash, createHmac } from 'node:crypto';

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
  const h = secret === undefined ? createHash('sha256') : createHmac('sha256', secret);
  return `${prefix}${limitId}:${h.update(key, 'utf8').digest('base64url').slice(0, DIGEST_CHARS)}`;
}
