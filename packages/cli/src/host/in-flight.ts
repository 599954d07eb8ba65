import type { ServerResponse } from 'node:http';

/**
 * Requests a server has begun answering and not finished: what the drain
 * waits for. A front end counts each request from its arrival (`track` for
 * an HTTP answer, `enter`/`leave` for a call of another transport), so a
 * request whose body is still coming is in flight too.
 */
export class InFlight {
  #count = 0;
  #idle: Array<() => void> = [];

  /** Requests in flight now. */
  get count(): number {
    return this.#count;
  }

  enter(): void {
    this.#count++;
  }

  leave(): void {
    this.#count--;
    if (this.#count > 0) return;
    const waiting = this.#idle;
    this.#idle = [];
    for (const resolve of waiting) resolve();
  }

  /** Counts `res` from now until it closes (finished, or its connection gone). */
  track(res: ServerResponse): void {
    this.enter();
    res.once('close', () => this.leave());
  }

  /** Resolves once nothing is in flight, or after `timeoutMs`, with the count then left (what the bound cuts). */
  async drain(timeoutMs: number): Promise<number> {
    if (this.#count > 0) {
      let timer: NodeJS.Timeout | undefined;
      await new Promise<void>((resolve) => {
        this.#idle.push(resolve);
        timer = setTimeout(resolve, timeoutMs);
        timer.unref();
      });
      clearTimeout(timer);
    }
    return this.#count;
  }
}
