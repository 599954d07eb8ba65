import * as crypto from 'node:crypto';

/** Characters of the base64url SHA-256 kept in a Redis key: 22 characters, 132 bits. */
const DIGEST_CHARS = 22;

/**
 * The state format's tag in every state key. Each format of the stored
 * values has a key namespace of its own, so processes of two releases that
 * share one Redis during a rolling deploy never read each other's values
 * (docs/redis.md, "Rolling deploys"). Format 1 (text values) had no tag;
 * format 2 is the packed doubles of state-codec.ts.
 */
export const STATE_FORMAT_TAG = 'v2';

/**
 * Turns a limit's state identity into a Redis key:
 * `<prefix><limit id>:v2:<digest of the user key>`, the limit id being
 * `<limit name>:<algorithm>` (and `:plan-<plan>` for a plan with a window of
 * its own). The user key is always hashed (SHA-256, or HMAC-SHA-256 with
 * `secret`), so no raw identifier (IP, phone number, account) is ever
 * written to Redis. The digest alphabet (base64url) has no `{` or `}`, so a
 * key's hash slot is decided by the prefix's hash tag when it has one, else
 * by the whole key.
 */
export function stateKey(prefix: string, limitId: string, key: string, secret: string | undefined): string {
  return `${prefix}${limitId}:${STATE_FORMAT_TAG}:${digestOf(key, secret)}`;
}

/**
 * The key the same state had in format 1 (`<prefix><limit id>:<digest>`):
 * only `limiter.reset` touches it, so that a reset during a rolling deploy
 * also forgets what processes of the previous release count.
 */
export function formatOneKey(prefix: string, limitId: string, key: string, secret: string | undefined): string {
  return `${prefix}${limitId}:${digestOf(key, secret)}`;
}

function digestOf(key: string, secret: string | undefined): string {
  let digest: string;
  if (secret !== undefined) digest = crypto.createHmac('sha256', secret).update(key, 'utf8').digest('base64url');
  else if (oneShot !== undefined) digest = oneShot('sha256', key, 'base64url');
  else digest = crypto.createHash('sha256').update(key, 'utf8').digest('base64url');
  return digest.slice(0, DIGEST_CHARS);
}

/** `crypto.hash` (Node >= 20.12): a one-shot digest without a Hash object, several times cheaper for short keys. */
const oneShot = (crypto as { hash?: (algorithm: string, data: string, encoding: 'base64url') => string }).hash;
