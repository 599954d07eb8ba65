// The store modes fleet-sizing.js measures, by name. A mode says how to run
// the one-limit check and the OTP chain in it: the redis-contenders.js ids
// and any environment for the child (redis-child.js). To add a mode (the
// two-tier mode and the local pre-filter plug in here), add its contenders
// to redis-contenders.js and an entry below; `node fleet-sizing.js --modes
// <names>` then measures it beside the others.

/** name -> { label, env, contenders: { one, otp } } */
export const FLEET_MODES = {
  plain: {
    label: 'plain: one script call per check (`batch: false`)',
    env: { BENCH_BATCH_MAX_CHECKS: 'off' },
    contenders: { one: 'rc-otp-one', otp: 'rc-otp' },
  },
  batched: {
    label: 'batched: the checks of one tick in one script call (the default, maxChecks 16)',
    env: { BENCH_BATCH_MAX_CHECKS: '' },
    contenders: { one: 'rc-otp-one', otp: 'rc-otp' },
  },
  // two-tier, pre-filter: added by feat/fleet-tier (issue 16).
};

/** The workloads: a one-limit check and the OTP chain (redis-contenders.js). */
export const FLEET_LIMITS = {
  one: 'one limit (gcra per IP, 1,000 IPs)',
  otp: 'OTP chain (recipient distinct, 100 tenants, 1,000 IPs, one global key)',
};
