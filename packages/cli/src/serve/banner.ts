import { auditContract } from '../contract/audit.js';
import type { RateContractConfig } from 'ratecontract/config';
import { plural } from '../contract/plural.js';

/** The banner fits a terminal this wide: every line `serve` prints on stderr at startup is at most this long. */
export const BANNER_COLUMNS = 100;

const GAP = 2;
/** A wrapped column is never made narrower than this (nor than its header). */
const MIN_COLUMN = 8;

/** Joins two words so that `wrapText` never puts them on different lines (shown as a space). */
export const GLUE = '\u00a0';

/**
 * Splits `text` into lines of at most `width` characters, at spaces where it
 * can (never at a `GLUE`), cutting words longer than a line.
 */
export function wrapText(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (let word of text.split(' ').filter((w) => w !== '')) {
    while (word.length > width) {
      if (line !== '') {
        lines.push(line);
        line = '';
      }
      lines.push(word.slice(0, width));
      word = word.slice(width);
    }
    if (line === '') line = word;
    else if (line.length + 1 + word.length <= width) line += ' ' + word;
    else {
      lines.push(line);
      line = word;
    }
  }
  if (line !== '' || lines.length === 0) lines.push(line);
  return lines;
}

/**
 * A plain-text table within `maxWidth` columns: columns two spaces apart,
 * the widest wrappable column narrowed first (never under its header or
 * 8), its cells wrapped onto more lines (`GLUE` keeps words together).
 * When even the narrowest layout is wider, the table is drawn at that layout.
 */
export function formatTable(header: readonly string[], rows: ReadonlyArray<readonly string[]>, maxWidth: number, wrappable: readonly number[] = header.map((_, i) => i)): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const floor = header.map((h) => Math.max(h.length, MIN_COLUMN));
  const total = (): number => widths.reduce((a, b) => a + b, 0) + GAP * (widths.length - 1);
  while (total() > maxWidth) {
    let widest = -1;
    for (const i of wrappable) {
      const w = widths[i] as number;
      if (w > (floor[i] as number) && (widest < 0 || w > (widths[widest] as number))) widest = i;
    }
    if (widest < 0) break;
    widths[widest] = (widths[widest] as number) - 1;
  }
  const out: string[] = [];
  for (const row of [header, ...rows]) {
    const cells = widths.map((w, i) => wrapText(row[i] ?? '', w));
    const height = Math.max(...cells.map((c) => c.length));
    for (let k = 0; k < height; k++) {
      out.push(
        cells
          .map((c, i) => (c[k] ?? '').padEnd(widths[i] as number))
          .join(' '.repeat(GAP))
          .replaceAll(GLUE, ' ')
          .trimEnd(),
      );
    }
  }
  return out;
}

/** "at most 5 + 40/h x t", "in any 3600 s interval": a bound's formula on one line, and a number with its unit. */
function glueBound(bound: string): string {
  return bound.replace(/(\S+) \+ (\S+) x t\b/g, `$1${GLUE}+${GLUE}$2${GLUE}x${GLUE}t`).replace(/(\d) (ms|s|min|h|d)\b/g, `$1${GLUE}$2`);
}

/**
 * The contract as the banner shows it: each limit's purpose, key, status,
 * fail mode, store and bound, then each route's chain; within `maxWidth`
 * columns (the bounds wrap first).
 */
export function contractTable(config: RateContractConfig, maxWidth = BANNER_COLUMNS): string {
  const report = auditContract(config);
  const limits = formatTable(
    ['limit', 'purpose', 'key', 'status', 'fail mode', 'store', 'bound'],
    report.rows.map((r) => [r.name, r.purpose + (r.shadow ? ' (shadow)' : ''), r.key, String(r.status), r.onError, r.store, `${r.algorithm}: ${glueBound(r.bound)}`]),
    maxWidth,
  );
  const routes = formatTable(
    ['route', 'limits, in chain order'],
    config.routes.map((r) => [r.match, r.limits.length === 0 ? 'none (unlimited)' : r.limits.join(', ')]),
    maxWidth,
  );
  return [
    `contract ${report.file}: ${plural(report.rows.length, 'limit')}, ${plural(config.routes.length, 'route')}, replicas ${String(config.replicas)}`,
    ...limits,
    '',
    ...routes,
  ].join('\n');
}

/**
 * The demo's "try it" commands for the API at `url` (bash or zsh, real
 * curl). Each example sends from its own address (`x-forwarded-for`, which
 * the demo believes from loopback) and to its own phone, so none spends
 * another's per-address or per-recipient limit, in whatever order they run;
 * only the global limit is shared, and it refills within a second. Each
 * prints what its caption names (the status lines, `Retry-After`, the
 * `RateLimit` fields). Every line fits 100 columns for any
 * `http://127.0.0.1:PORT`.
 */
export function demoExamples(url: string, maxWidth = BANNER_COLUMNS): string {
  const send = `${url}/otp/send`;
  const examples: ReadonlyArray<{ readonly caption: string; readonly command: readonly string[] }> = [
    {
      caption: '429: otp-recipient allows 3 codes per 15 minutes to one phone; the 4th is refused with Retry-After: 300',
      command: [
        "for i in 1 2 3 4; do curl -s -o /dev/null -D - -H 'x-forwarded-for: 203.0.113.1' \\",
        `  -H 'content-type: application/json' -d '{"phone":"+15550100"}' \\`,
        `  ${send} | grep -iE '^(HTTP|retry-after)'; done`,
      ],
    },
    {
      caption: '429 to a tenant (x-tenant, believed from loopback): each answer tells it RateLimit-Policy and RateLimit; the refused 4th also Retry-After and the problem details',
      command: [
        "for i in 1 2 3 4; do curl -s -i -H 'x-forwarded-for: 203.0.113.2' -H 'x-tenant: acme' \\",
        `  -H 'content-type: application/json' -d '{"phone":"+15550111"}' \\`,
        `  ${send}; echo; done`,
      ],
    },
    {
      caption:
        '503: otp-global allows 50 sends a second. One curl sends 150 in a row, each from its own address and to its own phone, so only the global limit binds: about 50 pass, the rest get 503 with Retry-After: 1 (the global limit is back a second later)',
      command: [
        `a=(); for i in $(seq 150); do a+=(--next -o /dev/null -D - ${send} \\`,
        `  -H "x-forwarded-for: 198.51.100.$i" -H 'content-type: application/json' \\`,
        '  -d "{\\"phone\\":\\"+1555020$i\\"}"); done',
        `curl -s "\${a[@]}" | grep -iE '^(HTTP|retry-after)' | sort | uniq -c`,
      ],
    },
    {
      caption: 'GET /health has no limit: 20 in a row from one address, all 200',
      command: ["for i in $(seq 20); do curl -s -o /dev/null -w '%{http_code} ' \\", `  ${url}/health; done; echo`],
    },
  ];
  return [
    ...wrapText("try it (bash or zsh). Each example sends from its own address (x-forwarded-for, believed from loopback) and to its own phone, so none spends another's limits; run them in any order.", maxWidth),
    ...examples.flatMap((e) => [...wrapText(e.caption, maxWidth - 4).map((l) => `  # ${l}`), ...e.command.map((l) => `  ${l}`)]),
  ].join('\n');
}
