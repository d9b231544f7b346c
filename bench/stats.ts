/**
 * Timing and statistics helpers of the benchmarks: monotonic clock (process.hrtime.bigint),
 * median / p95, paired (interleaved) A/B sampling and bounded-concurrency throughput runs.
 *
 * Every figure the benchmarks report is a RATIO of a subject against a baseline measured in the
 * same run, on the same machine, interleaved with it, so a noisy shared machine moves both sides.
 */

/** Monotonic time in nanoseconds. */
export const now = (): bigint => process.hrtime.bigint();

/** Milliseconds elapsed since `start` (a value of now()). */
export const msSince = (start: bigint): number => Number(now() - start) / 1e6;

export interface Summary {
  n: number;
  median: number;
  p95: number;
  p99: number;
  mean: number;
  min: number;
  max: number;
}

/** Nearest-rank percentile of an ascending array (p in 0..100). */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
}

/** The median of repetitions' figures, a missing (NaN) one left out; the mean of the middle two for an even count. */
export function medianOf(xs: readonly number[]): number {
  const s = xs.filter((x) => !Number.isNaN(x)).sort((a, b) => a - b);
  if (!s.length) return Number.NaN;
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export function summarize(samples: readonly number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  const sum = sorted.reduce((s, x) => s + x, 0);
  return {
    n: sorted.length,
    median: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    mean: sorted.length ? sum / sorted.length : Number.NaN,
    min: sorted[0] ?? Number.NaN,
    max: sorted[sorted.length - 1] ?? Number.NaN,
  };
}

/** Times one call of `fn` in ms. */
export async function timeMs(fn: () => Promise<unknown>): Promise<number> {
  const t0 = now();
  await fn();
  return msSince(t0);
}

export interface PairedOptions {
  warmup: number;
  iterations: number;
  /** Stop early (keeping what was measured) once this much time went by; at least `minIterations` run. */
  budgetMs: number;
  minIterations?: number;
}

export interface PairedSamples {
  subject: number[];
  baseline: number[];
  /** True when the time budget cut the run short. */
  truncated: boolean;
}

/**
 * Runs subject and baseline alternately, one call each per round, swapping which goes first every
 * round (so neither side always runs on a warmer cache or right after a GC). Returns ms per call.
 */
export async function pairedSamples(
  subject: () => Promise<unknown>,
  baseline: () => Promise<unknown>,
  opts: PairedOptions,
): Promise<PairedSamples> {
  for (let i = 0; i < opts.warmup; i++) {
    await subject();
    await baseline();
  }
  const out: PairedSamples = { subject: [], baseline: [], truncated: false };
  const t0 = now();
  const min = opts.minIterations ?? Math.min(opts.iterations, 5);
  for (let i = 0; i < opts.iterations; i++) {
    if (i >= min && msSince(t0) > opts.budgetMs) {
      out.truncated = true;
      break;
    }
    if (i % 2 === 0) {
      out.subject.push(await timeMs(subject));
      out.baseline.push(await timeMs(baseline));
    } else {
      out.baseline.push(await timeMs(baseline));
      out.subject.push(await timeMs(subject));
    }
  }
  return out;
}

export interface ThroughputResult {
  ops: number;
  elapsedMs: number;
  opsPerSec: number;
  latency: Summary;
  /** Every call's latency (ms). */
  samples: number[];
}

/** Runs `count` calls of `op(i)` with at most `concurrency` in flight; ops/s over the wall time. */
export async function throughput(count: number, concurrency: number, op: (i: number) => Promise<unknown>): Promise<ThroughputResult> {
  const latencies: number[] = [];
  let next = 0;
  const t0 = now();
  const lane = async (): Promise<void> => {
    for (let i = next++; i < count; i = next++) latencies.push(await timeMs(() => op(i)));
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, lane));
  const elapsedMs = msSince(t0);
  return { ops: count, elapsedMs, opsPerSec: (count / elapsedMs) * 1000, latency: summarize(latencies), samples: latencies };
}

/**
 * Throughput of subject vs baseline in alternating rounds (B, S, S, B, B, S, …): each side's
 * ops/s is its total ops over its total wall time across the rounds.
 */
export async function pairedThroughput(
  subject: (i: number) => Promise<unknown>,
  baseline: (i: number) => Promise<unknown>,
  opts: { rounds: number; perRound: number; concurrency: number },
): Promise<{ subject: ThroughputResult; baseline: ThroughputResult }> {
  const acc = { subject: [] as ThroughputResult[], baseline: [] as ThroughputResult[] };
  for (let r = 0; r < opts.rounds; r++) {
    const order: ('subject' | 'baseline')[] = r % 2 === 0 ? ['baseline', 'subject'] : ['subject', 'baseline'];
    for (const side of order) {
      acc[side].push(await throughput(opts.perRound, opts.concurrency, side === 'subject' ? subject : baseline));
    }
  }
  const merge = (rs: ThroughputResult[]): ThroughputResult => {
    const ops = rs.reduce((s, r) => s + r.ops, 0);
    const elapsedMs = rs.reduce((s, r) => s + r.elapsedMs, 0);
    const samples = rs.flatMap((r) => r.samples);
    return { ops, elapsedMs, opsPerSec: (ops / elapsedMs) * 1000, latency: summarize(samples), samples };
  };
  return { subject: merge(acc.subject), baseline: merge(acc.baseline) };
}

/** Ops/s of a side of paired per-call samples: calls over the summed call time. */
export const opsPerSec = (samplesMs: readonly number[]): number =>
  (samplesMs.length / samplesMs.reduce((s, x) => s + x, 0)) * 1000;
