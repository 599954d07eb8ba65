/** A running server as the signals see it. */
export interface Stoppable {
  reload(reason: string): Promise<boolean>;
  shutdown(reason: string): Promise<void>;
}

/** The signals of a server command, from its first line to its exit (`holdSignals`). */
export interface ServerSignals {
  /**
   * From now on SIGTERM and SIGINT drain `server` (a second SIGINT exits 130
   * at once) and SIGHUP reloads it; a SIGHUP held since `holdSignals` is
   * taken now. Resolves once a signal has stopped it; past that, nothing left
   * open (a socket that ignores its end) may keep the process alive over 1 s.
   */
  run(server: Stoppable, onShutdownError: (error: unknown) => void): Promise<void>;
}

/**
 * Call first thing in a server command. Node's default for SIGHUP is to
 * exit, so a reload asked for between the process start and the server
 * running (a supervisor that signals as soon as it reads the startup line)
 * would end the server: until `run`, a SIGHUP is remembered instead, and
 * replayed as a reload once the server runs.
 */
export function holdSignals(): ServerSignals {
  let asked = false;
  const hold = (): void => {
    asked = true;
  };
  process.on('SIGHUP', hold);
  return {
    async run(server, onShutdownError) {
      await new Promise<void>((resolve) => {
        let signals = 0;
        const stop = (signal: NodeJS.Signals): void => {
          if (++signals > 1 && signal === 'SIGINT') process.exit(130);
          server.shutdown(signal).then(resolve, (error: unknown) => {
            onShutdownError(error);
            resolve();
          });
        };
        process.on('SIGTERM', stop);
        process.on('SIGINT', stop);
        process.on('SIGHUP', () => void server.reload('SIGHUP'));
        process.off('SIGHUP', hold);
        if (asked) void server.reload('SIGHUP');
      });
      setTimeout(() => process.exit(0), 1_000).unref();
    },
  };
}
