import type { OptionSpec } from './args.js';

/**
 * The options every command that reads an access log through a contract
 * takes (`replay`, `suggest`), declared once so their usage says the same.
 */
export const LOG_COMMAND_OPTIONS = {
  config: { type: 'string', value: 'FILE', description: 'the contract (YAML or JSON)', default: 'the built-in demo contract' },
  log: { type: 'string', value: 'FILE', description: 'the access log: a file, gzip or not, or - for stdin (required)' },
  format: { type: 'string', value: 'NAME', description: 'log format: combined (nginx/Apache, common too), json (JSON lines), auto', default: 'auto' },
} as const satisfies Record<string, OptionSpec>;

/** How keys are shown (hashed unless asked), as `replay` and `suggest` report them. */
export const SHOW_KEYS_OPTION = { type: 'boolean', description: 'show keys as they are instead of hashed' } as const satisfies OptionSpec;

/** The header a JSON log line's tenant is sent as. */
export const TENANT_HEADER_OPTION = { type: 'string', value: 'NAME', description: "the header a JSON line's tenant is sent as", default: 'http.identify.header, else x-tenant' } as const satisfies OptionSpec;

/** A count with thousands separators, as the reports print them. */
export const thousands = (x: number): string => x.toLocaleString('en-US');
