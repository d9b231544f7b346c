/**
 * `npm run bench [-- options]`: the benchmark. Every figure is ours ÷ a control measured
 * in the same run, interleaved with it, bounded in count and time, loopback only:
 *
 *  1. codec (pure CPU) and the HTTP path (provider client ÷ bare undici, standalone simulator);
 *  2. the load curve of swaps and links ÷ controls of the same shape (bench/control) and ÷ the
 *     equal-work controls (bench/control/equal-work-*: the same provider calls, validation and
 *     codec, nothing else), stepped concurrency, with CPU ms per flow of each process (this one,
 *     the Temporal server, the simulator when it runs apart);
 *  3. the gateway ÷ the typed client, idle and at half the control's knee.
 *
 * Writes bench/results/<label>.{md,svg,json} and prints the table.
 *
 *   --full                 every level for links too, 3 repetitions, longer windows (~15 min)
 *   --quick                tiny sizes (the smoke test; figures meaningless)
 *   --label NAME           results file name (default: default-devserver / full-devserver / …)
 *   --out-dir DIR          where results go (default bench/results)
 *   --cluster              the PostgreSQL topology of `mpf cluster up` (PostgreSQL + Temporal server, started
 *                          here with no workers or gateways of its own; ours run in this process as on the dev server)
 *   --temporal-address A   an external Temporal server instead
 *   --sim-inline           the simulator in this process (default: a process of its own, so that its
 *                          CPU, the provider's, is counted apart from ours; --sim-process is accepted)
 *   --dynamic-config K=V   the dev server's dynamic config (repeatable), e.g. system.enableActivityEagerExecution=true
 *   --tuning JSON          worker option overrides for both workers, e.g. '{"maxCachedWorkflows":2000}'
 *   --only LIST            a subset of codec,http,swap,link,gateway (e.g. swap or link alone; only those families are warmed),
 *                          or going-live (not run by default): the gateway's starts/s with limits, Idempotency-Key, all ÷ all off,
 *                          or ablation (not run by default): where our extra CPU per flow goes, feature by feature —
 *                          our workflow code with one feature taken out at a time (bench/ablation.ts), beside ours and
 *                          the equal-work control, one concurrency per family
 *   --going-live-levels LIST  the going-live section's levels (default 2,5,10,20)
 *   --ablation-levels S,L  the ablation section's concurrency for swaps and for links (default 10,20)
 *   --parked LIST          park this many swaps and as many links, cumulatively (e.g. 1000,10000; --full: 1000)
 *   --levels LIST          the swap curve's levels (default 1,2,5,10,20,50,100)
 *   --link-levels LIST     the link curve's levels (default 1,5,20,50; --full: as the swap's)
 *   --reps N               repetitions of each curve (default 1; --full: 3), each figure their median
 *   --gateway-concurrency N  the gateway section's loaded level when no swap curve runs (default 10;
 *                          with one: half the control's knee)
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { NAMESPACE } from '../tools/cluster/topology';
import { type RunningCluster, startCluster } from '../tools/cluster/up';
import { clientTls } from '../tools/cluster/tls';
import { startSimulator } from '../src/simulator';
import { benchCodec } from './codec.bench';
import { type CpuProbe, type Curve, halfKnee, knee, runCurve } from './curve';
import { type Family, flowRunner, type Side } from './flows';
import { benchGateway, type GatewayBenchResult } from './gateway.bench';
import { type AblationResult, ablationTable, benchAblation } from './ablation';
import { benchGoingLive, type GoingLiveResult, goingLiveKnee, goingLivePoint, goingLiveTable, VARIANT_LABEL, VARIANTS } from './going-live';
import { type HistoryCounts, historyCounts, historyTable } from './history-counts';
import { benchParked, type ParkedLevel } from './parked';
import { benchProviderClient } from './provider-client.bench';
import type { BenchSection } from './report';
import { curveChart, curveFigures, curveTable, equalWorkFigures, type Figure, figure, figuresTable, RESULTS_DIR, sectionFigures, writeRunFiles } from './results';
import { procCpuMs } from './proc';
import { type BenchStack, startBenchStack } from './stack';
import { msSince, now } from './stats';

Runtime.install({ logger: new DefaultLogger('WARN') });

const { values: args } = parseArgs({
  options: {
    full: { type: 'boolean', default: false },
    quick: { type: 'boolean', default: process.env.MPF_BENCH_QUICK === '1' },
    label: { type: 'string' },
    'out-dir': { type: 'string' },
    'temporal-address': { type: 'string' },
    namespace: { type: 'string' },
    'sim-inline': { type: 'boolean', default: false },
    'sim-process': { type: 'boolean', default: true },
    cluster: { type: 'boolean', default: false },
    'dynamic-config': { type: 'string', multiple: true, default: [] },
    tuning: { type: 'string' },
    only: { type: 'string' },
    levels: { type: 'string' },
    'link-levels': { type: 'string' },
    reps: { type: 'string' },
    'gateway-concurrency': { type: 'string' },
    parked: { type: 'string' },
    'going-live-levels': { type: 'string' },
    'ablation-levels': { type: 'string' },
  },
});

const MODE = args.quick ? 'quick' : args.full ? 'full' : 'default';
const pick = <T>(d: T, full: T, quick: T): T => (MODE === 'quick' ? quick : MODE === 'full' ? full : d);
const ONLY = new Set((args.only ?? 'codec,http,swap,link,gateway').split(','));
const ALL_LEVELS = [1, 2, 5, 10, 20, 50, 100];
const SWAP_LEVELS = args.levels ? args.levels.split(',').map(Number) : pick(ALL_LEVELS, ALL_LEVELS, [1, 2]);
const LINK_LEVELS = args['link-levels'] ? args['link-levels'].split(',').map(Number) : pick([1, 5, 20, 50], ALL_LEVELS, [1, 2]);
const CURVE = { reps: args.reps ? Number(args.reps) : pick(1, 3, 1), warmMs: pick(1_000, 2_000, 0), windowMs: pick(4_000, 8_000, 1_000), minFlows: pick(10, 20, 1), maxWindowMs: pick(20_000, 40_000, 5_000) };
const GOING_LIVE_LEVELS = args['going-live-levels'] ? args['going-live-levels'].split(',').map(Number) : pick([2, 5, 10, 20], [2, 5, 10, 20, 50], [1, 2]);
const [ABLATION_SWAP_C, ABLATION_LINK_C] = (args['ablation-levels'] ?? pick('10,20', '10,20', '2,2')).split(',').map(Number) as [number, number];
const PARKED = (args.parked ?? pick('', '1000', '')).split(',').filter(Boolean).map(Number);
const WATCHDOG_MS = pick(600_000, 3_600_000, 240_000) + PARKED.reduce((a, n) => a + n * 500, 0);

const dynamicConfig = Object.fromEntries(
  (args['dynamic-config'] ?? []).map((kv) => {
    const i = kv.indexOf('=');
    const raw = kv.slice(i + 1);
    let v: string | number | boolean;
    try {
      v = JSON.parse(raw) as string | number | boolean;
    } catch {
      v = raw;
    }
    return [kv.slice(0, i), v];
  }),
);
const tuning = args.tuning ? (JSON.parse(args.tuning) as Record<string, unknown>) : undefined;
const server = args.cluster ? 'postgres' : args['temporal-address'] ? 'external' : 'devserver';
const LABEL = args.label ?? `${MODE}-${server}`;

function uptime(): string {
  try {
    return execFileSync('uptime', { encoding: 'utf8' }).trim();
  } catch {
    return os.loadavg().map((x) => x.toFixed(2)).join(' ');
  }
}

function commit(): string | undefined {
  try {
    const sha = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src', 'bench', ':!bench/results'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    return dirty ? `${sha}+dirty` : sha;
  } catch {
    return undefined;
  }
}

/** What the run measured, filled in section by section. */
interface Measured {
  sections: BenchSection[];
  figures: Figure[];
  curves: Curve[];
  histories: { family: Family; side: Side; counts: HistoryCounts }[];
  gateway: { idle?: GatewayBenchResult; loaded?: GatewayBenchResult };
  parked: ParkedLevel[];
  /** The price of going live per start (--only going-live). */
  goingLive?: GoingLiveResult;
  /** Where our extra CPU per flow goes, feature by feature (--only ablation). */
  ablation: AblationResult[];
  /** The PostgreSQL topology, with --cluster (stopped by the end; its info names the server). */
  cluster?: RunningCluster;
}

type Step = (what: string) => void;

async function main(): Promise<void> {
  const t0 = now();
  const run = {
    t0,
    startedAt: new Date().toISOString(),
    loadBefore: uptime(),
    // The code measured is the code at the start (processes started later run what was checked out then).
    commitAtStart: commit(),
    simProcess: !args['sim-inline'],
  };
  const step: Step = (what) => console.error(`[bench ${(msSince(t0) / 1000).toFixed(1)}s] ${what}`);
  const m: Measured = { sections: [], figures: [], curves: [], histories: [], gateway: {}, parked: [], ablation: [] };
  await benchStandalone(m, step);
  if (['swap', 'link', 'gateway', 'going-live', 'ablation'].some((x) => ONLY.has(x)) || PARKED.length) await benchFlows(m, step, run.simProcess);
  writeReport(m, run);
}

/** 1. The codec (pure CPU) and the HTTP path (provider client ÷ bare undici, standalone simulator). */
async function benchStandalone(m: Measured, step: Step): Promise<void> {
  if (ONLY.has('codec')) {
    step('codec');
    m.sections.push(await benchCodec({ batch: pick(200, 200, 20), batches: pick(40, 60, 4), warmupBatches: pick(5, 5, 1), budgetMs: 15_000 }));
  }
  if (ONLY.has('http')) {
    step('provider client (standalone simulator)');
    const sim = await startSimulator({ seed: 1 });
    try {
      m.sections.push(
        await benchProviderClient(sim.baseUrl, {
          warmup: pick(30, 50, 5),
          sequential: pick(300, 1000, 20),
          concurrency: 8,
          rounds: pick(4, 8, 2),
          perRound: pick(200, 400, 20),
          budgetMs: 25_000,
        }),
      );
    } finally {
      await sim.close();
    }
  }
  for (const s of m.sections) m.figures.push(...sectionFigures(s));
}

/** 2. and 3. The flows on a stack (dev server, the cluster's PostgreSQL topology or an external server): curves, gateway, parked flows. */
async function benchFlows(m: Measured, step: Step, simProcess: boolean): Promise<void> {
  let clusterDir: string | undefined;
  if (args.cluster) {
    step('PostgreSQL topology (mpf cluster: PostgreSQL + Temporal server, no workers or gateways)');
    clusterDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mpf-bench-cluster-'));
    m.cluster = await startCluster({ stateDir: clusterDir, workers: 0, gateways: 0, keepData: false, say: step });
  }
  const cluster = m.cluster;
  const temporalAddress = cluster?.info.temporal?.address ?? args['temporal-address'];
  const pidOf = (name: string): number | undefined => cluster?.children.find((c) => c.name === name)?.child.pid;
  step(`stack: ${temporalAddress ? `Temporal at ${temporalAddress}` : 'dev server'}${simProcess ? ', simulator in its own process' : ', simulator in this process'}`);
  const stack = await startBenchStack({
    dynamicConfig,
    temporalAddress,
    // The cluster's frontend requires client certificates and authorises every call: the bench connects as its operator (certificate, admin tools' token).
    ...(cluster ? { temporalTls: clientTls(path.join(cluster.info.tlsDir, 'operator')), ...(cluster.auth ? { temporalToken: cluster.auth.adminToken } : {}) } : {}),
    namespace: cluster ? NAMESPACE : args.namespace,
    simulatorProcess: simProcess,
    // Parked swaps wait longer than the provider's default 5-minute window.
    // Parked swaps (and the going-live section's, each left awaiting its PIN) wait longer than the provider's default 5-minute window.
    ...(PARKED.length || ONLY.has('going-live') ? { swapExpiresInSeconds: 4 * 3600 } : {}),
    tuning,
  });
  const cpu = (): Record<string, number> => ({
    node: (() => {
      const u = process.cpuUsage();
      return (u.user + u.system) / 1000;
    })(),
    ...(stack.server ? { server: procCpuMs(stack.server.pid) } : {}),
    ...(cluster ? { server: procCpuMs(pidOf('temporal')), postgresql: procCpuMs(pidOf('postgresql'), true) } : {}),
    ...(stack.simulatorPid ? { simulator: procCpuMs(stack.simulatorPid) } : {}),
  });
  try {
    await warmUp(m, stack, step);
    await benchCurves(m, stack, step, cpu);
    if (ONLY.has('gateway')) await benchGatewaySection(m, stack, step);
    if (ONLY.has('going-live')) await benchGoingLiveSection(m, stack, step, cpu);
    if (ONLY.has('ablation'))
      for (const [family, concurrency] of [['swap', ABLATION_SWAP_C], ['link', ABLATION_LINK_C]] as const) {
        step(`ablation: ${family} at c=${concurrency}, ours with one workflow feature taken out at a time, ${CURVE.reps} rep(s)`);
        m.ablation.push(await benchAblation(stack, { family, concurrency, reps: CURVE.reps, bounds: CURVE, cpu, say: step, ...(tuning ? { tuning } : {}) }));
      }
    if (PARKED.length) await benchParkedSection(m, stack, step);
  } finally {
    step('shutting down');
    await stack.stop();
    await cluster?.stop();
    if (clusterDir) fs.rmSync(clusterDir, { recursive: true, force: true });
  }
}

/** Warms both sides (bundles loaded, connections open, JIT) before anything is timed, and counts what one flow asks of the server. */
async function warmUp(m: Measured, stack: BenchStack, step: Step): Promise<void> {
  // The families measured (the gateway section runs swaps; parked flows run on processes of their own).
  const families = (['swap', 'link'] as const).filter((f) => ONLY.has(f) || (f === 'swap' && (ONLY.has('gateway') || ONLY.has('going-live'))));
  for (const fam of families)
    for (const side of ['ours', 'control', 'equal'] as const) {
      const r = flowRunner(stack, fam, side);
      for (let i = 0; i < pick(3, 5, 1); i++) await r();
      // What one flow asks of the server, from its closed history (outside any timed window).
      const one = await r();
      m.histories.push({ family: fam, side, counts: await historyCounts(stack.client, one.workflowId) });
    }
  step(`history per flow: ${m.histories.map((h) => `${h.family} ${h.side} ${h.counts.events} events/${h.counts.workflowTasks} wft`).join(', ')}`);
}

/** 2. The load curve of swaps and links ÷ their controls, with CPU ms per flow of each process. */
async function benchCurves(m: Measured, stack: BenchStack, step: Step, cpu: CpuProbe): Promise<void> {
  for (const fam of ['swap', 'link'] as const) {
    if (!ONLY.has(fam)) continue;
    step(`${fam} curve: levels ${(fam === 'swap' ? SWAP_LEVELS : LINK_LEVELS).join(',')}, ${CURVE.reps} rep(s), ${CURVE.warmMs}+${CURVE.windowMs} ms per step`);
    const sides = { ours: flowRunner(stack, fam, 'ours'), control: flowRunner(stack, fam, 'control'), equal: flowRunner(stack, fam, 'equal') };
    const c = await runCurve(fam, sides, {
      levels: fam === 'swap' ? SWAP_LEVELS : LINK_LEVELS,
      ...CURVE,
      onStep: step,
      cpu,
    });
    m.curves.push(c);
    m.figures.push(...curveFigures(c), ...equalWorkFigures(c));
  }
}

/** 3. The gateway ÷ the typed client, idle and at half the control's knee. */
async function benchGatewaySection(m: Measured, stack: BenchStack, step: Step): Promise<void> {
  const swapCurve = m.curves.find((c) => c.family === 'swap');
  const half = swapCurve ? halfKnee(swapCurve, knee(swapCurve, 'control').concurrency) : Number(args['gateway-concurrency'] ?? 10);
  step('gateway ÷ typed client, idle');
  const idle = await benchGateway(stack, { concurrency: 1, rounds: pick(20, 60, 2), perRound: 1, warmup: pick(3, 5, 1) });
  step(`gateway ÷ typed client at half the knee (c=${half})`);
  const loaded = await benchGateway(stack, { concurrency: half, rounds: pick(2, 4, 2), perRound: pick(Math.max(30, 4 * half), Math.max(60, 8 * half), 2), warmup: 0 });
  m.gateway = { idle, loaded };
  for (const [when, r] of [['idle', idle], [`c=${half} (half the knee)`, loaded]] as const) {
    for (const [call, key] of [['POST /v1/swaps', 'start'], ['POST /v1/swaps/{id}/pin', 'pin']] as const) {
      const sec = 'gateway ÷ typed client';
      m.figures.push(figure(sec, `${call} p50 ${when} (ms)`, r.gateway[key].median, r.direct[key].median, 'ms', undefined, { n: r.gateway[key].n }));
      m.figures.push(figure(sec, `${call} p99 ${when} (ms)`, r.gateway[key].p99, r.direct[key].p99, 'ms', { kind: 'ratio<=', target: 1.5 }, { n: r.gateway[key].n }));
    }
    // The PIN's goal (≤ 1.2× p50 and p99), and the gateway whose PIN takes its slot (before: pinSlotAhead 'start') in the same rounds.
    for (const stat of ['median', 'p99'] as const) {
      const name = stat === 'median' ? 'p50' : 'p99';
      m.figures.push(figure('gateway PIN ÷ typed client', `PIN ${name} ${when} (ms)`, r.gateway.pin[stat], r.direct.pin[stat], 'ms', { kind: 'ratio<=', target: 1.2 }, { n: r.gateway.pin.n }));
      if (r.before) m.figures.push(figure('gateway PIN ÷ typed client', `before (budget started beside the swap, the PIN takes its slot): PIN ${name} ${when} (ms)`, r.before.pin[stat], r.direct.pin[stat], 'ms', undefined, { n: r.before.pin.n }));
    }
    if (r.before) m.figures.push(figure('gateway ÷ typed client', `POST /v1/swaps p50 ${when}, before (budget started beside it, no slot reserved) (ms)`, r.before.start.median, r.direct.start.median, 'ms', undefined, { n: r.before.start.n }));
  }
}

/** The price of going live per start: the gateway's starts with limits and Idempotency-Key ÷ all off, variants alternating. */
async function benchGoingLiveSection(m: Measured, stack: BenchStack, step: Step, cpu: CpuProbe): Promise<void> {
  step(`going live: POST /v1/swaps, variants ${VARIANTS.join(',')} alternating, levels ${GOING_LIVE_LEVELS.join(',')}, ${CURVE.reps} rep(s)`);
  const r = await benchGoingLive(stack, { levels: GOING_LIVE_LEVELS, ...CURVE, warmup: pick(3, 5, 1), cpu, say: step });
  m.goingLive = r;
  const k = goingLiveKnee(r, 'a');
  const a = goingLivePoint(r, 'a', k.concurrency);
  const sec = 'going live ÷ all off';
  for (const v of VARIANTS.filter((x) => x !== 'a')) {
    const p = goingLivePoint(r, v, k.concurrency);
    m.figures.push(
      figure(sec, `${VARIANT_LABEL[v]}: starts/s at (a)'s knee c=${k.concurrency}`, p.startsPerSec, a.startsPerSec, 'starts/s', undefined, { n: p.n }),
      figure(sec, `${VARIANT_LABEL[v]}: start p50 at c=${k.concurrency} (ms)`, p.p50, a.p50, 'ms', undefined, { n: p.n }),
      figure(sec, `${VARIANT_LABEL[v]}: start p99 at c=${k.concurrency} (ms)`, p.p99, a.p99, 'ms', undefined, { n: p.n }),
      figure(sec, `${VARIANT_LABEL[v]}: peak starts/s (at c=${goingLiveKnee(r, v).peakAt})`, goingLiveKnee(r, v).peak, k.peak, 'starts/s'),
    );
  }
  const [b, c, f] = [goingLivePoint(r, 'b', k.concurrency), goingLivePoint(r, 'c', k.concurrency), goingLivePoint(r, 'f', k.concurrency)];
  const ledger = 'going live: the deployment ledger';
  m.figures.push(figure(ledger, `(c) ÷ (b): starts/s at c=${k.concurrency}`, c.startsPerSec, b.startsPerSec, 'starts/s', { kind: 'ratio>=', target: 0.9 }));
  m.figures.push(figure(ledger, `(f) per start ÷ (b): starts/s at c=${k.concurrency}`, f.startsPerSec, b.startsPerSec, 'starts/s'));
  for (const level of r.levels) {
    const [bl, cl, fl] = (['b', 'c', 'f'] as const).map((v) => goingLivePoint(r, v, level));
    m.figures.push(figure(ledger, `c=${level}: (c) leased ÷ (b), starts/s (errors ${cl!.errors} / ${bl!.errors})`, cl!.startsPerSec, bl!.startsPerSec, 'starts/s'));
    m.figures.push(figure(ledger, `c=${level}: (f) per start ÷ (b), starts/s (errors ${fl!.errors} / ${bl!.errors})`, fl!.startsPerSec, bl!.startsPerSec, 'starts/s'));
  }
}

/** Parked flows (mpf worker and mpf gateway processes): memory and wake-up as the count grows. */
async function benchParkedSection(m: Measured, stack: BenchStack, step: Step): Promise<void> {
  step(`parked flows: ${PARKED.join(', ')} swaps and as many links (mpf worker and mpf gateway processes)`);
  const parked = await benchParked(stack, { targets: PARKED, concurrency: 8, wakeSamples: pick(10, 20, 2), say: step });
  m.parked = parked;
  const [first, last] = [parked[0]!, parked[parked.length - 1]!];
  const sec = 'parked flows';
  for (const l of parked) {
    m.figures.push(
      figure(sec, `${l.target} swaps + ${l.target} links parked in ${l.parkSeconds.toFixed(0)} s (${l.slowStarts} starts over 30 s): worker RSS (MiB) ÷ gateway RSS`, l.workerRssMiB, l.gatewayRssMiB, 'MiB', undefined, {
        note: `database ${l.databaseMiB?.toFixed(0) ?? '?'} MiB`,
      }),
      figure(sec, `${l.target} parked: wake p50, oldest ÷ newest (ms; the oldest are evicted only past the sticky cache's size)`, l.wakeOldest.median, l.wakeNewest.median, 'ms', { kind: 'ratio<=', target: 2 }, { n: l.wakeOldest.n }),
    );
  }
  for (const l of parked) {
    const cpu = Object.entries(l.lastStarts.cpuMsPerStart).map(([k, v]) => `${k} ${v.toFixed(1)}`).join(', ');
    m.figures.push(figure(sec, `${l.target} parked: the last ${l.lastStarts.n} starts, p99 ÷ p50 (ms; CPU ms per start: ${cpu})`, l.lastStarts.latency.p99, l.lastStarts.latency.median, 'ms', undefined, { n: l.lastStarts.n }));
  }
  if (parked.length > 1) {
    const total = (l: ParkedLevel): number => Object.values(l.lastStarts.cpuMsPerStart).reduce((a, b) => a + b, 0);
    m.figures.push(
      figure(sec, `CPU ms per start (all processes) with ${last.target} parked ÷ with ${first.target}`, total(last), total(first), 'ms'),
      figure(sec, `start p99 with ${last.target} parked ÷ with ${first.target} (ms)`, last.lastStarts.latency.p99, first.lastStarts.latency.p99, 'ms'),
      figure(sec, `wake p99 (oldest) with ${last.target} parked ÷ with ${first.target} (ms)`, last.wakeOldest.p99, first.wakeOldest.p99, 'ms'),
    );
    m.figures.push(figure(sec, `worker RSS with ${last.target} parked ÷ with ${first.target} (MiB)`, last.workerRssMiB, first.workerRssMiB, 'MiB', { kind: 'ratio<=', target: 1.1 }));
    if (last.databaseMiB !== undefined) m.figures.push(figure(sec, `database with ${last.target} parked ÷ with ${first.target} (MiB)`, last.databaseMiB, first.databaseMiB!, 'MiB'));
  }
}

/** The growth table (CPU per start, latency) and the guard's traffic computed for 2, 8 and 16 worker processes from its measured per-call cost. */
function parkedTable(parked: ParkedLevel[]): string {
  const cpu = (r: Record<string, number>): string => Object.entries(r).map(([k, v]) => `${k} ${v.toFixed(2)}`).join(', ');
  const lines = [
    '| parked (each family) | last starts | start p50 / p99 ms | CPU ms per start | wake oldest p50 / p99 ms | wake newest p50 / p99 ms |',
    '|---:|---:|---|---|---|---|',
    ...parked.map((l) => `| ${l.target} | ${l.lastStarts.n} | ${l.lastStarts.latency.median.toFixed(0)} / ${l.lastStarts.latency.p99.toFixed(0)} | ${cpu(l.lastStarts.cpuMsPerStart)} | ${l.wakeOldest.median.toFixed(0)} / ${l.wakeOldest.p99.toFixed(0)} | ${l.wakeNewest.median.toFixed(0)} / ${l.wakeNewest.p99.toFixed(0)} |`),
    '',
    'The provider guard, measured one call at a time (CPU ms per call, by process; `worker` is the mpf worker that runs the guard). Each process\'s background (CPU ms/s with no guard call in flight, measured idle for 3 s before and after) is taken off; the raw figure is in brackets:',
    '',
    '| parked | background, CPU ms/s | describes: n, calls/s, CPU ms per call [raw] | outcome signals: n, calls/s, CPU ms per call [raw] |',
    '|---:|---|---|---|',
    ...parked.map(
      (l) =>
        `| ${l.target} | ${l.guard.backgroundMsPerSec ? cpu(l.guard.backgroundMsPerSec) : '—'} | ${l.guard.describes.n}, ${l.guard.describes.perSec.toFixed(0)}/s, ${cpu(l.guard.describes.cpuMsPerCall)} [${cpu(l.guard.describes.rawCpuMsPerCall ?? {})}] | ${l.guard.signals.n}, ${l.guard.signals.perSec.toFixed(0)}/s, ${cpu(l.guard.signals.cpuMsPerCall)} [${cpu(l.guard.signals.rawCpuMsPerCall ?? {})}] |`,
    ),
    '',
  ];
  const g = parked[parked.length - 1]!.guard;
  const perSec = 1000 / g.pollMs;
  lines.push(
    `Computed from the last level's per-call cost (net of the background): each worker process describes the guard ${perSec}×/s and, while it has outcomes to report, signals it at most ${perSec}×/s (each gateway process adds ${perSec} describe/s):`,
    '',
    '| worker processes | describes/s | signals/s (at most) | Temporal server CPU ms/s | worker running the guard, CPU ms/s |',
    '|---:|---:|---:|---:|---:|',
    ...[2, 8, 16].map((p) => {
      const [d, sg] = [p * perSec, p * perSec];
      const server = d * (g.describes.cpuMsPerCall.server ?? Number.NaN) + sg * (g.signals.cpuMsPerCall.server ?? Number.NaN);
      const worker = d * (g.describes.cpuMsPerCall.worker ?? Number.NaN) + sg * (g.signals.cpuMsPerCall.worker ?? Number.NaN);
      return `| ${p} | ${d} | ${sg} | ${server.toFixed(1)} | ${worker.toFixed(1)} |`;
    }),
  );
  return lines.join('\n');
}

/** Writes bench/results/<label>.{md,svg,json} and prints the table. */
function writeReport(m: Measured, run: { t0: bigint; startedAt: string; loadBefore: string; commitAtStart?: string; simProcess: boolean }): void {
  const { figures, curves, histories, gateway, parked, sections, cluster, goingLive, ablation } = m;
  const { startedAt, loadBefore } = run;
  const wallS = msSince(run.t0) / 1000;
  const loadAfter = uptime();
  const command = `npm run bench --${process.argv.slice(2).length ? ` ${process.argv.slice(2).join(' ')}` : ''}`;
  const machine = {
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model,
    memGiB: +(os.totalmem() / 2 ** 30).toFixed(1),
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    node: process.version,
  };
  const meta = {
    startedAt,
    command,
    commit: run.commitAtStart,
    mode: MODE,
    server: cluster
      ? `PostgreSQL topology (mpf cluster: Temporal ${cluster.info.temporal?.version ?? '?'} on PostgreSQL, ${cluster.info.temporal?.historyShards ?? '?'} history shards)`
      : args['temporal-address']
        ? `external Temporal at ${args['temporal-address']}`
        : 'temporal CLI dev server (SQLite, WAL, synchronous=OFF)',
    simulator: run.simProcess ? 'own process' : 'in the bench process (with worker, client and gateway)',
    dynamicConfig,
    tuning: tuning ?? {},
    machine,
    loadBefore,
    loadAfter,
    wallSeconds: +wallS.toFixed(1),
  };
  const met = figures.filter((f) => f.goal && f.met).length;
  const withGoal = figures.filter((f) => f.goal).length;
  const cpuLines = curves.flatMap((c) =>
    c.points
      .filter((p) => p.cpuMsPerFlow)
      .map((p) => `| ${c.family} | ${p.side} | ${p.concurrency} | ${Object.entries(p.cpuMsPerFlow!).map(([k, v]) => `${k} ${v.toFixed(1)}`).join(', ')} |`),
  );
  const md = [
    `# Benchmark: ${LABEL}`,
    '',
    `\`${command}\` at ${meta.commit ?? '?'}, ${startedAt}, ${meta.wallSeconds} s. ${machine.cpus} × ${machine.cpuModel}, ${machine.memGiB} GiB, Node ${machine.node}.`,
    `Server: ${meta.server}${Object.keys(dynamicConfig).length ? `, dynamic config ${JSON.stringify(dynamicConfig)}` : ''}. Simulator: ${meta.simulator}.${tuning ? ` Worker tuning: ${JSON.stringify(tuning)}.` : ''}`,
    `Load (\`uptime\`) before: \`${loadBefore}\`; after: \`${loadAfter}\`.`,
    '',
    `Ratios are ours ÷ control, measured in this run, interleaved: the control of the same shape (no-op activities) and, in the sections \`÷ equal-work control\`, the equal-work control (the same provider calls, validation and codec, nothing else; information, no goals). Goals met: ${met} of ${withGoal}.`,
    '',
    figuresTable(figures),
    '',
    ...curves.flatMap((c) => [
      `## ${c.family} load curve (${c.reps} repetition(s), ${c.warmMs} ms warm-up, then a window of at least ${c.windowMs} ms that grows until 2 × concurrency flows completed in it, at most ${CURVE.maxWindowMs} ms; medians)`,
      '',
      curveTable(c),
      '',
    ]),
    ...(cpuLines.length
      ? ['## CPU ms per flow, by process (median over repetitions; includes the warm-up and drain of each step)', '', '| flow | side | concurrency | CPU ms per flow |', '|---|---|---:|---|', ...cpuLines, '']
      : []),
    ...(parked.length ? ['## Parked flows: the last starts before each target, and the provider guard\'s traffic', '', parkedTable(parked), ''] : []),
    ...(goingLive ? [`## The price of going live per start (POST /v1/swaps through the gateway, ${goingLive.reps} repetition(s), variants alternating)`, '', goingLiveTable(goingLive), ''] : []),
    ...(ablation.length
      ? [
          '## Where our extra CPU goes, feature by feature (ours with one workflow feature taken out at a time: bench/ablation.ts)',
          '',
          '`-state-sa`: no `MpfState` upsert per state; `-memo`: no events list in the memo; `-patches`: no patch marker (nor its `TemporalChangeVersion` upsert); `-log`: no workflow log line per state; `-all`: the four. Measurements only: a variant is not a configuration.',
          '',
          ...ablation.flatMap((a) => [ablationTable(a), '']),
        ]
      : []),
    ...(histories.length ? ['## What one flow asks of the server (from its history)', '', historyTable(histories), ''] : []),
    ...(curves.length ? [`![load curve](${LABEL}.svg)`, ''] : []),
  ].join('\n');
  const svg = curves.length ? curveChart(curves, `${LABEL}: ${meta.commit ?? ''} ${startedAt.slice(0, 16)}Z, ${machine.cpus} cores, ${/load average.*/.exec(loadBefore)?.[0] ?? ''} before`) : undefined;
  const files = writeRunFiles(LABEL, { md, svg, json: { ...meta, figures, curves, histories, gateway, parked, sections, ...(goingLive ? { goingLive } : {}), ...(ablation.length ? { ablation } : {}) } }, args['out-dir'] ?? RESULTS_DIR);
  console.log(md);
  console.log(`\nwall time ${wallS.toFixed(1)} s; results: ${files.join(', ')}`);
}


const watchdog = setTimeout(() => {
  console.error(`bench: exceeded ${WATCHDOG_MS / 1000} s, aborting`);
  process.exit(2);
}, WATCHDOG_MS);
watchdog.unref();
// A signal ends the run through process.exit, whose hooks kill the servers this run started.
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => process.exit(sig === 'SIGINT' ? 130 : 143));

main().then(
  () => {
    process.exitCode = 0;
    setTimeout(() => process.exit(0), 2_000).unref();
  },
  (err: unknown) => {
    console.error('bench failed:', err);
    process.exit(1);
  },
);
