/**
 * Holds SIGHUP while a server command starts: Node's default for SIGHUP is
 * to exit, so a reload asked for between the process start and the
 * command's own handlers (a supervisor that signals as soon as it reads the
 * startup line) would end the server. A SIGHUP meanwhile is remembered and
 * replayed once `release` is called with the reload.
 */
export function holdSighup(): { release(reload: () => void): void } {
  let asked = false;
  const hold = (): void => {
    asked = true;
  };
  process.on('SIGHUP', hold);
  return {
    release(reload) {
      process.off('SIGHUP', hold);
      if (asked) reload();
    },
  };
}
