// The store modes fleet-sizing.js measures, by name. A mode says how to run
// the one-limit check and the OTP chain in it: the redis-contenders.js ids
// and any environment for the child (redis-child.js). To add a mode (the
// two-tier mode and the local pre-filter are here), add its contenders
// to redis-contenders.js and an entry below; `node fleet-sizing.js --modes
// <names>` then measures it beside the others.

/** name -> { label, env, contenders: { one, otp } } */
export const FLEET_MODES = {
  plain: {
    label: 'plain: one script call per check (`batch: false`)',
    env: { BENCH_BATCH_MAX_CHECKS: 'off', BENCH_TIER: '' },
    contenders: { one: 'rc-otp-one', otp: 'rc-otp', flood: 'rc-flood' },
  },
  batched: {
    label: 'batched: the checks of one tick in one script call (the default, maxChecks 16)',
    env: { BENCH_BATCH_MAX_CHECKS: '', BENCH_TIER: '' },
    contenders: { one: 'rc-otp-one', otp: 'rc-otp', flood: 'rc-flood' },
  },
  'two-tier': {
    label: "two-tier: every limit `tier: { mode: 'allotment' }` (allotments sized for k = 4), batched",
    env: { BENCH_BATCH_MAX_CHECKS: '', BENCH_TIER: 'allotment', BENCH_REPLICAS: '4' },
    contenders: { one: 'rc-otp-one', otp: 'rc-otp', flood: 'rc-flood' },
  },
  'pre-filter': {
    label: "pre-filter: every limit `tier: { mode: 'pre-filter' }`, batched",
    env: { BENCH_BATCH_MAX_CHECKS: '', BENCH_TIER: 'pre-filter' },
    contenders: { one: 'rc-otp-one', otp: 'rc-otp', flood: 'rc-flood' },
  },
};

/** The workloads: a one-limit check and the OTP chain (redis-contenders.js). */
export const FLEET_LIMITS = {
  one: 'one limit (gcra per IP, 1,000 IPs)',
  otp: 'OTP chain (recipient distinct, 100 tenants, 1,000 IPs, one global key)',
  flood: 'single-key flood (one IP at 100x its limit: gcra 100/h, burst 10)',
};
