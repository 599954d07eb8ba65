import type { Duration } from '../core/duration.js';
import type { CompiledLimit, LimitDefinition } from '../core/types.js';
import type { Advertise, HeaderShape } from '../http/response-options.js';
import type { TrustProxy } from '../http/client-ip.js';
import type { RoutePattern } from './route-pattern.js';

/** `stores.<name>` with `type: memory`: state in this process (k replicas enforce up to k x N). */
export interface MemoryStoreConfig {
  readonly type: 'memory';
  /** Most keys with their own state. Default 1,000,000. */
  readonly maxKeys?: number | undefined;
  /** Shared counters per limit once `maxKeys` is reached. Default 65,536. */
  readonly overflowSlots?: number | undefined;
}

/** `stores.<name>` with `type: redis`: shared state, one failure domain per store. */
export interface RedisStoreConfig {
  readonly type: 'redis';
  /** `redis://[user:password@]host[:port][/db]` or `rediss://...` (TLS). Required. */
  readonly url: string;
  /** Deadline of one store call. Default 8ms. */
  readonly deadline?: Duration | undefined;
  /** Key prefix. Default `rc:`. */
  readonly prefix?: string | undefined;
  /** `server` (default, Redis `TIME`) or `client`. */
  readonly timeMode?: 'server' | 'client' | undefined;
  /** The URL is one node of a Redis Cluster. Default false. */
  readonly cluster?: boolean | undefined;
  /**
   * Name of the environment variable holding the store's `keySecret` (the
   * HMAC key for user keys and `keySlots`); the service refuses to start if
   * it is unset or empty. Default: unkeyed SHA-256.
   */
  readonly keySecretEnv?: string | undefined;
  /** Circuit breaker of this store. */
  readonly breaker?: { readonly failureThreshold?: number | undefined; readonly cooldown?: Duration | undefined } | undefined;
}

export type StoreConfig = MemoryStoreConfig | RedisStoreConfig;

/** `routes[i]`: a method and path pattern, and the chain of limits (most specific first) that applies to it. */
export interface RouteConfig {
  /** As written: `'POST /otp/send'`, `'GET /users/:id'`, `'* /static/*'`. */
  readonly match: string;
  /** Limit names, in chain order. `[]`: explicitly unlimited. */
  readonly limits: readonly string[];
  /** The parsed `match`. */
  readonly pattern: RoutePattern;
}

/** `http.identify`: who the caller is (feeds `key: principal` and `advertise: authenticated`). */
export type IdentifyConfig =
  /** A header set by a trusted proxy (honoured only on requests that come through `http.trustProxy`). */
  | { readonly header: string }
  /** A verified JWT (`Authorization: Bearer`): exactly one key source, and the claim that names the principal. */
  | { readonly jwt: JwtConfig };

export interface JwtConfig {
  /** HMAC secret (HS256/384/512). */
  readonly secret?: string | undefined;
  /** PEM public key (SPKI), resolved against the config file's folder. */
  readonly publicKeyFile?: string | undefined;
  /** JSON Web Key Set file, resolved against the config file's folder. */
  readonly jwksFile?: string | undefined;
  /** Claim holding the principal. Default `sub`. */
  readonly claim: string;
  readonly issuer?: string | undefined;
  readonly audience?: string | readonly string[] | undefined;
  /** Accepted `alg` values. Default: what the key allows. */
  readonly algorithms?: readonly string[] | undefined;
}

/** `http`: options of the HTTP contract, the same names as the adapters' options. */
export interface HttpConfig {
  readonly trustProxy?: TrustProxy | undefined;
  readonly forwardedHeader?: 'x-forwarded-for' | 'forwarded' | undefined;
  readonly ipv6Prefix?: number | undefined;
  readonly ipv4Prefix?: number | undefined;
  readonly advertise?: Advertise | undefined;
  readonly fields?: HeaderShape | undefined;
  readonly legacyHeaders?: boolean | undefined;
  readonly advertiseCapacity?: boolean | undefined;
  readonly windowCap?: Duration | undefined;
  readonly maxBodyBytes?: number | undefined;
  readonly identify?: IdentifyConfig | undefined;
}

/** A validated config file. */
export interface RateContractConfig {
  /** The file name used in messages (as given, or `(built-in demo)`). */
  readonly file: string;
  readonly stores: Readonly<Record<string, StoreConfig>>;
  /** k for `degraded` limits: a number, or `discover` (heartbeats in a Redis store). Default 1. */
  readonly replicas: number | 'discover';
  /** The limit definitions as written, validated by the library's own `compileLimits`. */
  readonly limits: readonly LimitDefinition[];
  /** The same limits compiled (defaults applied), in file order. */
  readonly compiled: readonly CompiledLimit[];
  readonly routes: readonly RouteConfig[];
  readonly http: HttpConfig;
}
