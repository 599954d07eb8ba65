/** Redis Cluster hash slots: CRC16-CCITT (XMODEM) of the key, or of its hash tag, modulo 16384. */

const TABLE = (() => {
  const t = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i << 8;
    for (let j = 0; j < 8; j++) c = c & 0x8000 ? ((c << 1) ^ 0x1021) & 0xffff : (c << 1) & 0xffff;
    t[i] = c;
  }
  return t;
})();

function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const b of bytes) crc = ((crc << 8) & 0xffff) ^ (TABLE[((crc >> 8) ^ b) & 0xff] as number);
  return crc;
}

/**
 * The part of `key` Redis Cluster hashes: the content of the first `{...}`
 * if it is non-empty, else the whole key (the Redis rule).
 */
export function hashTagOf(key: string): string {
  const open = key.indexOf('{');
  if (open === -1) return key;
  const close = key.indexOf('}', open + 1);
  if (close === -1 || close === open + 1) return key;
  return key.slice(open + 1, close);
}

/** The hash slot (0..16383) of `key`, as `CLUSTER KEYSLOT` computes it. */
export function keySlot(key: string): number {
  return crc16(Buffer.from(hashTagOf(key), 'utf8')) & 0x3fff;
}
