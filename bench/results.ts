/**
 * The benchmark's figures (ours ÷ control, each marked against its goal) and the files a run writes
 * under bench/results/: <label>.md (the table), <label>.svg (the load-curve chart) and
 * <label>.json (every figure and step, the machine, the commit, the command, the load).
 */
import fs from 'node:fs';
import path from 'node:path';
import { type Curve, type CurvePoint, halfKnee, hasSide, knee, point } from './curve';
import type { Family } from './flows';
import type { BenchSection } from './report';
import { lineChartSvg, type Series } from './svg';

export interface Goal {
  /** ratio ≥ / ≤ target, or (diff) ours − control ≤ target (ms). */
  kind: 'ratio>=' | 'ratio<=' | 'diff<=';
  target: number;
}

export interface Figure {
  section: string;
  metric: string;
  ours: number;
  control: number;
  ratio: number;
  unit: string;
  n?: number;
  goal?: Goal;
  met?: boolean;
  /** How far from the goal, in words, when missed. */
  miss?: string;
  note?: string;
}

export function figure(section: string, metric: string, ours: number, control: number, unit: string, goal?: Goal, extra: Partial<Figure> = {}): Figure {
  const ratio = ours / control;
  const f: Figure = { section, metric, ours, control, ratio, unit, ...extra };
  if (goal) {
    f.goal = goal;
    if (goal.kind === 'ratio>=') f.met = ratio >= goal.target;
    else if (goal.kind === 'ratio<=') f.met = ratio <= goal.target;
    else f.met = ours - control <= goal.target;
    if (!f.met) {
      f.miss =
        goal.kind === 'diff<='
          ? `${(ours - control - goal.target).toFixed(1)} ms over`
          : goal.kind === 'ratio>='
            ? `${(((goal.target - ratio) / goal.target) * 100).toFixed(0)} % short`
            : `${(((ratio - goal.target) / goal.target) * 100).toFixed(0)} % over`;
    }
  }
  return f;
}

const goalText = (g: Goal): string => (g.kind === 'diff<=' ? `diff ≤ ${g.target} ms` : `${g.kind.slice(5)} ${g.target}×`);

/** The curve's figures: idle, knee, half the knee; the issue's goals on them. */
export function curveFigures(c: Curve): Figure[] {
  const fam = c.family;
  const [wait, out] = fam === 'swap' ? ['start→awaiting_pin', 'PIN→outcome'] : ['start→awaiting_payment', 'payment→completed'];
  const sec = `${fam} curve`;
  const kc = knee(c, 'control');
  const ko = knee(c, 'ours');
  const half = halfKnee(c, kc.concurrency);
  const idle = c.levels[0]!;
  const pi = [point(c, 'ours', idle), point(c, 'control', idle)] as const;
  const ph = [point(c, 'ours', half), point(c, 'control', half)] as const;
  const pk = [point(c, 'ours', kc.concurrency), point(c, 'control', kc.concurrency)] as const;
  return [
    figure(sec, `peak throughput (flows/s; ours at c=${ko.peakAt}, control at c=${kc.peakAt})`, ko.peak, kc.peak, 'flows/s', { kind: 'ratio>=', target: 0.85 }),
    figure(sec, `throughput at the control's knee c=${kc.concurrency} (flows/s)`, pk[0].flowsPerSec, pk[1].flowsPerSec, 'flows/s', { kind: 'ratio>=', target: 0.85 }),
    figure(sec, `knee (concurrency reaching 90 % of peak)`, ko.concurrency, kc.concurrency, 'flows'),
    figure(sec, `${out} p99 at half the knee c=${half} (ms)`, ph[0].toOutcomeP99, ph[1].toOutcomeP99, 'ms', { kind: 'ratio<=', target: 1.3 }),
    figure(sec, `${out} p50 idle c=${idle} (ms)`, pi[0].toOutcomeP50, pi[1].toOutcomeP50, 'ms', { kind: 'diff<=', target: 15 }),
    figure(sec, `${wait} p50 idle c=${idle} (ms)`, pi[0].toWaitingP50, pi[1].toWaitingP50, 'ms', { kind: 'diff<=', target: 15 }),
    figure(sec, `${wait} p99 at half the knee c=${half} (ms)`, ph[0].toWaitingP99, ph[1].toWaitingP99, 'ms'),
    ...cpuFigures(sec, kc.concurrency, pk[0].cpuMsPerFlow, pk[1].cpuMsPerFlow),
  ];
}

/**
 * Ours ÷ the equal-work control (bench/control/equal-work-*: the same provider calls, validation
 * and codec, nothing else), at ITS knee: information beside the same-shape figures, no goals.
 */
export function equalWorkFigures(c: Curve): Figure[] {
  if (!hasSide(c, 'equal')) return [];
  const out = c.family === 'swap' ? 'PIN→outcome' : 'payment→completed';
  const wait = c.family === 'swap' ? 'start→awaiting_pin' : 'start→awaiting_payment';
  const sec = `${c.family} curve ÷ equal-work control`;
  const ke = knee(c, 'equal');
  const ko = knee(c, 'ours');
  const half = halfKnee(c, ke.concurrency);
  const ph = [point(c, 'ours', half), point(c, 'equal', half)] as const;
  const pk = [point(c, 'ours', ke.concurrency), point(c, 'equal', ke.concurrency)] as const;
  return [
    figure(sec, `peak throughput (flows/s; ours at c=${ko.peakAt}, equal-work at c=${ke.peakAt})`, ko.peak, ke.peak, 'flows/s'),
    figure(sec, `throughput at the equal-work control's knee c=${ke.concurrency} (flows/s)`, pk[0].flowsPerSec, pk[1].flowsPerSec, 'flows/s'),
    figure(sec, `knee (concurrency reaching 90 % of peak)`, ko.concurrency, ke.concurrency, 'flows'),
    figure(sec, `${out} p99 at half the knee c=${half} (ms)`, ph[0].toOutcomeP99, ph[1].toOutcomeP99, 'ms'),
    figure(sec, `${wait} p99 at half the knee c=${half} (ms)`, ph[0].toWaitingP99, ph[1].toWaitingP99, 'ms'),
    ...cpuFigures(sec, ke.concurrency, pk[0].cpuMsPerFlow, pk[1].cpuMsPerFlow, "the equal-work control's knee", false),
  ];
}

/** Goals on CPU per flow, by process: the bench process (worker + client + gateway) and the Temporal server. */
const CPU_GOALS: Record<string, Goal | undefined> = { node: { kind: 'ratio<=', target: 1.3 }, server: { kind: 'ratio<=', target: 1.15 } };
const CPU_NAMES: Record<string, string> = { node: 'bench process (worker + client + gateway)', server: 'Temporal server', postgresql: 'PostgreSQL', simulator: 'simulator (the provider)' };

function cpuFigures(sec: string, c: number, ours?: Record<string, number>, control?: Record<string, number>, where = "the control's knee", goals = true): Figure[] {
  if (!ours || !control) return [];
  return Object.keys(ours)
    // The simulator is the provider: the same-shape control never calls it, so it has no ratio there (it stays in
    // the CPU table); the equal-work control calls it as ours does, so there it is a figure.
    .filter((k) => (k !== 'simulator' || !goals) && Number.isFinite(ours[k]) && Number.isFinite(control[k]))
    .map((k) => figure(sec, `CPU per flow at ${where} c=${c}: ${CPU_NAMES[k] ?? k} (ms)`, ours[k]!, control[k]!, 'ms', goals ? CPU_GOALS[k] : undefined));
}

/** Rows of the older sections (codec, provider client) as figures; the HTTP path's goal on throughput. */
export function sectionFigures(s: BenchSection): Figure[] {
  return s.rows.map((r) => {
    const goal: Goal | undefined = s.name === 'provider client' && /throughput/.test(r.metric) ? { kind: 'ratio>=', target: 0.9 } : undefined;
    return figure(r.bench, r.metric, r.subject, r.baseline, '', goal, { n: r.n, note: `ours = ${s.subjectLabel}; control = ${s.baselineLabel}` });
  });
}

const fmt = (x: number): string => {
  if (!Number.isFinite(x)) return String(x);
  const a = Math.abs(x);
  if (a >= 1000) return x.toFixed(0);
  if (a >= 100) return x.toFixed(1);
  if (a >= 1) return x.toFixed(2);
  return x.toFixed(3);
};

/** The curve step by step: ours / the same-shape control [/ the equal-work control] in each cell. */
export function curveTable(c: Curve): string {
  const [wait, out] = c.family === 'swap' ? ['start→awaiting_pin', 'PIN→outcome'] : ['start→awaiting_payment', 'payment→completed'];
  const eq = hasSide(c, 'equal');
  const who = eq ? 'ours / control / equal-work' : 'ours / control';
  const lines = [
    `| concurrency | flows/s ours | flows/s control | ratio |${eq ? ' flows/s equal-work | ratio ÷ equal-work |' : ''} ${out} p50 ${who} (ms) | ${out} p99 ${who} (ms) | ${wait} p50 ${who} (ms) | ${wait} p99 ${who} (ms) | flows timed | errors |`,
    `|---:|---:|---:|---:|${eq ? '---:|---:|' : ''}---:|---:|---:|---:|---:|---:|`,
  ];
  for (const cc of c.levels) {
    const [o, k] = [point(c, 'ours', cc), point(c, 'control', cc)];
    const e = eq ? point(c, 'equal', cc) : undefined;
    const ps = e ? [o, k, e] : [o, k];
    const cell = (f: (p: CurvePoint) => number, format = fmt): string => ps.map((p) => format(f(p))).join(' / ');
    lines.push(
      `| ${cc} | ${fmt(o.flowsPerSec)} | ${fmt(k.flowsPerSec)} | ${(o.flowsPerSec / k.flowsPerSec).toFixed(2)}× |${e ? ` ${fmt(e.flowsPerSec)} | ${(o.flowsPerSec / e.flowsPerSec).toFixed(2)}× |` : ''} ${cell((p) => p.toOutcomeP50)} | ${cell((p) => p.toOutcomeP99)} | ${cell((p) => p.toWaitingP50)} | ${cell((p) => p.toWaitingP99)} | ${cell((p) => p.n, String)} | ${cell((p) => p.errors, String)} |`,
    );
  }
  return lines.join('\n');
}

export function figuresTable(figs: readonly Figure[]): string {
  const lines = ['| section | metric | ours | control | ratio | goal | |', '|---|---|---:|---:|---:|---|---|'];
  for (const f of figs) {
    const mark = f.goal ? (f.met ? 'met' : `**missed** (${f.miss})`) : '';
    lines.push(`| ${f.section} | ${f.metric} | ${fmt(f.ours)} | ${fmt(f.control)} | ${f.ratio.toFixed(2)}× | ${f.goal ? goalText(f.goal) : ''} | ${mark} |`);
  }
  return lines.join('\n');
}

const COLORS: Record<Family, string> = { swap: '#1f6fb4', link: '#d9771e' };

export function curveChart(curves: readonly Curve[], subtitle: string): string {
  const label = { ours: '(ours)', control: '(control, no-op activities)', equal: '(equal-work control)' } as const;
  const series = (metric: 'flowsPerSec' | 'toOutcomeP99'): Series[] =>
    curves.flatMap((c) =>
      (['ours', 'control', 'equal'] as const)
        .filter((side) => hasSide(c, side))
        .map((side) => ({
          label: `${c.family} ${label[side]}`,
          color: COLORS[c.family],
          dashed: side === 'control' ? true : side === 'equal' ? 'dotted' : false,
          points: c.levels.map((l) => [l, point(c, side, l)[metric]] as [number, number]),
        })),
    );
  const markers = curves.flatMap((c) => [{ x: knee(c, 'control').concurrency, label: `${c.family} control knee`, color: COLORS[c.family] }]);
  return lineChartSvg(
    'Throughput and p99 against offered load: our flows vs controls of the same shape and of equal work',
    [
      { title: 'completed flows/s', yLabel: 'flows/s', series: series('flowsPerSec'), markers },
      { title: 'p99 PIN→outcome (swap) / payment→completed (link)', yLabel: 'ms', series: series('toOutcomeP99'), markers },
    ],
    subtitle,
  );
}

export const RESULTS_DIR = path.resolve(__dirname, 'results');

export function writeRunFiles(label: string, files: { md: string; svg?: string; json: unknown }, dir = RESULTS_DIR): string[] {
  fs.mkdirSync(dir, { recursive: true });
  const out = [path.join(dir, `${label}.md`), path.join(dir, `${label}.json`)];
  fs.writeFileSync(out[0]!, files.md);
  fs.writeFileSync(out[1]!, `${JSON.stringify(files.json, null, 2)}\n`);
  if (files.svg) {
    out.push(path.join(dir, `${label}.svg`));
    fs.writeFileSync(out[2]!, files.svg);
  }
  return out;
}
