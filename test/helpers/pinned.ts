/**
 * Processes whose figures depend on scheduling (the load tests' workers and
 * their redis-server) run pinned to one CPU (`taskset -c`) and, where the
 * tests run as root (CI here), at a raised priority (`nice -n -10`). The
 * load tests measure the limiter, not whatever else shares the machine: a
 * redis-server starved for 20 ms by unrelated processes on its core misses
 * the store deadline, and the fallback that follows is correct behaviour
 * that says nothing about the limiter. Pinning alone keeps the client and
 * the server apart; the priority keeps other work from cutting in.
 */
import { availableParallelism } from 'node:os';

/** Whether there are two CPUs to pin the client and the server apart. */
export const CAN_PIN = availableParallelism() >= 2;

/** Whether this process may raise a child's priority (root). */
const CAN_RAISE = typeof process.getuid === 'function' && process.getuid() === 0;

/**
 * The argv that runs `command args...` pinned to `cpu` at a raised priority
 * where allowed: `['taskset', '-c', cpu, 'nice', '-n', '-10', command, ...args]`.
 * `[command, ...args]` unchanged when `cpu` is undefined or the machine has one CPU.
 */
export function pinnedArgv(cpu: number | undefined, command: string, args: readonly string[]): [string, ...string[]] {
  if (cpu === undefined || !CAN_PIN) return [command, ...args];
  const raise = CAN_RAISE ? ['nice', '-n', '-10'] : [];
  return ['taskset', '-c', String(cpu), ...raise, command, ...args];
}
