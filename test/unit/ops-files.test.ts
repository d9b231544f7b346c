/**
 * The committed operations files: the Grafana dashboard (ops/grafana/*.json) and the Prometheus
 * alert rules (ops/prometheus/alerts.yml) parse, are well formed, alert on the failures an operator
 * of payments must hear about, and name only metrics of our catalogue (src/observability/metric-catalog.ts) or
 * of the SDK / Node process. That every name they use is really exposed by a running worker and
 * gateway is checked against a real run in test/e2e/metrics.test.ts.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { METRICS } from '../../src/observability/metric-catalog';
import { dashboards, expressions, metricNamesIn, referencedMetricNames, ruleFiles } from '../helpers/ops-files';

/** Every series name our catalogue exposes (histograms as _bucket, _sum, _count). */
function catalogueNames(): Set<string> {
  const out = new Set<string>();
  for (const m of Object.values(METRICS)) {
    if (m.type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) out.add(`${m.name}${s}`);
    else out.add(m.name);
  }
  return out;
}

/** Parentheses, brackets and braces balance outside strings. */
function balanced(expr: string): boolean {
  const open: string[] = [];
  const pairs: Record<string, string> = { ')': '(', ']': '[', '}': '{' };
  for (const c of expr.replace(/"(?:[^"\\]|\\.)*"/g, '""')) {
    if ('([{'.includes(c)) open.push(c);
    else if (c in pairs && open.pop() !== pairs[c]) return false;
  }
  return open.length === 0;
}

describe('the Grafana dashboard', () => {
  const all = dashboards();

  test('parses, has a uid and title, unique panel ids, panels inside the 24-column grid, and a query on every panel', () => {
    assert.ok(all.length >= 1, 'a dashboard is committed');
    for (const { file, json } of all) {
      assert.ok(json.uid && json.title, file);
      const ids = json.panels.map((p) => p.id);
      assert.equal(new Set(ids).size, ids.length, `${file}: duplicate panel ids`);
      for (const p of json.panels) {
        const grid = p.gridPos as { x: number; w: number; h: number };
        assert.ok(grid && grid.x + grid.w <= 24 && grid.h > 0, `${file}: ${p.title} is outside the grid`);
        if (p.type === 'row') continue;
        assert.ok((p.targets ?? []).length > 0, `${file}: ${p.title} has no query`);
        for (const t of p.targets ?? []) {
          assert.ok(t.expr && balanced(t.expr), `${file}: ${p.title}: ${t.expr}`);
          assert.deepEqual((t as { datasource?: unknown }).datasource, { type: 'prometheus', uid: '${datasource}' }, `${file}: ${p.title} uses the datasource variable`);
        }
      }
    }
  });

  test('shows flows, PIN attempts, provider calls and latency, notifications, readiness and the SDK worker', () => {
    const used = new Set(all.flatMap(({ json }) => json.panels.flatMap((p) => (p.targets ?? []).flatMap((t) => [...metricNamesIn(t.expr ?? '')]))));
    for (const name of [
      'mpf_flows_started_total', 'mpf_flows_finished_total', 'mpf_reconciliations_total', 'mpf_pin_attempts_total', 'mpf_provider_calls_total',
      'mpf_provider_call_duration_seconds_bucket', 'mpf_gateway_http_requests_total', 'mpf_gateway_notifications_total',
      'mpf_gateway_task_queue_pollers', 'temporal_workflow_task_schedule_to_start_latency_bucket', 'temporal_worker_task_slots_available',
    ]) {
      assert.ok(used.has(name), `no panel shows ${name}`);
    }
  });
});

describe('the Prometheus alert rules', () => {
  const files = ruleFiles();
  const rules = files.flatMap(({ rules: r }) => r.groups.flatMap((g) => g.rules));

  test('parse, every rule has a unique name, an expression that balances, a severity and a summary', () => {
    assert.ok(files.length >= 1 && rules.length > 0);
    const names = rules.map((r) => r.alert);
    assert.equal(new Set(names).size, names.length, 'duplicate alert names');
    for (const r of rules) {
      assert.ok(r.alert, 'an alerting rule (not a recording rule)');
      assert.ok(balanced(r.expr), `${r.alert}: ${r.expr}`);
      assert.ok(['warning', 'critical'].includes(r.labels?.severity ?? ''), `${r.alert}: severity`);
      assert.ok(r.annotations?.summary, `${r.alert}: summary`);
      if (r.for !== undefined) assert.match(r.for, /^\d+[smh]$/, `${r.alert}: for`);
    }
  });

  test('alert on confirmations failing, provider latency, refused notifications, no pollers and reconciliations', () => {
    const on = (metric: string, alert: string) => {
      const rule = rules.find((r) => r.alert === alert);
      assert.ok(rule, `alert ${alert} is missing`);
      assert.ok(metricNamesIn(rule.expr).has(metric), `${alert} does not use ${metric}`);
    };
    on('mpf_provider_calls_total', 'MpfSwapConfirmationsFailing');
    on('mpf_pin_attempts_total', 'MpfSwapsFailingAfterPin');
    on('mpf_provider_call_duration_seconds_bucket', 'MpfProviderLatencyHigh');
    on('mpf_gateway_notifications_total', 'MpfNotificationsRefused');
    on('mpf_gateway_task_queue_pollers', 'MpfNoWorkerPolling');
    on('mpf_reconciliations_total', 'MpfReconciliationNeeded');
  });
});

describe('metric names in the dashboard and the rules', () => {
  test('each one of our own (mpf_*) is in the catalogue; the others are the SDK\'s (temporal_*), the Node process\'s or Prometheus\' own', () => {
    const ours = catalogueNames();
    assert.ok(expressions().length > 20);
    for (const name of referencedMetricNames()) {
      if (name.startsWith('mpf_')) assert.ok(ours.has(name), `${name} is not in src/observability/metric-catalog.ts`);
      else assert.match(name, /^(temporal_|process_|nodejs_|up$)/, `${name} is nobody's metric`);
    }
  });

  test('the name extraction sees metrics inside functions, aggregations and ratios, and not labels, functions or keywords (so the checks can fail)', () => {
    const names = metricNamesIn(
      'histogram_quantile(0.95, sum by (endpoint, le) (rate(mpf_nope_bucket{endpoint="swapInit", le!="1"}[5m]))) / clamp_min(sum(up{job="x"}), 1e-9) > 2 and on (job) mpf_other_total offset 5m',
    );
    assert.deepEqual([...names].sort(), ['mpf_nope_bucket', 'mpf_other_total', 'up']);
    assert.ok(!catalogueNames().has('mpf_nope_bucket'));
  });
});
