import { parseConfig } from 'ratecontract/config';
import type { RateContractConfig } from 'ratecontract/config';

/** The file name the built-in demo contract reports in messages. */
export const DEMO_CONFIG_FILE = '(built-in demo)';

/**
 * The built-in demo contract, modelled on the design's OTP case, on memory
 * stores: POST /otp/send with per-recipient, per-tenant, per-IP and global
 * limits; POST /login per account (and per IP); GET /search per tenant
 * (and per IP for anonymous callers); GET /health unlimited. `examples/ratecontract.yaml` is the same text (a test holds them
 * equal), to copy and edit.
 */
export const DEMO_CONFIG_YAML = `# ratecontract demo contract: the one-time-password case from the design.
# Abuse limits and shedding limits live in separate stores (failure domains).
stores:
  abuse: { type: memory, maxKeys: 1000000 }
  shared: { type: memory }
replicas: 1
limits:
  - name: otp-recipient
    purpose: abuse
    algorithm: gcra
    limit: 3
    window: 15m
    key: body.phone
    store: abuse
    reason: SMS bombing of one recipient; 3 codes per 15 min is above any human retry pattern
  - name: otp-tenant
    purpose: abuse
    algorithm: sliding-window
    limit: 100
    window: 1h
    key: principal
    store: abuse
    reason: one tenant's SMS spend; 100 an hour is 4x the busiest tenant's peak hour
  - name: otp-ip
    purpose: abuse
    algorithm: token-bucket
    limit: 10
    window: 15m
    burst: 5
    key: ip
    store: abuse
    reason: one address cycling through recipients; a shared office NAT stays under 10 per 15 min
  - name: otp-global
    purpose: shedding
    algorithm: gcra
    limit: 50
    window: 1s
    key: global
    store: shared
    reason: the SMS provider accepts 50 sends per second for this account
  - name: login-account
    purpose: abuse
    algorithm: gcra
    limit: 5
    window: 15m
    key: body.username
    store: abuse
    reason: password guessing against one account; 5 tries per 15 min stops online guessing
  - name: login-ip
    purpose: abuse
    algorithm: gcra
    limit: 30
    window: 15m
    burst: 10
    key: ip
    store: abuse
    reason: password spraying from one address across many accounts, and requests without a username
  - name: search-tenant
    purpose: shedding
    algorithm: token-bucket
    limit: 20
    window: 1s
    burst: 40
    key: principal
    store: shared
    reason: search is CPU-bound; one tenant may use at most a fifth of the cluster's 100 queries per second
  - name: search-ip
    purpose: shedding
    algorithm: token-bucket
    limit: 5
    window: 1s
    burst: 10
    key: ip
    store: shared
    reason: anonymous search shares capacity per address; a tenant's callers are bounded by search-tenant
routes:
  - match: POST /otp/send
    limits: [otp-recipient, otp-tenant, otp-ip, otp-global]
  - match: POST /login
    limits: [login-account, login-ip]
  - match: GET /search
    limits: [search-tenant, search-ip]
  - match: GET /health
    limits: []
http:
  trustProxy: loopback
  advertise: authenticated
  identify: { header: x-tenant }
`;

/** The demo contract, validated by the same path as any file. */
export function demoConfig(): RateContractConfig {
  return parseConfig(DEMO_CONFIG_YAML, { file: DEMO_CONFIG_FILE, baseDir: process.cwd() });
}
