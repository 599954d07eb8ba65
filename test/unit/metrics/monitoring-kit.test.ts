import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import { SERIES, SERIES_INFO } from '../../../packages/ratecontract/src/metrics/index.js';
import { TEST_TIER } from '../../helpers/tier.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const ALERTS = join(root, 'deploy/prometheus/alerts.yaml');
const DASHBOARD = join(root, 'deploy/grafana/ratecontract.json');

/** Every series name a query may use, with its labels: the exported series, and a histogram's _bucket, _sum and _count. */
const EXPORTED = new Map<string, ReadonlySet<string>>();
for (const s of SERIES_INFO) {
  if (s.type === 'histogram') {
    EXPORTED.set(`${s.name}_bucket`, new Set([...s.labels, 'le']));
    EXPORTED.set(`${s.name}_sum`, new Set(s.labels));
    EXPORTED.set(`${s.name}_count`, new Set(s.labels));
  } else {
    EXPORTED.set(s.name, new Set(s.labels));
  }
}
/** Labels Prometheus adds to every scraped series. */
const TARGET_LABELS = ['job', 'instance'];
const FUNCTIONS = new Set(['rate', 'irate', 'increase', 'sum', 'max', 'min', 'avg', 'count', 'histogram_quantile', 'clamp_min', 'clamp_max', 'topk', 'abs', 'label_values']);
const KEYWORDS = new Set(['and', 'or', 'unless', 'offset', 'bool', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right']);

/**
 * The series and labels a PromQL expression names. A small reader, not a
 * parser: it drops string literals and ranges, collects label names from
 * matchers and from `by`/`without`/`on`/`ignoring` lists, and returns every
 * other identifier that is not a function or keyword as a series name.
 */
function names(expr: string): { series: string[]; labels: string[]; unknown: string[] } {
  const labels: string[] = [];
  let rest = expr.replace(/\[[^\]]*\]/g, ' ');
  rest = rest.replace(/\{([^}]*)\}/g, (_, body: string) => {
    for (const m of body.replace(/"(?:[^"\\]|\\.)*"/g, '""').matchAll(/([a-zA-Z_]\w*)\s*(?:=~|!~|!=|=)/g)) labels.push(m[1] as string);
    return ' ';
  });
  rest = rest.replace(/\b(?:by|without|on|ignoring)\s*\(([^)]*)\)/g, (_, list: string) => {
    for (const l of list.split(',')) if (l.trim() !== '') labels.push(l.trim());
    return ' ';
  });
  rest = rest.replace(/"(?:[^"\\]|\\.)*"/g, ' ');
  const series: string[] = [];
  const unknown: string[] = [];
  for (const m of rest.matchAll(/(?<![\w.$])([a-zA-Z_:][\w:]*)(\s*\()?/g)) {
    const id = m[1] as string;
    if (m[2] !== undefined) {
      if (!FUNCTIONS.has(id)) unknown.push(`${id}()`);
    } else if (!KEYWORDS.has(id)) {
      series.push(id);
    }
  }
  return { series, labels, unknown };
}

/** Asserts an expression names only exported series (at least one) and only labels those series have. */
function expectExported(expr: string, where: string): string[] {
  const { series, labels, unknown } = names(expr);
  expect(unknown, `${where}: unknown functions in ${expr}`).toEqual([]);
  expect(series.length, `${where}: names no series: ${expr}`).toBeGreaterThan(0);
  for (const s of series) expect(EXPORTED.has(s), `${where}: ${s} is not an exported series (${expr})`).toBe(true);
  const allowed = new Set([...TARGET_LABELS, ...series.flatMap((s) => [...(EXPORTED.get(s) ?? [])])]);
  for (const l of labels) expect(allowed.has(l), `${where}: label ${l} is not a label of ${series.join(', ')}`).toBe(true);
  return series;
}

interface AlertRule {
  alert: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
const alertGroups = (parse(readFileSync(ALERTS, 'utf8')) as { groups: Array<{ name: string; rules: AlertRule[] }> }).groups;
const rules = alertGroups.flatMap((g) => g.rules);

interface Panel {
  type: string;
  title: string;
  targets?: Array<{ expr: string }>;
  panels?: Panel[];
}
const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { title: string; uid: string; panels: Panel[]; templating: { list: Array<{ name: string; type: string; definition?: string }> } };
const panels = dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])]);

function promtool(args: readonly string[]): Promise<{ code: number; output: string } | undefined> {
  return new Promise((resolve) => {
    execFile('promtool', args, { timeout: 60_000 }, (error, stdout, stderr) => {
      if (error !== null && (error as NodeJS.ErrnoException).code === 'ENOENT') return resolve(undefined);
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, output: stdout + stderr });
    });
  });
}
const HAVE_PROMTOOL = (await promtool(['--version'])) !== undefined;
/** The full tier and CI install promtool (scripts/ensure-promtool.sh, .ci/run): there a missing one fails the tests instead of skipping them. */
const NEED_PROMTOOL = process.env.CI === 'true' || TEST_TIER === 'full';
const RUN_PROMTOOL = HAVE_PROMTOOL || NEED_PROMTOOL;
if (!RUN_PROMTOOL) console.warn("monitoring kit: promtool not found (bash scripts/ensure-promtool.sh installs Debian's prometheus package, which has it): promtool check and rule unit tests skipped");

describe('monitoring kit: deploy/prometheus/alerts.yaml', () => {
  it('the query reader finds series, labels and strangers', () => {
    expect(names('sum by (store, le) (rate(ratecontract_store_duration_seconds_bucket{store=~"$store"}[$__rate_interval])) > 1e-3')).toEqual({
      series: ['ratecontract_store_duration_seconds_bucket'],
      labels: ['store', 'store', 'le'],
      unknown: [],
    });
    expect(names('up{job="x"} and on (instance) vector(1)')).toEqual({ series: ['up'], labels: ['job', 'instance'], unknown: ['vector()'] });
  });

  it('every rule is complete: expression, for, severity, summary, description and runbook text', () => {
    expect(rules.length).toBeGreaterThanOrEqual(5);
    expect(new Set(rules.map((r) => r.alert)).size).toBe(rules.length);
    for (const r of rules) {
      expect(r.alert).toMatch(/^Ratecontract[A-Z]\w+$/);
      expect(r.for, r.alert).toMatch(/^\d+[smh]$/);
      expect(['warning', 'critical']).toContain(r.labels?.severity);
      expect(r.annotations?.summary, r.alert).toBeTruthy();
      expect(r.annotations?.description, r.alert).toBeTruthy();
      expect((r.annotations?.runbook ?? '').length, `${r.alert} runbook`).toBeGreaterThan(150);
    }
  });

  it('every expression names only exported series and their labels', () => {
    for (const r of rules) expectExported(r.expr, r.alert);
  });

  it('covers store errors, breaker open, fallback active, fail-closed rejections and a per-limit rejection spike', () => {
    const uses = (series: string): AlertRule[] => rules.filter((r) => names(r.expr).series.includes(series));
    expect(uses(SERIES.storeErrors).length).toBeGreaterThan(0);
    expect(uses(SERIES.breakerOpen).length).toBeGreaterThan(0);
    expect(uses(SERIES.fallbackDecisions).length).toBeGreaterThan(0);
    expect(uses(SERIES.failClosed).length).toBeGreaterThan(0);
    const spike = uses(SERIES.decisions);
    expect(spike.some((r) => r.expr.includes('outcome="rejected"') && /by \(limit\)/.test(r.expr))).toBe(true);
  });

  it.skipIf(!RUN_PROMTOOL)('passes promtool check rules', async () => {
    const r = await promtool(['check', 'rules', ALERTS]);
    expect(r, 'promtool is missing: bash scripts/ensure-promtool.sh').toBeDefined();
    expect(r?.output).toContain('SUCCESS');
    expect(r?.code).toBe(0);
  });

  it.skipIf(!RUN_PROMTOOL)('fires on synthetic series, and stays quiet on steady rejections (promtool test rules)', async () => {
    // promtool compares annotations exactly; the rules under test are the same expressions without them.
    const dir = mkdtempSync(join(tmpdir(), 'ratecontract-alerts-'));
    try {
      const bare = { groups: alertGroups.map((g) => ({ name: g.name, rules: g.rules.map((r) => ({ ...r, annotations: undefined })) })) };
      writeFileSync(join(dir, 'rules.yaml'), stringify(bare));
      const firing = (alertname: string, at: string, labels: Record<string, string>[]): unknown => ({
        eval_time: at,
        alertname,
        exp_alerts: labels.map((l) => ({ exp_labels: { severity: rules.find((r) => r.alert === alertname)?.labels?.severity, ...l } })),
      });
      const tests = {
        rule_files: ['rules.yaml'],
        evaluation_interval: '1m',
        tests: [
          {
            interval: '1m',
            input_series: [
              { series: 'ratecontract_store_errors_total{store="shared",kind="timeout"}', values: '0+60x30' },
              { series: 'ratecontract_store_errors_total{store="abuse",kind="timeout"}', values: '0+0x30' },
              { series: 'ratecontract_breaker_open{store="shared"}', values: '0 0 1x30' },
              { series: 'ratecontract_breaker_open{store="abuse"}', values: '0x30' },
              { series: 'ratecontract_fallback_decisions_total{limit="otp-global"}', values: '0+30x30' },
              { series: 'ratecontract_fail_closed_total{limit="otp-recipient"}', values: '0 0 0+6x30' },
              { series: 'ratecontract_store_duration_seconds_bucket{store="shared",le="0.01"}', values: '0x30' },
              { series: 'ratecontract_store_duration_seconds_bucket{store="shared",le="0.02"}', values: '0+60x30' },
              { series: 'ratecontract_store_duration_seconds_bucket{store="shared",le="+Inf"}', values: '0+60x30' },
            ],
            alert_rule_test: [
              firing('RatecontractStoreErrors', '1m', []),
              firing('RatecontractStoreErrors', '10m', [{ store: 'shared', kind: 'timeout' }]),
              firing('RatecontractBreakerOpen', '5m', [{ store: 'shared' }]),
              firing('RatecontractFallbackActive', '15m', [{ limit: 'otp-global' }]),
              firing('RatecontractFailClosedRejections', '1m', []),
              firing('RatecontractFailClosedRejections', '5m', [{ limit: 'otp-recipient' }]),
              firing('RatecontractStoreSlow', '25m', [{ store: 'shared' }]),
            ],
          },
          {
            interval: '1m',
            input_series: [
              // 0.1 rejections/s for 70 minutes, then 10/s: a spike.
              { series: 'ratecontract_decisions_total{limit="otp-ip",outcome="rejected"}', values: '0+6x70 426+600x30' },
              // 2/s all along: busy, but no spike.
              { series: 'ratecontract_decisions_total{limit="search-ip",outcome="rejected"}', values: '0+120x100' },
            ],
            alert_rule_test: [firing('RatecontractRejectionSpike', '60m', []), firing('RatecontractRejectionSpike', '85m', [{ limit: 'otp-ip' }])],
          },
        ],
      };
      writeFileSync(join(dir, 'tests.yaml'), stringify(tests));
      const r = await promtool(['test', 'rules', join(dir, 'tests.yaml')]);
      expect(r?.output).toContain('SUCCESS');
      expect(r?.code, r?.output).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('monitoring kit: deploy/grafana/ratecontract.json', () => {
  it('is a dashboard with a data source variable and limit and store filters over exported series', () => {
    expect(dashboard.title).toBe('ratecontract');
    expect(dashboard.uid).toBe('ratecontract');
    const vars = new Map(dashboard.templating.list.map((v) => [v.name, v]));
    expect(vars.get('datasource')?.type).toBe('datasource');
    for (const name of ['limit', 'store']) {
      const m = /^label_values\((\w+), (\w+)\)$/.exec(vars.get(name)?.definition ?? '');
      expect(m, name).not.toBeNull();
      expect(EXPORTED.get(m?.[1] as string)?.has(m?.[2] as string), name).toBe(true);
    }
  });

  it('every panel query names only exported series and their labels, and every series is on the dashboard', () => {
    const used = new Set<string>();
    let queries = 0;
    for (const p of panels) {
      for (const t of p.targets ?? []) {
        queries++;
        for (const s of expectExported(t.expr, `panel "${p.title}"`)) used.add(s);
      }
    }
    expect(queries).toBeGreaterThanOrEqual(10);
    for (const s of SERIES_INFO) expect([...used].some((u) => u === s.name || u.startsWith(`${s.name}_`)), `${s.name} on the dashboard`).toBe(true);
  });
});
