/**
 * The benchmark report: rows of (subject, baseline, ratio), printed as a table and written as
 * JSON to .cache/bench/results.json (git-ignored).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

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

const fmt = (x: number): string => {
  if (!Number.isFinite(x)) return String(x);
  const a = Math.abs(x);
  if (a >= 1000) return x.toFixed(0);
  if (a >= 100) return x.toFixed(1);
  if (a >= 1) return x.toFixed(2);
  return x.toFixed(3);
};

export function formatTable(sections: readonly BenchSection[]): string {
  const header = ['benchmark', 'metric', 'subject', 'baseline', 'ratio', 'n'];
  const lines: string[][] = [];
  for (const s of sections) for (const r of s.rows) lines.push([r.bench, r.metric, fmt(r.subject), fmt(r.baseline), `${r.ratio.toFixed(2)}x`, String(r.n)]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)));
  const right = new Set([2, 3, 4, 5]);
  const cell = (v: string, i: number): string => (right.has(i) ? v.padStart(widths[i]) : v.padEnd(widths[i]));
  const sep = widths.map((w) => '-'.repeat(w)).join('-+-');
  const out = [header.map(cell).join(' | '), sep];
  let last: string | undefined;
  for (const l of lines) {
    if (last !== undefined && l[0] !== last) out.push(sep);
    out.push(l.map(cell).join(' | '));
    last = l[0];
  }
  const legend = sections.map((s) => `  ${s.name}: subject = ${s.subjectLabel}; baseline = ${s.baselineLabel}`);
  return [...out, '', 'ratio = subject / baseline (latency > 1x: slower than baseline; rate < 1x: slower than baseline)', ...legend].join('\n');
}

export function environment(): Record<string, unknown> {
  let commit: string | undefined;
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    commit = undefined;
  }
  return {
    date: new Date().toISOString(),
    node: process.version,
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model,
    loadavg: os.loadavg(),
    commit,
  };
}

export const RESULTS_FILE = path.resolve(__dirname, '..', '.cache', 'bench', 'results.json');

export function writeResults(sections: readonly BenchSection[], extra: Record<string, unknown>): string {
  fs.mkdirSync(path.dirname(RESULTS_FILE), { recursive: true });
  fs.writeFileSync(RESULTS_FILE, `${JSON.stringify({ ...extra, sections }, null, 2)}\n`);
  return RESULTS_FILE;
}
