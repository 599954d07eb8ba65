import { pino, type Logger } from 'pino';

/** The logger of every server: pino JSON lines on stdout, written synchronously, each with `pid` and an ISO `time`. */
export function serverLogger(level: string): Logger {
  return pino({ level, base: { pid: process.pid }, timestamp: pino.stdTimeFunctions.isoTime }, pino.destination({ fd: 1, sync: true }));
}
