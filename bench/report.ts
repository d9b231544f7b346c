/**
 * Rows of (subject, baseline, ratio) of the codec and provider-client benchmarks; results.ts turns
 * them into figures.
 */

export interface Row {
  bench: string;
  /** What is measured, with its unit, e.g. "median latency (ms)". */
  metric: string;
  subject: number;
  baseline: number;
  /** subject / baseline. For latencies > 1 means slower than the baseline; for rates < 1 means slower. */
  ratio: number;
  /** Sample count per side, or ops counted. */
  n: number;
  note?: string;
}

export interface BenchSection {
  name: string;
  subjectLabel: string;
  baselineLabel: string;
  rows: Row[];
  /** Extra facts (payload sizes, truncation). */
  info?: Record<string, unknown>;
}

export function row(bench: string, metric: string, subject: number, baseline: number, n: number, note?: string): Row {
  return { bench, metric, subject, baseline, ratio: subject / baseline, n, ...(note ? { note } : {}) };
}
