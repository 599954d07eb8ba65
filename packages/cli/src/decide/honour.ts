import { ConfigFileError, type RateContractConfig } from 'ratecontract/config';

/**
 * Why a limit cannot be decided from a forward-auth subrequest, or
 * `undefined` when it can. The subrequest is a question asked before the
 * request is proxied: decide never sees the answer's end, nor the body.
 */
export function whyNotDecidable(limit: RateContractConfig['compiled'][number]): string | undefined {
  if (limit.algorithm === 'concurrency') return 'a concurrency limit holds a lease until the answer ends, and a forward-auth service never sees the answer';
  if (limit.count === 'failures') return "count: 'failures' settles on the answer's status, and a forward-auth service never sees the answer";
  if (limit.keySpec.startsWith('body.')) return `its key ${limit.keySpec} reads the body, and a forward-auth subrequest carries none`;
  if (limit.costSpec === 'content-length') return 'its cost comes from Content-Length, and a forward-auth subrequest carries no body';
  return undefined;
}

/**
 * Refuses a contract with a limit decide cannot honour, naming the limit
 * (`limits[i]`, its name) and why. Throws a `ConfigFileError` (exit 2).
 */
export function assertDecidable(config: RateContractConfig): void {
  config.compiled.forEach((limit, i) => {
    const why = whyNotDecidable(limit);
    if (why !== undefined) {
      throw new ConfigFileError('RC_INVALID_OPTION', config.file, `limits[${i}]`, `decide cannot honour limit ${JSON.stringify(limit.name)}: ${why} (check it in the application, or with serve)`);
    }
  });
}
