/**
 * The load curve: closed-loop lanes (each starts a flow, drives it to its outcome, starts the
 * next) at stepped concurrency, ours and the controls interleaved at every step (the order
 * rotates from step to step, so no side always runs first), repeated; each figure is the median
 * over the repetitions.
 *
 * A step runs a warm-up, then a window of at least `windowMs` that grows (to `maxWindowMs` at
 * most) until `minFlows` flows completed in it; throughput = flows completed in the window ÷ the window;
 * latencies = every flow started inside the window (also those that end during the drain, so the
 * slow ones are not dropped). Then no new flow starts and the step drains before the next.
 */
import type { Family, FlowRunner, FlowTiming, Side } from './flows';
import { msSince, now, summarize, type Summary } from './stats';

export interface StepResult {
  concurrency: number;
  flowsPerSec: number;
  /** The measurement window as it ran (ms). */
  windowMs: number;
  toWaiting: Summary;
  toOutcome: Summary;
  /** Flows that failed (never timed). */
  errors: number;
  firstError?: string;
  drainMs: number;
  /** CPU ms per flow run in the step (warm-up and drain included), per process, when a probe was given. */
  cpuMsPerFlow?: Record<string, number>;
}

/** Cumulative CPU time (ms) of each process of the stack, e.g. { node, server, simulator }. */
export type CpuProbe = () => Record<string, number>;

export interface StepBounds {
  warmMs: number;
  /** The shortest measurement window. */
  windowMs: number;
  /** The window grows until this many flows completed in it (slow flows on a busy machine)… */
  minFlows: number;
  /** …but never beyond this. */
  maxWindowMs: number;
}

export async function runStep(runner: FlowRunner, concurrency: number, b: StepBounds, cpu?: CpuProbe): Promise<StepResult> {
  const cpu0 = cpu?.();
  let total = 0;
  const t0 = now();
  const timings: FlowTiming[] = [];
  let completed = 0;
  let errors = 0;
  let firstError: string | undefined;
  let stopAt: number | undefined;
  const goOn = (): boolean => {
    if (stopAt !== undefined) return false;
    const t = msSince(t0);
    if (t < b.warmMs + b.windowMs || (completed < b.minFlows && t < b.warmMs + b.maxWindowMs)) return true;
    stopAt = t;
    return false;
  };
  const lane = async (): Promise<void> => {
    while (goOn()) {
      const startedAt = msSince(t0);
      try {
        const t = await runner();
        const doneAt = msSince(t0);
        total++;
        if (doneAt >= b.warmMs && stopAt === undefined) completed++;
        if (startedAt >= b.warmMs) timings.push(t);
      } catch (err) {
        errors++;
        firstError ??= (err as Error).message;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
  const windowMs = stopAt! - b.warmMs;
  const cpu1 = cpu?.();
  const cpuMsPerFlow = cpu0 && cpu1 ? Object.fromEntries(Object.keys(cpu1).map((k) => [k, (cpu1[k]! - (cpu0[k] ?? 0)) / Math.max(1, total)])) : undefined;
  return {
    concurrency,
    flowsPerSec: (completed / windowMs) * 1000,
    windowMs,
    toWaiting: summarize(timings.map((t) => t.toWaiting)),
    toOutcome: summarize(timings.map((t) => t.toOutcome)),
    errors,
    ...(firstError ? { firstError } : {}),
    drainMs: msSince(t0) - stopAt!,
    ...(cpuMsPerFlow ? { cpuMsPerFlow } : {}),
  };
}

export interface CurvePoint {
  concurrency: number;
  side: Side;
  /** Medians over the repetitions. */
  flowsPerSec: number;
  toWaitingP50: number;
  toWaitingP99: number;
  toOutcomeP50: number;
  toOutcomeP99: number;
  /** Flows timed, over all repetitions. */
  n: number;
  errors: number;
  firstError?: string;
  /** Median over the repetitions of CPU ms per flow, per process. */
  cpuMsPerFlow?: Record<string, number>;
}

export interface Curve {
  family: Family;
  levels: number[];
  reps: number;
  warmMs: number;
  windowMs: number;
  points: CurvePoint[];
  /** Every step as measured (repetition, order), for the JSON. */
  steps: (StepResult & { side: Side; rep: number })[];
}

const median = (xs: number[]): number => summarize(xs).median;

export async function runCurve(
  family: Family,
  runners: Partial<Record<Side, FlowRunner>>,
  opts: StepBounds & { levels: number[]; reps: number; onStep?: (s: string) => void; cpu?: CpuProbe },
): Promise<Curve> {
  const steps: Curve['steps'] = [];
  const sides = (['ours', 'control', 'equal'] as const).filter((s) => runners[s]);
  let turn = 0;
  for (let rep = 0; rep < opts.reps; rep++) {
    for (const c of opts.levels) {
      const order: Side[] = sides.map((_, i) => sides[(i + turn) % sides.length]!);
      turn++;
      for (const side of order) {
        const r = await runStep(runners[side]!, c, { ...opts, minFlows: Math.max(opts.minFlows, 2 * c) }, opts.cpu);
        steps.push({ ...r, side, rep });
        opts.onStep?.(
          `${family} ${side} c=${c} rep ${rep + 1}: ${r.flowsPerSec.toFixed(1)} flows/s (${(r.windowMs / 1000).toFixed(1)} s), outcome p50 ${r.toOutcome.median.toFixed(0)} p99 ${r.toOutcome.p99.toFixed(0)} ms${r.errors ? `, ${r.errors} errors (${r.firstError})` : ''}`,
        );
      }
    }
  }
  const points: CurvePoint[] = [];
  for (const c of opts.levels) {
    for (const side of sides) {
      const mine = steps.filter((s) => s.concurrency === c && s.side === side);
      points.push({
        concurrency: c,
        side,
        flowsPerSec: median(mine.map((s) => s.flowsPerSec)),
        toWaitingP50: median(mine.map((s) => s.toWaiting.median)),
        toWaitingP99: median(mine.map((s) => s.toWaiting.p99)),
        toOutcomeP50: median(mine.map((s) => s.toOutcome.median)),
        toOutcomeP99: median(mine.map((s) => s.toOutcome.p99)),
        n: mine.reduce((a, s) => a + s.toOutcome.n, 0),
        errors: mine.reduce((a, s) => a + s.errors, 0),
        ...(mine.find((s) => s.firstError) ? { firstError: mine.find((s) => s.firstError)!.firstError } : {}),
        ...(mine[0]?.cpuMsPerFlow
          ? { cpuMsPerFlow: Object.fromEntries(Object.keys(mine[0].cpuMsPerFlow).map((k) => [k, median(mine.map((s) => s.cpuMsPerFlow?.[k] ?? Number.NaN))])) }
          : {}),
      });
    }
  }
  return { family, levels: opts.levels, reps: opts.reps, warmMs: opts.warmMs, windowMs: opts.windowMs, points, steps };
}

export const point = (curve: Curve, side: Side, c: number): CurvePoint => curve.points.find((p) => p.side === side && p.concurrency === c)!;

/** Whether the curve measured that side (the equal-work control is absent from older result files). */
export const hasSide = (curve: Curve, side: Side): boolean => curve.points.some((p) => p.side === side);

/**
 * The knee of one side's curve: the lowest offered load whose throughput reaches 90 % of the
 * highest throughput measured (past it, more load adds latency, not throughput).
 */
export function knee(curve: Curve, side: Side): { concurrency: number; peak: number; peakAt: number } {
  const mine = curve.points.filter((p) => p.side === side);
  const best = mine.reduce((a, b) => (b.flowsPerSec > a.flowsPerSec ? b : a));
  const k = mine.find((p) => p.flowsPerSec >= 0.9 * best.flowsPerSec)!;
  return { concurrency: k.concurrency, peak: best.flowsPerSec, peakAt: best.concurrency };
}

/** The measured level nearest below or at half the knee (at least the lowest level). */
export function halfKnee(curve: Curve, kneeConcurrency: number): number {
  const below = curve.levels.filter((c) => c <= kneeConcurrency / 2);
  return below.length ? below[below.length - 1]! : curve.levels[0]!;
}
