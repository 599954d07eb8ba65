/**
 * `Retry-After` delay-seconds for an exact wait in milliseconds: the ceiling,
 * so a client that waits the advertised time is never early (1 ms -> 1,
 * 5000 ms -> 5, 5001 ms -> 6). 0 for no wait. Not defined for `Infinity`
 * (a cost that can never fit gets no `Retry-After`; see docs/headers.md).
 */
export function retryAfterSeconds(ms: number): number {
  if (!(ms > 0)) return 0;
  return Math.ceil(ms / 1000);
}
