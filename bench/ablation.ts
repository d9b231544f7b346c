/**
 * `npx tsx bench/ablation.ts --family swap|link [--concurrency 10] [--seconds 12] [--reps 3] [--label L]`:
 * where our extra cost per flow goes, feature by feature, measured by taking one feature out at a
 * time. Every variant is OUR workflow code, bundled with one workflow API made a no-op (the
 * bundle's `@temporalio/workflow` is a wrapper, bench/ablation-sdk.ts), on a worker and task queue
 * of its own in the same stack, driven by our typed client exactly as the load curve drives ours:
 *
 *   ours       as shipped
 *   -state-sa  upsertSearchAttributes a no-op: no `MpfState` upsert per state (the start's attributes stay)
 *   -memo      upsertMemo a no-op: no events list kept in the memo
 *   -patches   patched() answers true without a marker: no patch marker, no TemporalChangeVersion upsert
 *   -log       the workflow logger a no-op: no log line per state (a sink call each)
 *   -all       the four together
 *   equal      the equal-work control (bench/control/equal-work-*)
 *
 * Steps of every variant are interleaved, their order rotating from repetition to repetition;
 * figures are medians over repetitions: throughput, PIN→outcome / payment→completed p50 and p99,
 * CPU ms per flow of this process (client, workers, gateway) and of the Temporal server. The
 * variants are bench-only measurements, never a configuration: a flow of a variant is not what we
 * ship (an operator could not search it by state, a console could not list its events).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { DefaultLogger, Runtime, type Worker, type WorkerOptions } from '@temporalio/worker';
import { ProviderClient } from '../src/provider/client';
import { SIMULATOR_DEFAULT_CREDENTIALS } from '../src/simulator/options';
import { MpfClient } from '../src/starter/client/mpf-client';
import { createMpfWorker } from '../src/worker';
import { ABLATIONS, type Ablation } from './ablation-sdk';
import { type CpuProbe, runStep, type StepBounds, type StepResult } from './curve';
import { type Family, flowRunner } from './flows';
import { type HistoryCounts, historyCounts } from './history-counts';
import { procCpuMs } from './proc';
import { type BenchStack, bundleOurWorkflows, startBenchStack } from './stack';
import { medianOf } from './stats';

export type Variant = 'ours' | `-${Ablation}` | '-all' | 'equal';
export const VARIANTS: Variant[] = ['ours', ...ABLATIONS.map((a) => `-${a}` as const), '-all', 'equal'];

/**
 * Our workflows bundled with `off` made no-ops: the bundle's `@temporalio/workflow` resolves to a
 * generated module that re-exports the SDK with those functions replaced (ablation-sdk.ts).
 */
async function ablatedBundle(off: readonly Ablation[]): ReturnType<typeof bundleOurWorkflows> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mpf-ablation-'));
  const wrapper = path.join(dir, 'workflow-sdk.js');
  const sdk = require.resolve('@temporalio/workflow/lib/index.js');
  fs.writeFileSync(wrapper, `module.exports = require(${JSON.stringify(require.resolve('./ablation-sdk'))}).ablate(require(${JSON.stringify(sdk)}), ${JSON.stringify(off)});\n`);
  try {
    return await bundleOurWorkflows((config) => ({
      ...config,
      resolve: { ...config.resolve, alias: { ...(config.resolve?.alias as Record<string, string> | undefined), '@temporalio/workflow$': wrapper } },
    }));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** A worker of our code with `off` taken out, on a task queue of its own, and our typed client for it. */
async function startVariant(stack: BenchStack, name: string, off: readonly Ablation[], cleanups: (() => Promise<void>)[], tuning?: Partial<WorkerOptions>): Promise<MpfClient> {
  const taskQueue = `bench-ablate${name}-${process.pid}-${Date.now().toString(36)}`;
  const provider = new ProviderClient({ baseUrl: stack.simUrl, ...SIMULATOR_DEFAULT_CREDENTIALS });
  cleanups.push(() => provider.close());
  const worker: Worker = await createMpfWorker({
    connection: stack.native,
    namespace: stack.namespace,
    taskQueue,
    keys: stack.keys,
    provider,
    workflowBundle: await ablatedBundle(off),
    versioning: { deploymentName: `mpf-bench-ablate${name}`, buildId: 'ablated', promote: 'always' },
    tuning,
  });
  const running = worker.run();
  cleanups.push(async () => {
    worker.shutdown();
    await running;
  });
  const mpf = new MpfClient({ client: stack.client, taskQueue, keys: stack.keys, publicUrl: stack.mpf.publicUrl });
  return mpf;
}

export interface AblationRow {
  variant: Variant;
  steps: StepResult[];
  /** What one flow of the variant asked of the server (its closed history), run after the warm-up. */
  history: HistoryCounts;
}

export interface AblationResult {
  family: Family;
  concurrency: number;
  reps: number;
  rows: AblationRow[];
}

/**
 * The variants of one family at one concurrency, steps interleaved (order rotating per
 * repetition), on `stack` (its CPU probe names the processes: node, server, postgresql, simulator).
 */
export async function benchAblation(
  stack: BenchStack,
  o: { family: Family; concurrency: number; reps: number; bounds: StepBounds; variants?: Variant[]; cpu: CpuProbe; say?: (what: string) => void; /** The worker options ours was given (run.ts --tuning). */ tuning?: Partial<WorkerOptions> },
): Promise<AblationResult> {
  const variants = o.variants ?? VARIANTS;
  const cleanups: (() => Promise<void>)[] = [];
  try {
    const runners = new Map<Variant, ReturnType<typeof flowRunner>>();
    for (const v of variants) {
      if (v === 'ours' || v === 'equal') runners.set(v, flowRunner(stack, o.family, v));
      else runners.set(v, flowRunner({ ...stack, mpf: await startVariant(stack, v, v === '-all' ? ABLATIONS : [v.slice(1) as Ablation], cleanups, o.tuning) }, o.family, 'ours'));
    }
    // Warm every variant (JIT, connections, its guard's first reading); then one more flow each, whose history is counted.
    const rows = new Map<Variant, AblationRow>();
    for (const v of variants) {
      for (let i = 0; i < 5; i++) await runners.get(v)!();
      const one = await runners.get(v)!();
      rows.set(v, { variant: v, steps: [], history: await historyCounts(stack.client, one.workflowId) });
    }
    for (let r = 0; r < o.reps; r++) {
      for (const v of variants.map((_, i) => variants[(i + r) % variants.length]!)) {
        const step = await runStep(runners.get(v)!, o.concurrency, o.bounds, o.cpu);
        rows.get(v)!.steps.push(step);
        const cpu = Object.entries(step.cpuMsPerFlow ?? {}).map(([k, ms]) => `${k} ${ms.toFixed(1)}`).join(', ');
        o.say?.(`ablation ${o.family} rep ${r + 1} ${v}: ${step.flowsPerSec.toFixed(1)} flows/s; CPU ms per flow: ${cpu}; ${step.errors} errors`);
      }
    }
    return { family: o.family, concurrency: o.concurrency, reps: o.reps, rows: [...rows.values()] };
  } finally {
    for (const done of cleanups.reverse()) await done().catch(() => undefined);
  }
}

/** A history's events, and of them: markers, search-attribute upserts (ours and the SDK's TemporalChangeVersion), memo updates. */
export function historyShape(h: HistoryCounts): string {
  const n = (t: string): number => h.eventTypes.filter((x) => x === t).length;
  return `${h.events} / ${n('markerRecorded')} / ${n('upsertWorkflowSearchAttributes')} / ${n('workflowPropertiesModified')}`;
}

/** The result as a markdown table: medians over repetitions, each variant ÷ ours and ÷ the equal-work control. */
export function ablationTable(r: AblationResult): string {
  const fig = (row: AblationRow, f: (s: StepResult) => number): number => medianOf(row.steps.map(f));
  const cpuOf = (s: StepResult, k: string): number => s.cpuMsPerFlow?.[k] ?? Number.NaN;
  const ours = r.rows.find((x) => x.variant === 'ours');
  const equal = r.rows.find((x) => x.variant === 'equal');
  const procs = ['node', 'server', 'postgresql'].filter((k) => r.rows.some((row) => row.steps.some((s) => s.cpuMsPerFlow?.[k] !== undefined)));
  const total = (s: StepResult): number => procs.reduce((a, k) => a + cpuOf(s, k), 0);
  const ratio = (base: AblationRow | undefined, f: (s: StepResult) => number, x: number): string => (base ? `${(x / fig(base, f)).toFixed(2)}×` : '—');
  const outcome = r.family === 'swap' ? 'PIN→outcome' : 'payment→completed';
  const name = (k: string): string => (k === 'node' ? 'bench process' : k === 'server' ? 'Temporal server' : 'PostgreSQL');
  const lines = [
    `| variant (${r.family}, c=${r.concurrency}, ${r.reps} rep(s), medians) | history events: all / markers / search-attribute upserts / memo updates | flows/s | ÷ ours | ÷ equal-work | ${outcome} p50 / p99 (ms) | ${procs.map((k) => `CPU ms per flow: ${name(k)}`).join(' | ')} | all of them | ÷ equal-work | errors |`,
    `|---|---|---:|---:|---:|---|${procs.map(() => '---:|').join('')}---:|---:|---:|`,
  ];
  for (const row of r.rows) {
    const tput = fig(row, (s) => s.flowsPerSec);
    const all = fig(row, total);
    lines.push(
      `| ${row.variant} | ${historyShape(row.history)} | ${tput.toFixed(1)} | ${ratio(ours, (s) => s.flowsPerSec, tput)} | ${ratio(equal, (s) => s.flowsPerSec, tput)} | ${fig(row, (s) => s.toOutcome.median).toFixed(0)} / ${fig(row, (s) => s.toOutcome.p99).toFixed(0)} | ${procs.map((k) => fig(row, (s) => cpuOf(s, k)).toFixed(1)).join(' | ')} | ${all.toFixed(1)} | ${ratio(equal, total, all)} | ${row.steps.reduce((a, s) => a + s.errors, 0)} |`,
    );
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const { values } = parseArgs({
    options: {
      family: { type: 'string', default: 'swap' },
      concurrency: { type: 'string', default: '10' },
      seconds: { type: 'string', default: '12' },
      reps: { type: 'string', default: '3' },
      variants: { type: 'string', default: VARIANTS.join(',') },
      label: { type: 'string' },
    },
  });
  const family = values.family as Family;
  if (family !== 'swap' && family !== 'link') throw new Error('--family swap|link');
  const variants = values.variants.split(',') as Variant[];
  for (const v of variants) if (!VARIANTS.includes(v)) throw new Error(`--variants: ${v} is not one of ${VARIANTS.join(', ')}`);
  const [c, seconds, reps] = [Number(values.concurrency), Number(values.seconds), Number(values.reps)];
  const load0 = os.loadavg();
  const stack = await startBenchStack({ simulatorProcess: true });
  try {
    const cpu = () => ({ node: procCpuMs(process.pid), server: procCpuMs(stack.server?.pid), simulator: procCpuMs(stack.simulatorPid) });
    const bounds = { warmMs: 1_000, windowMs: seconds * 1000, minFlows: 2 * c, maxWindowMs: 3 * seconds * 1000 };
    const r = await benchAblation(stack, { family, concurrency: c, reps, bounds, variants, cpu, say: (w) => console.error(w) });
    const load1 = os.loadavg();
    const md = [
      `# Ablation: ${family}, c=${c}`,
      '',
      `\`npx tsx bench/ablation.ts --family ${family} --concurrency ${c} --seconds ${seconds} --reps ${reps}${values.variants === VARIANTS.join(',') ? '' : ` --variants ${values.variants}`}\`, ${new Date().toISOString()}, ${os.cpus().length} × ${os.cpus()[0]?.model ?? '?'}, Node ${process.version}. Load (1, 5, 15 min) before ${load0.map((x) => x.toFixed(2)).join(', ')}, after ${load1.map((x) => x.toFixed(2)).join(', ')}.`,
      '',
      ablationTable(r),
    ].join('\n');
    console.log(md);
    if (values.label) {
      const dir = path.join(__dirname, 'results');
      fs.writeFileSync(path.join(dir, `${values.label}.md`), `${md}\n`);
      fs.writeFileSync(path.join(dir, `${values.label}.json`), `${JSON.stringify({ ...r, seconds, load: [load0, load1] }, null, 1)}\n`);
    }
  } finally {
    await stack.stop();
  }
}

// Run as a script (the section's CLI); imported by bench/run.ts for `--only ablation`.
if (require.main === module) {
  main().then(
    () => setTimeout(() => process.exit(0), 1_000).unref(),
    (err: unknown) => {
      console.error('ablation failed:', err);
      process.exit(1);
    },
  );
}
