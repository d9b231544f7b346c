/** Reading Prometheus' text exposition format in tests: samples, sums over label subsets, metric names. */
import { request } from 'undici';

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export function parseExposition(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    const t = line.trim();
    if (!t || t.startsWith('#')) continue;
    const m = SAMPLE.exec(t);
    if (!m) throw new Error(`not a Prometheus sample line: ${t}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(LABEL)) labels[l[1] as string] = (l[2] as string).replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    out.push({ name: m[1] as string, labels, value: Number(m[3]) });
  }
  return out;
}

/** The sum of every sample of `name` whose labels include `match` (0 when none). */
export function sumOf(samples: Sample[], name: string, match: Record<string, string> = {}): number {
  return samples
    .filter((s) => s.name === name && Object.entries(match).every(([k, v]) => s.labels[k] === v))
    .reduce((a, s) => a + s.value, 0);
}

/** The metric names a scrape exposes (each sample's name: histograms' _bucket/_sum/_count included). */
export function namesOf(samples: Sample[]): Set<string> {
  return new Set(samples.map((s) => s.name));
}

export async function scrape(url: string): Promise<{ status: number; contentType: string; text: string; samples: Sample[] }> {
  const res = await request(url, { headersTimeout: 10_000, bodyTimeout: 10_000 });
  const text = await res.body.text();
  return { status: res.statusCode, contentType: String(res.headers['content-type'] ?? ''), text, samples: res.statusCode === 200 ? parseExposition(text) : [] };
}
