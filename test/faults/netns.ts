/**
 * A network namespace of the test's own, for faults the fault proxy cannot
 * make: a partition that drops every packet (no RST, no FIN: a connect never
 * completes, a write is never acknowledged) and real packet loss (the
 * kernel's TCP retransmits what `nft` dropped). The processes under test
 * (redis-server, the worker) run inside it and talk over its own loopback,
 * so no rule ever touches the host's traffic, and deleting the namespace
 * deletes every rule with it.
 *
 * Needs root, `ip` (iproute2) and `nft` (Debian's nftables; the kernel has
 * nf_tables). `netnsSupport()` says whether they are here and, if not, why;
 * the tests skip with that reason (Debian: `apt-get install nftables`).
 *
 * Cleanup: `remove()` kills every process the namespace started (SIGKILL to
 * its process group) and deletes the namespace; every namespace still
 * present when the test process exits is deleted too, and a namespace left
 * by a test process that died (its pid is in the name) is deleted by the
 * next one that starts.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const PREFIX = 'rcfault-';
const live = new Set<Netns>();
process.on('exit', () => {
  for (const ns of live) ns.removeSync();
});

function run(cmd: string, args: readonly string[]): { ok: boolean; out: string } {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 10_000 });
  return { ok: r.status === 0, out: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) : ''}`.trim() };
}

let support: { ok: true } | { ok: false; reason: string } | undefined;

/** Whether namespaces and nft work here; if not, the reason (root, `ip`, `nft`, or the kernel refusing). */
export function netnsSupport(): { ok: true } | { ok: false; reason: string } {
  if (support !== undefined) return support;
  if (process.getuid?.() !== 0) return (support = { ok: false, reason: 'not root (ip netns and nft need root)' });
  if (!run('ip', ['-V']).ok) return (support = { ok: false, reason: '`ip` (iproute2) not found' });
  if (!run('nft', ['--version']).ok) return (support = { ok: false, reason: '`nft` not found (Debian: apt-get install nftables)' });
  const name = `${PREFIX}${process.pid}-probe`;
  const add = run('ip', ['netns', 'add', name]);
  if (!add.ok) return (support = { ok: false, reason: `ip netns add failed: ${add.out}` });
  try {
    const nft = run('ip', ['netns', 'exec', name, 'nft', 'add table inet probe']);
    if (!nft.ok) return (support = { ok: false, reason: `nft inside a namespace failed: ${nft.out}` });
  } finally {
    run('ip', ['netns', 'del', name]);
  }
  return (support = { ok: true });
}

/** Deletes namespaces that a test process which no longer runs left behind. */
function sweepStale(): void {
  const list = run('ip', ['netns', 'list']);
  for (const line of list.out.split('\n')) {
    const name = line.split(' ')[0] ?? '';
    const m = new RegExp(`^${PREFIX}(\\d+)-`).exec(name);
    if (m === null) continue;
    const pid = Number(m[1]);
    let alive = true;
    try {
      process.kill(pid, 0);
    } catch {
      alive = false;
    }
    if (!alive) run('ip', ['netns', 'del', name]);
  }
}

let counter = 0;

export class Netns {
  readonly name: string;
  readonly #children = new Set<ChildProcess>();
  #removed = false;

  private constructor(name: string) {
    this.name = name;
  }

  /** Creates a namespace with its loopback up and an nft table `rc` with an input and an output chain (empty: everything passes). */
  static create(): Netns {
    sweepStale();
    const ns = new Netns(`${PREFIX}${process.pid}-${counter++}`);
    execFileSync('ip', ['netns', 'add', ns.name], { timeout: 10_000 });
    live.add(ns);
    try {
      ns.execSync('ip', ['link', 'set', 'lo', 'up']);
      ns.nft('add table inet rc');
      ns.nft('add chain inet rc in { type filter hook input priority 0; }');
      ns.nft('add chain inet rc out { type filter hook output priority 0; }');
    } catch (error) {
      ns.removeSync();
      throw error;
    }
    return ns;
  }

  /** Runs a command inside the namespace, synchronously; returns stdout; throws on failure. */
  execSync(cmd: string, args: readonly string[]): string {
    return execFileSync('ip', ['netns', 'exec', this.name, cmd, ...args], { encoding: 'utf8', timeout: 10_000, stdio: ['ignore', 'pipe', 'pipe'] });
  }

  /** One nft command inside the namespace (e.g. `add rule inet rc out tcp dport 7000 drop`). */
  nft(command: string, flags: readonly string[] = []): string {
    return this.execSync('nft', [...flags, command]);
  }

  /** Starts a process inside the namespace, in a process group of its own (killed by `remove()`), optionally pinned to `cpu`. */
  spawn(cmd: string, args: readonly string[], options: SpawnOptions & { readonly cpu?: number | undefined } = {}): ChildProcess {
    const { cpu, ...rest } = options;
    const inner = cpu === undefined ? [cmd, ...args] : ['taskset', '-c', String(cpu), cmd, ...args];
    const child = spawn('ip', ['netns', 'exec', this.name, ...inner], { stdio: 'ignore', ...rest, detached: true });
    this.#children.add(child);
    child.once('exit', () => this.#children.delete(child));
    return child;
  }

  /**
   * Drops every packet to or from `ports` (TCP), both ways, at input and
   * output: no RST, no ICMP. Existing connections stop (TCP retransmits into
   * the void), new connects never complete. Returns a function that heals
   * exactly these rules.
   */
  partition(ports: readonly number[]): () => void {
    const set = `{ ${ports.join(', ')} }`;
    const handles: Array<readonly [string, number]> = [];
    for (const chain of ['in', 'out']) {
      for (const dir of ['dport', 'sport']) handles.push(this.#addRule(chain, `tcp ${dir} ${set} drop`));
    }
    return () => this.#deleteRules(handles);
  }

  /**
   * Drops each packet to or from `ports` (TCP, both ways) with probability
   * `share` (nft `numgen random`), at output: real loss on the namespace's
   * loopback, which the kernel's TCP repairs by retransmission (fast
   * retransmit, or the RTO, 200 ms at least). Returns a function that heals it.
   */
  loss(ports: readonly number[], share: number): () => void {
    const perMille = Math.round(share * 1000);
    const set = `{ ${ports.join(', ')} }`;
    const handles = ['dport', 'sport'].map((dir) => this.#addRule('out', `tcp ${dir} ${set} numgen random mod 1000 < ${perMille} drop`));
    return () => this.#deleteRules(handles);
  }

  #addRule(chain: string, rule: string): readonly [string, number] {
    const out = this.nft(`add rule inet rc ${chain} ${rule}`, ['--echo', '--handle']);
    const m = /# handle (\d+)/.exec(out);
    if (m === null) throw new Error(`nft gave no handle for "${rule}": ${out}`);
    return [chain, Number(m[1])];
  }

  #deleteRules(rules: ReadonlyArray<readonly [string, number]>): void {
    if (this.#removed) return;
    for (const [chain, handle] of rules) this.nft(`delete rule inet rc ${chain} handle ${handle}`);
  }

  /** Rules in the namespace now (for failure messages). */
  rules(): string {
    return this.nft('list table inet rc');
  }

  /** A temp dir for a server's files (removed by `remove()`). */
  tempDir(): string {
    const dir = mkdtempSync(join(tmpdir(), 'rc-netns-'));
    this.#dirs.push(dir);
    return dir;
  }

  readonly #dirs: string[] = [];

  /** Kills every process started in the namespace and deletes it (its rules go with it). */
  async remove(): Promise<void> {
    const exits = [...this.#children].map((c) => new Promise<void>((resolve) => (c.exitCode !== null || c.signalCode !== null ? resolve() : c.once('exit', () => resolve()))));
    this.#killAll();
    await Promise.race([Promise.all(exits), new Promise((r) => setTimeout(r, 5000))]);
    this.removeSync();
  }

  /** As `remove()`, without waiting for the processes to exit (used on exit). */
  removeSync(): void {
    if (this.#removed) return;
    this.#killAll();
    // Any process still inside (one we did not start ourselves) is killed too, so the namespace really goes.
    run('ip', ['netns', 'pids', this.name]).out.split('\n').filter((p) => /^\d+$/.test(p)).forEach((p) => {
      try {
        process.kill(Number(p), 'SIGKILL');
      } catch {
        // gone already
      }
    });
    run('ip', ['netns', 'del', this.name]);
    for (const d of this.#dirs) rmSync(d, { recursive: true, force: true });
    this.#removed = true;
    live.delete(this);
  }

  #killAll(): void {
    for (const c of this.#children) {
      if (c.pid === undefined) continue;
      try {
        process.kill(-c.pid, 'SIGKILL');
      } catch {
        // exited
      }
    }
  }
}

/** Whether a namespace named `name` exists now. */
export function netnsExists(name: string): boolean {
  return run('ip', ['netns', 'list']).out.split('\n').some((l) => l.split(' ')[0] === name);
}
