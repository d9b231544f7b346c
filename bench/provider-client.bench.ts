/**
 * Provider client overhead: GET categories through ProviderClient (headers, zod parsing of the
 * envelope and data, error classification, bounded body read) against the same GET with a bare
 * undici Pool request + JSON.parse, on the same simulator over loopback. Sequential latency
 * (interleaved pairs) and throughput at concurrency 8 (the client's connection bound).
 */
import { Pool } from 'undici';
import { PROVIDER_PATHS } from '../src/contract/provider';
import { ProviderClient } from '../src/provider/client';
import { SIMULATOR_DEFAULT_CREDENTIALS as EMBEDDED_SIMULATOR_CREDENTIALS } from '../src/simulator/options';
import { type BenchSection, row } from './report';
import { opsPerSec, pairedSamples, pairedThroughput, summarize } from './stats';

export interface ProviderBenchOptions {
  warmup: number;
  sequential: number;
  concurrency: number;
  rounds: number;
  perRound: number;
  budgetMs: number;
}

export async function benchProviderClient(baseUrl: string, opts: ProviderBenchOptions): Promise<BenchSection> {
  const client = new ProviderClient({ baseUrl, ...EMBEDDED_SIMULATOR_CREDENTIALS, maxConnections: opts.concurrency });
  const origin = new URL(baseUrl).origin;
  const pool = new Pool(origin, { connections: opts.concurrency, pipelining: 1 });
  const path = PROVIDER_PATHS.categories;
  const headers = { accept: 'application/json', 'user-agent': 'mpf-bench', 'x-merchant-ref': EMBEDDED_SIMULATOR_CREDENTIALS.merchantRef };

  const typed = async (): Promise<number> => (await client.listCategories()).length;
  const bare = async (): Promise<number> => {
    const res = await pool.request({ origin, path, method: 'GET', headers });
    const body = JSON.parse(await res.body.text()) as { data?: { data?: unknown[] } };
    if (res.statusCode !== 200) throw new Error(`bare GET categories answered ${res.statusCode}`);
    return body.data?.data?.length ?? 0;
  };

  try {
    const [a, b] = [await typed(), await bare()];
    if (a === 0 || a !== b) throw new Error(`typed and bare GETs disagree (${a} vs ${b} categories)`);

    const seq = await pairedSamples(typed, bare, {
      warmup: opts.warmup,
      iterations: opts.sequential,
      budgetMs: opts.budgetMs,
      minIterations: 50,
    });
    const s = summarize(seq.subject);
    const base = summarize(seq.baseline);
    const conc = await pairedThroughput(typed, bare, { rounds: opts.rounds, perRound: opts.perRound, concurrency: opts.concurrency });
    const bench = 'provider client: GET categories';
    const n = seq.subject.length;
    return {
      name: 'provider client',
      subjectLabel: 'ProviderClient.listCategories (zod + classification)',
      baselineLabel: 'bare undici Pool request + JSON.parse, same simulator',
      rows: [
        row(bench, 'sequential median latency (ms)', s.median, base.median, n),
        row(bench, 'sequential p95 latency (ms)', s.p95, base.p95, n),
        row(bench, 'sequential throughput (req/s)', opsPerSec(seq.subject), opsPerSec(seq.baseline), n),
        row(bench, `concurrency ${opts.concurrency} throughput (req/s)`, conc.subject.opsPerSec, conc.baseline.opsPerSec, conc.subject.ops),
        row(bench, `concurrency ${opts.concurrency} p95 latency (ms)`, conc.subject.latency.p95, conc.baseline.latency.p95, conc.subject.ops),
      ],
      info: { categories: a, sequentialTruncated: seq.truncated },
    };
  } finally {
    await client.close();
    await pool.close();
  }
}
