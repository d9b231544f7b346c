/**
 * The committed operations files (ops/grafana/*.json dashboards, ops/prometheus/*.yml rules and
 * scrape config), parsed, and the metric names their PromQL expressions reference.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';

export const OPS_DIR = path.resolve(__dirname, '..', '..', 'ops');

/** Names every Prometheus has without any exporter exposing them (the scrape's own series). */
export const ALWAYS_EXPOSED = new Set(['up', 'scrape_duration_seconds', 'scrape_samples_scraped']);

export interface Dashboard {
  title: string;
  uid: string;
  panels: Array<{ id: number; title?: string; type: string; targets?: Array<{ expr?: string; refId?: string }>; gridPos?: unknown }>;
  [key: string]: unknown;
}

export interface RuleFile {
  groups: Array<{ name: string; rules: Array<{ alert?: string; record?: string; expr: string; for?: string; labels?: Record<string, string>; annotations?: Record<string, string> }> }>;
}

const files = (dir: string, ext: RegExp) =>
  readdirSync(path.join(OPS_DIR, dir))
    .filter((f) => ext.test(f))
    .map((f) => path.join(OPS_DIR, dir, f));

export function dashboards(): Array<{ file: string; json: Dashboard }> {
  return files('grafana', /\.json$/).map((file) => ({ file, json: JSON.parse(readFileSync(file, 'utf8')) as Dashboard }));
}

export function ruleFiles(): Array<{ file: string; rules: RuleFile }> {
  return files('prometheus', /rules.*\.ya?ml$|alerts.*\.ya?ml$/).map((file) => ({ file, rules: parse(readFileSync(file, 'utf8')) as RuleFile }));
}

/** Every PromQL expression of the dashboards and the rule files. */
export function expressions(): string[] {
  const out: string[] = [];
  for (const { json } of dashboards()) for (const p of json.panels) for (const t of p.targets ?? []) if (t.expr) out.push(t.expr);
  for (const { rules } of ruleFiles()) for (const g of rules.groups) for (const r of g.rules) out.push(r.expr);
  return out;
}

const PROMQL_WORDS = new Set([
  'sum', 'min', 'max', 'avg', 'count', 'by', 'without', 'rate', 'irate', 'increase', 'histogram_quantile', 'and', 'or', 'unless',
  'on', 'ignoring', 'group_left', 'group_right', 'offset', 'bool', 'absent', 'absent_over_time', 'clamp_min', 'clamp_max', 'vector',
  'time', 'le', 'topk', 'bottomk', 'delta', 'deriv', 'changes', 'resets', 'max_over_time', 'min_over_time', 'avg_over_time', 'label_replace',
  'sum_over_time', 'count_over_time', 'last_over_time', 'round', 'abs', 'scalar', 'sort', 'sort_desc',
]);

/**
 * The metric names an expression selects: identifiers outside label matchers ({…}), ranges ([…]),
 * strings and grouping clauses (by/without/on/ignoring (…)), that are no function or keyword.
 */
export function metricNamesIn(expr: string): Set<string> {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const names = new Set<string>();
  for (const m of stripped.matchAll(/(?<![\w.])([a-zA-Z_:][a-zA-Z0-9_:]*)(?![\w(])/g)) {
    const id = m[1] as string;
    if (PROMQL_WORDS.has(id) || /^\d/.test(id)) continue;
    const after = stripped.slice((m.index ?? 0) + id.length).trimStart();
    if (after.startsWith('(')) continue; // a function
    names.add(id);
  }
  return names;
}

export function referencedMetricNames(): Set<string> {
  const out = new Set<string>();
  for (const e of expressions()) for (const n of metricNamesIn(e)) out.add(n);
  return out;
}
