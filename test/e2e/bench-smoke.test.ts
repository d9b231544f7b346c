/**
 * The benchmark cannot rot. `npm run bench -- --quick` (tiny sizes, no timing
 * assertions) runs every section, both controls included, against the test run's Temporal server with the simulator in its
 * own process, parks a few flows on `mpf worker` and `mpf gateway` processes, and writes the table, the chart and the JSON; the
 * ablation section (`--only ablation`) alike, each variant checked to take out what it names; plus the pure parts (goal marks,
 * the knee, the SVG writer).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type Curve, halfKnee, knee } from '../../bench/curve';
import { figure } from '../../bench/results';
import { lineChartSvg } from '../../bench/svg';
import { runRepoScript } from '../helpers/processes';

const TIMEOUT_MS = 4 * 60_000;

test('a figure is marked met or missed against its goal, with how far it misses', () => {
  assert.equal(figure('s', 'rate', 9, 10, 'flows/s', { kind: 'ratio>=', target: 0.85 }).met, true);
  const short = figure('s', 'rate', 6, 10, 'flows/s', { kind: 'ratio>=', target: 0.8 });
  assert.equal(short.met, false);
  assert.equal(short.miss, '25 % short');
  assert.equal(figure('s', 'p99', 14, 10, 'ms', { kind: 'ratio<=', target: 1.3 }).miss, '8 % over');
  assert.equal(figure('s', 'p50', 120, 100, 'ms', { kind: 'diff<=', target: 15 }).miss, '5.0 ms over');
  assert.equal(figure('s', 'p50', 110, 100, 'ms', { kind: 'diff<=', target: 15 }).met, true);
});

test('the knee is the lowest load reaching 90 % of the peak, and half the knee a measured level', () => {
  const pt = (concurrency: number, flowsPerSec: number) =>
    ({ concurrency, side: 'control', flowsPerSec, toWaitingP50: 0, toWaitingP99: 0, toOutcomeP50: 0, toOutcomeP99: 0, n: 1, errors: 0 }) as const;
  const curve: Curve = {
    family: 'swap',
    levels: [1, 2, 5, 10, 20, 50],
    reps: 1,
    warmMs: 0,
    windowMs: 0,
    points: [pt(1, 5), pt(2, 9), pt(5, 15), pt(10, 19), pt(20, 21), pt(50, 20)],
    steps: [],
  };
  assert.deepEqual(knee(curve, 'control'), { concurrency: 10, peak: 21, peakAt: 20 });
  assert.equal(halfKnee(curve, 10), 5);
  assert.equal(halfKnee(curve, 1), 1);
});

test('the chart writer draws every series as a path with its points', () => {
  const svg = lineChartSvg('t <&>', [
    { title: 'a', yLabel: 'y', series: [{ label: 's1', color: '#000', points: [[1, 1], [10, 5], [100, 2]] }, { label: 's2', color: '#f00', dashed: true, points: [[1, 2], [100, Number.NaN]] }] },
  ]);
  assert.match(svg, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
  assert.match(svg, /t &lt;&amp;&gt;/);
  assert.equal((svg.match(/<path /g) ?? []).length, 2);
  assert.equal((svg.match(/<circle /g) ?? []).length, 4);
  assert.ok(!svg.includes('NaN'));
});

test('npm run bench -- --quick runs every section and writes the table, the chart and the JSON', { timeout: TIMEOUT_MS + 30_000 }, async () => {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'mpf-bench-smoke-'));
  const address = process.env.MPF_TEST_TEMPORAL_ADDRESS;
  const args = ['--quick', '--sim-process', '--parked', '2,4', '--label', 'smoke', '--out-dir', out, ...(address ? ['--temporal-address', address] : [])];
  const { code, output: log } = await runRepoScript('bench/run.ts', args, TIMEOUT_MS);
  try {
    assert.equal(code, 0, log);
    for (const ext of ['md', 'json', 'svg']) assert.ok(fs.existsSync(path.join(out, `smoke.${ext}`)), `smoke.${ext}\n${log}`);
    const json = JSON.parse(fs.readFileSync(path.join(out, 'smoke.json'), 'utf8'));
    assert.match(json.command, /^npm run bench -- .*--quick/);
    assert.ok(json.machine.cpus >= 1 && json.loadBefore && json.loadAfter);
    assert.deepEqual(json.curves.map((c: Curve) => c.family), ['swap', 'link']);
    for (const c of json.curves as Curve[]) {
      for (const p of c.points) assert.equal(p.errors, 0, `${c.family} ${p.side} c=${p.concurrency}: ${p.firstError}`);
      for (const side of ['ours', 'control', 'equal']) assert.ok(c.points.some((p) => p.side === side && p.n > 0), `${c.family} ${side}`);
      assert.ok(c.points.every((p) => p.cpuMsPerFlow && 'simulator' in p.cpuMsPerFlow), 'CPU per flow of the simulator process');
    }
    assert.deepEqual(json.parked.map((l: { target: number }) => l.target), [2, 4]);
    assert.ok(json.parked.every((l: { workerRssMiB: number; gatewayRssMiB: number }) => l.workerRssMiB > 0 && l.gatewayRssMiB > 0), 'RSS of the mpf worker and gateway processes');
    const sections = new Set(json.figures.map((f: { section: string }) => f.section));
    for (const s of ['swap curve', 'link curve', 'swap curve ÷ equal-work control', 'link curve ÷ equal-work control', 'gateway ÷ typed client', 'provider client: GET categories', 'codec: SwapView', 'parked flows']) assert.ok(sections.has(s), s);
    assert.ok(json.figures.every((f: { goal?: unknown; met?: boolean }) => !f.goal || typeof f.met === 'boolean'));
    // The equal-work control calls the provider as ours does: the simulator's CPU per flow is one of its figures.
    assert.ok(json.figures.some((f: { section: string; metric: string }) => f.section === 'swap curve ÷ equal-work control' && /simulator/.test(f.metric)));
    assert.deepEqual(
      json.histories.filter((h: { side: string }) => h.side === 'equal').map((h: { family: string; counts: { signals: number } }) => [h.family, h.counts.signals]),
      [['swap', 1], ['link', 1]],
      "the equal-work control's flows take the provider's notification by signal",
    );
    const md = fs.readFileSync(path.join(out, 'smoke.md'), 'utf8');
    assert.match(md, /Goals met: \d+ of \d+/);
    assert.match(fs.readFileSync(path.join(out, 'smoke.svg'), 'utf8'), /<svg[^>]*>[\s\S]*<path [\s\S]*<\/svg>/);
  } finally {
    fs.rmSync(out, { recursive: true, force: true });
  }
});

test('npm run bench -- --quick --only ablation takes each workflow feature out of our flows, and the four leave no marker, upsert or memo update', { timeout: TIMEOUT_MS + 30_000 }, async () => {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'mpf-bench-ablation-'));
  const address = process.env.MPF_TEST_TEMPORAL_ADDRESS;
  const args = ['--quick', '--only', 'ablation', '--label', 'ablation', '--out-dir', out, ...(address ? ['--temporal-address', address] : [])];
  const { code, output: log } = await runRepoScript('bench/run.ts', args, TIMEOUT_MS);
  try {
    assert.equal(code, 0, log);
    const json = JSON.parse(fs.readFileSync(path.join(out, 'ablation.json'), 'utf8'));
    assert.deepEqual(json.ablation.map((a: { family: string }) => a.family), ['swap', 'link']);
    for (const a of json.ablation as { family: string; rows: { variant: string; steps: { errors: number; flowsPerSec: number }[]; history: { events: number; eventTypes: string[] } }[] }[]) {
      assert.deepEqual(a.rows.map((r) => r.variant), ['ours', '-state-sa', '-memo', '-patches', '-log', '-all', 'equal']);
      for (const r of a.rows) assert.ok(r.steps.length > 0 && r.steps.every((s) => s.errors === 0 && s.flowsPerSec > 0), `${a.family} ${r.variant}`);
      const count = (variant: string, type: string): number => a.rows.find((r) => r.variant === variant)!.history.eventTypes.filter((t) => t === type).length;
      // Each variant takes out what it says, and only that.
      assert.ok(count('ours', 'upsertWorkflowSearchAttributes') >= 3 && count('ours', 'workflowPropertiesModified') >= 2 && count('ours', 'markerRecorded') === 1, `${a.family} ours`);
      assert.equal(count('-state-sa', 'upsertWorkflowSearchAttributes'), 1, `${a.family}: only the patch's TemporalChangeVersion upsert is left`);
      assert.equal(count('-state-sa', 'workflowPropertiesModified'), count('ours', 'workflowPropertiesModified'));
      assert.equal(count('-memo', 'workflowPropertiesModified'), 0);
      assert.equal(count('-memo', 'upsertWorkflowSearchAttributes'), count('ours', 'upsertWorkflowSearchAttributes'));
      assert.equal(count('-patches', 'markerRecorded'), 0);
      assert.equal(count('-patches', 'upsertWorkflowSearchAttributes'), count('ours', 'upsertWorkflowSearchAttributes') - 1);
      // (Whole histories vary in length with timing: a signal may come in a workflow task of its own.)
      const commands = (variant: string): number[] => ['markerRecorded', 'upsertWorkflowSearchAttributes', 'workflowPropertiesModified'].map((t) => count(variant, t));
      assert.deepEqual(commands('-log'), commands('ours'), 'a log line is no command');
      assert.deepEqual(commands('-all'), [0, 0, 0], `${a.family}: with the four taken out, our flow records no marker, upsert or memo update`);
      assert.deepEqual(commands('equal'), [0, 0, 0]);
    }
    assert.match(fs.readFileSync(path.join(out, 'ablation.md'), 'utf8'), /## Where our extra CPU goes, feature by feature/);
  } finally {
    fs.rmSync(out, { recursive: true, force: true });
  }
});
