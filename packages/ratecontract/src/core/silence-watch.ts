/**
 * Watches one store's calls for silence: calls outstanding (made and not
 * settled, their deadline passed or not) while not one call has settled.
 * That is what a connection that died without a FIN or an RST looks like
 * from the client (a forgotten NAT or load-balancer flow, a failover behind a
 * virtual IP): the socket stays open, every command is written, and nothing
 * comes back until TCP gives up, minutes later. A slow store is not silent:
 * its late replies settle calls.
 *
 * Time is the caller's (the limiter's clock), read only at `issued` and
 * `check`: a settlement is noticed at the next `check`, so silence is
 * measured from then and `check` reports it no earlier than `afterMs` after
 * the last settlement, only later by the gap between checks.
 */
export class SilenceWatch {
  readonly afterMs: number;
  #outstanding = 0;
  /** Start of the current silence (calls outstanding, none settled since); undefined when nothing is outstanding. */
  #since: number | undefined;
  /** A call settled since the last look. */
  #settled = false;
  readonly #settle = (): void => {
    this.#outstanding--;
    this.#settled = true;
  };

  constructor(afterMs: number) {
    this.afterMs = afterMs;
  }

  /** Calls made and not settled, their deadline passed or not. */
  get outstanding(): number {
    return this.#outstanding;
  }

  /** A call was made at `now`; `call` settles when its reply (or error) comes, however late. */
  issued(now: number, call: Promise<unknown>): void {
    this.#look(now);
    if (this.#outstanding++ === 0) this.#since = now;
    call.then(this.#settle, this.#settle);
  }

  /** How long the store has been silent at `now`, ms (0 when nothing is outstanding). */
  silentMs(now: number): number {
    this.#look(now);
    return this.#since === undefined ? 0 : Math.max(0, now - this.#since);
  }

  /**
   * The silence at `now` if it has lasted `afterMs` or more, else undefined.
   * A positive answer restarts the silence at `now`, so a silence that goes
   * on is reported once per `afterMs`.
   */
  check(now: number): number | undefined {
    const silent = this.silentMs(now);
    if (silent < this.afterMs) return undefined;
    this.#since = now;
    return silent;
  }

  #look(now: number): void {
    if (!this.#settled) return;
    this.#settled = false;
    this.#since = this.#outstanding > 0 ? now : undefined;
  }
}
