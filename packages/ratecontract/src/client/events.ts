import { channel } from 'node:diagnostics_channel';

/**
 * Channel names of the client on `node:diagnostics_channel`. Publishing
 * costs nothing when nobody subscribes. Payloads are in docs/events.md.
 */
export const CLIENT_CHANNELS = {
  /** Before every wait: `{ url, method, attempt, waitMs, reason, status }`. */
  wait: 'ratecontract:client-wait',
  /** The client gave up: `{ url, method, error }` (a `RateLimitedError`). */
  giveUp: 'ratecontract:client-give-up',
} as const;

/** The part of a `node:diagnostics_channel` channel the client publishes through (typed here, so the declarations need no Node types). */
export interface ClientChannel {
  readonly hasSubscribers: boolean;
  publish(message: unknown): void;
}

export const clientWaitChannel: ClientChannel = channel(CLIENT_CHANNELS.wait);
export const clientGiveUpChannel: ClientChannel = channel(CLIENT_CHANNELS.giveUp);
