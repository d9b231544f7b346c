/**
 * The price of going live, per start: POST /v1/swaps through the gateway (start only: each answer
 * is a swap awaiting its PIN, left parked) at stepped concurrency, five variants side by side on
 * the same stack, the order rotating from step to step, each figure ÷ variant (a) of the same run:
 *
 *  (a) all off: no daily limit, no Idempotency-Key;
 *  (b) a per-user limit (LIMIT_SWAP_COUNT_PER_USER_DAY): one update-with-start in the user's ledger per start;
 *  (c) per-user and deployment-wide (LIMIT_SWAP_COUNT_PER_DEPLOYMENT_DAY): also one update in the
 *      deployment's one ledger, every start of the deployment in turn;
 *  (d) an Idempotency-Key on every start (its record in Temporal), no limit;
 *  (e) everything: (c)'s limits and (d)'s key;
 *  (f) (c) as before leases: the deployment's count reserved in its one ledger per start.
 *
 * Each variant is a gateway of its own (its own MpfClient with the limits set, as LIMIT_* set them
 * from the environment: config/limits-env.ts, leasing the deployment's count in blocks as `mpf
 * gateway` does, but for (f)) in this process, on the stack's task queue and worker.
 * The provider guard's reading is on in every variant, as in production: every gateway and worker
 * process reads it once a second whatever its traffic (temporal/provider-guard-reading.ts), and a
 * start only looks at that reading in memory (it claims a trial only while a breaker is half-open),
 * so it has no per-start switch; its traffic per process is measured apart (guardTraffic in parked.ts).
 *
 * The limits are set far above what a run starts (they count, they never refuse). Each start is its
 * own user, so each per-user reservation makes a new ledger (update-with-start): the dearest case
 * for the per-user limit; a user's later starts of the day update an open ledger.
 */
import { Agent, request } from 'undici';
import type { DailyLimits } from '../src/config/limits-env';
import { DEFAULT_LEASE_BLOCK } from '../src/starter/client/deployment-quota';
import { MpfClient } from '../src/starter/client/mpf-client';
import { startGateway } from '../src/starter/gateway/main';
import { swapBody } from '../test/helpers/fixtures';
import { type CpuProbe, runStep, type StepResult } from './curve';
import { medianOf } from './stats';
import { BENCH_API_KEY, type BenchStack } from './stack';

export const VARIANTS = ['a', 'b', 'c', 'd', 'e', 'f'] as const;
export type Variant = (typeof VARIANTS)[number];

export const VARIANT_LABEL: Record<Variant, string> = {
  a: '(a) all off',
  b: '(b) per-user limit',
  c: '(c) per-user + deployment limit',
  d: '(d) guard reading + Idempotency-Key',
  e: '(e) everything on',
  f: '(f) (c) with a turn in the deployment ledger per start (before leases)',
};

const USER_LIMITS: DailyLimits = { swap_count_per_user_day: 1_000_000 };
const ALL_LIMITS: DailyLimits = { ...USER_LIMITS, swap_count_per_deployment_day: 1_000_000_000 };

const SETUP: Record<Variant, { limits?: DailyLimits; idempotencyKey: boolean; perStart?: boolean }> = {
  a: { idempotencyKey: false },
  b: { limits: USER_LIMITS, idempotencyKey: false },
  c: { limits: ALL_LIMITS, idempotencyKey: false },
  d: { idempotencyKey: true },
  e: { limits: ALL_LIMITS, idempotencyKey: true },
  f: { limits: ALL_LIMITS, idempotencyKey: false, perStart: true },
};

export interface GoingLivePoint {
  variant: Variant;
  concurrency: number;
  /** Medians over the repetitions. */
  startsPerSec: number;
  p50: number;
  p99: number;
  /** Starts timed (all repetitions) and starts that failed (a 503 limit_unavailable, say). */
  n: number;
  errors: number;
  firstError?: string;
  /** CPU ms per start, by process (median over the repetitions; warm-up and drain included). */
  cpuMsPerStart?: Record<string, number>;
}

export interface GoingLiveResult {
  levels: number[];
  reps: number;
  points: GoingLivePoint[];
  steps: (StepResult & { variant: Variant; rep: number })[];
}

export async function benchGoingLive(
  stack: BenchStack,
  opts: { levels: number[]; reps: number; warmMs: number; windowMs: number; minFlows: number; maxWindowMs: number; warmup: number; cpu?: CpuProbe; say: (s: string) => void },
): Promise<GoingLiveResult> {
  const run = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
  const agent = new Agent({ connections: 256 });
  const gateways = new Map<Variant, { url: string; close(): Promise<void> }>();
  try {
    for (const v of VARIANTS) {
      const mpf = new MpfClient({
        client: stack.client,
        taskQueue: stack.taskQueue,
        keys: stack.keys,
        publicUrl: 'http://127.0.0.1:9',
        ...(SETUP[v].limits ? { dailyLimits: SETUP[v].limits } : {}),
        deploymentLeaseBlock: SETUP[v].perStart ? 0 : DEFAULT_LEASE_BLOCK,
      });
      gateways.set(v, await startGateway({ mpf, apiKey: BENCH_API_KEY, port: 0, logger: false }));
    }
    let seq = 0;
    const runner = (v: Variant) => async () => {
      const txn = `gl-${v}-${run}-${seq++}`;
      const headers: Record<string, string> = { 'content-type': 'application/json', 'x-api-key': BENCH_API_KEY };
      if (SETUP[v].idempotencyKey) headers['idempotency-key'] = `k-${txn}`;
      const t0 = performance.now();
      const res = await request(`${gateways.get(v)!.url}/v1/swaps`, { method: 'POST', dispatcher: agent, headers, body: JSON.stringify(swapBody(txn, { user_ref: `u-${txn}` })) });
      const json = (await res.body.json()) as Record<string, unknown>;
      const ms = performance.now() - t0;
      if (res.statusCode !== 201 && res.statusCode !== 200) throw new Error(`POST /v1/swaps (${v}) answered ${res.statusCode}: ${String(json.error)}`);
      if (json.state !== 'awaiting_pin') throw new Error(`swap (${v}) is ${String(json.state)}`);
      return { toWaiting: ms, toOutcome: ms, workflowId: String(json.swap_id) };
    };
    // Every variant warmed (its gateway's first routes, its ledgers' first updates) before anything is timed.
    for (let i = 0; i < opts.warmup; i++) for (const v of VARIANTS) await runner(v)();
    const steps: GoingLiveResult['steps'] = [];
    let turn = 0;
    for (let rep = 0; rep < opts.reps; rep++) {
      for (const c of opts.levels) {
        const order = VARIANTS.map((_, i) => VARIANTS[(i + turn) % VARIANTS.length]!);
        turn++;
        for (const v of order) {
          const r = await runStep(runner(v), c, { warmMs: opts.warmMs, windowMs: opts.windowMs, maxWindowMs: opts.maxWindowMs, minFlows: Math.max(opts.minFlows, 2 * c) }, opts.cpu);
          steps.push({ ...r, variant: v, rep });
          opts.say(
            `going live ${VARIANT_LABEL[v]} c=${c} rep ${rep + 1}: ${r.flowsPerSec.toFixed(1)} starts/s, p50 ${r.toWaiting.median.toFixed(0)} p99 ${r.toWaiting.p99.toFixed(0)} ms${r.errors ? `, ${r.errors} errors (${r.firstError})` : ''}`,
          );
        }
      }
    }
    const points: GoingLivePoint[] = [];
    for (const c of opts.levels)
      for (const v of VARIANTS) {
        const mine = steps.filter((s) => s.concurrency === c && s.variant === v);
        const cpuKeys = Object.keys(mine[0]?.cpuMsPerFlow ?? {});
        points.push({
          variant: v,
          concurrency: c,
          startsPerSec: medianOf(mine.map((s) => s.flowsPerSec)),
          p50: medianOf(mine.map((s) => s.toWaiting.median)),
          p99: medianOf(mine.map((s) => s.toWaiting.p99)),
          n: mine.reduce((a, s) => a + s.toWaiting.n, 0),
          errors: mine.reduce((a, s) => a + s.errors, 0),
          ...(mine.find((s) => s.firstError) ? { firstError: mine.find((s) => s.firstError)!.firstError } : {}),
          ...(cpuKeys.length ? { cpuMsPerStart: Object.fromEntries(cpuKeys.map((k) => [k, medianOf(mine.map((s) => s.cpuMsPerFlow?.[k] ?? Number.NaN))])) } : {}),
        });
      }
    return { levels: opts.levels, reps: opts.reps, points, steps };
  } finally {
    for (const g of gateways.values()) await g.close().catch(() => undefined);
    await agent.close();
  }
}

/** The knee of one variant: the lowest level whose starts/s reach 90 % of its highest (as curve.ts's knee). */
export function goingLiveKnee(r: GoingLiveResult, v: Variant): { concurrency: number; peak: number; peakAt: number } {
  const mine = r.points.filter((p) => p.variant === v);
  const best = mine.reduce((a, b) => (b.startsPerSec > a.startsPerSec ? b : a));
  const k = mine.find((p) => p.startsPerSec >= 0.9 * best.startsPerSec)!;
  return { concurrency: k.concurrency, peak: best.startsPerSec, peakAt: best.concurrency };
}

export const goingLivePoint = (r: GoingLiveResult, v: Variant, c: number): GoingLivePoint => r.points.find((p) => p.variant === v && p.concurrency === c)!;

/** The markdown table: every variant at every level, and each ÷ (a) at (a)'s knee. */
export function goingLiveTable(r: GoingLiveResult): string {
  const k = goingLiveKnee(r, 'a').concurrency;
  const a = goingLivePoint(r, 'a', k);
  const cpu = (p: GoingLivePoint): string => (p.cpuMsPerStart ? Object.entries(p.cpuMsPerStart).map(([n, ms]) => `${n} ${ms.toFixed(1)}`).join(', ') : '');
  const lines = [
    `At (a)'s knee, c=${k} (each ÷ (a), same run):`,
    '',
    '| variant | starts/s | ÷ (a) | p50 ms | ÷ (a) | p99 ms | ÷ (a) | CPU ms per start | errors |',
    '|---|---:|---:|---:|---:|---:|---:|---|---:|',
    ...VARIANTS.map((v) => {
      const p = goingLivePoint(r, v, k);
      return `| ${VARIANT_LABEL[v]} | ${p.startsPerSec.toFixed(1)} | ${(p.startsPerSec / a.startsPerSec).toFixed(2)}× | ${p.p50.toFixed(0)} | ${(p.p50 / a.p50).toFixed(2)}× | ${p.p99.toFixed(0)} | ${(p.p99 / a.p99).toFixed(2)}× | ${cpu(p)} | ${p.errors} |`;
    }),
    '',
    'Every level (medians over the repetitions; each variant\'s own knee and peak below):',
    '',
    '| variant | c | starts/s | p50 ms | p99 ms | n | CPU ms per start | errors |',
    '|---|---:|---:|---:|---:|---:|---|---:|',
    ...r.points.map((p) => `| ${VARIANT_LABEL[p.variant]} | ${p.concurrency} | ${p.startsPerSec.toFixed(1)} | ${p.p50.toFixed(0)} | ${p.p99.toFixed(0)} | ${p.n} | ${cpu(p)} | ${p.errors}${p.firstError ? ` (${p.firstError.slice(0, 80)})` : ''} |`),
    '',
    '| variant | knee (c) | peak starts/s (at c) | peak ÷ (a)\'s peak |',
    '|---|---:|---:|---:|',
    ...VARIANTS.map((v) => {
      const kv = goingLiveKnee(r, v);
      return `| ${VARIANT_LABEL[v]} | ${kv.concurrency} | ${kv.peak.toFixed(1)} (${kv.peakAt}) | ${(kv.peak / goingLiveKnee(r, 'a').peak).toFixed(2)}× |`;
    }),
  ];
  return lines.join('\n');
}
