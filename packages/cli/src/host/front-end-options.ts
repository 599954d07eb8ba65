import type { Logger } from 'pino';
import type { RateContractConfig } from 'ratecontract/config';

/**
 * What every HTTP front end on the host takes (`serve`, `decide`): the
 * contract, where it came from, where to listen, the admin port, and the
 * bounds of startup, a request head and the drain. Each front end adds its
 * own options.
 */
export interface HttpFrontEndOptions {
  /** The contract to run. */
  readonly config: RateContractConfig;
  /** The file it came from: what SIGHUP and `watch` reload. */
  readonly configFile?: string | undefined;
  /** Applied to every config before it runs (the first and each reload): `--redis`. */
  readonly transform?: ((config: RateContractConfig) => RateContractConfig) | undefined;
  /** Address to listen on. */
  readonly host: string;
  /** Port to listen on; 0 takes a free one. */
  readonly port: number;
  /** Address of the admin port. */
  readonly adminHost: string;
  /** Port of the admin port (`/metrics`, `/contract`, ...); 0 takes a free one; `undefined`: no admin port. */
  readonly adminPort: number | undefined;
  /** Bound on receiving a request head (`--headers-timeout`); past it 408. Default 10 s. */
  readonly headersTimeoutMs?: number | undefined;
  /** How long startup waits for each store to be ready before it listens anyway (the fail modes decide meanwhile). */
  readonly readyTimeoutMs: number;
  /** How long SIGTERM waits for requests in flight. */
  readonly drainTimeoutMs: number;
  /** Reload when the config file changes. */
  readonly watch: boolean;
  /** The server's logger (pino, JSON lines). */
  readonly logger: Logger;
}

/** A running HTTP front end. */
export interface RunningFrontEnd {
  /** `http://host:port` it answers on. */
  readonly url: string;
  /** `http://host:port` of the admin port, or `undefined`. */
  readonly adminUrl: string | undefined;
  /** The contract now in force. */
  config(): RateContractConfig;
  /** Reloads the config file; resolves to whether the new config was taken. */
  reload(reason: string): Promise<boolean>;
  /** Stops accepting, drains requests in flight (bounded), closes the stores. */
  shutdown(reason: string): Promise<void>;
}
