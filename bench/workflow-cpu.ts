/**
 * `npx tsx bench/workflow-cpu.ts [--n 200] [--path swap-confirmed,paylink-paid] [--release DIR] [--no-preload] [--promises]`:
 * the CPU our workflow code costs the worker, without a server: replays recorded histories (the
 * newest corpus in test/replay/ by default) N times each in this process and prints CPU ms per
 * replay. A replay runs the same workflow code, SDK machinery and payload codec as a live workflow
 * task, so a cut in workflow code shows here with little noise, before the load curve (`npm run
 * bench`) measures it against its control. Profile it with
 * `node --cpu-prof --import tsx bench/workflow-cpu.ts …`. `--no-preload` bundles without
 * preloadWorkflowModules() (src/worker.ts), to measure what the preload saves; `--promises`
 * counts the promises workflow code creates per replay instead of timing it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { promiseHooks } from 'node:v8';
import { parseArgs } from 'node:util';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { bundleWorkflowCode, DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { FAILURE_CONVERTER_PATH, workerDataConverter } from '../src/codec/data-converter';
import { flowMetricSinks } from '../src/metrics/flow-metric-sink';
import { preloadWorkflowModules, WORKFLOWS_PATH } from '../src/worker';

const REPLAY_DIR = path.resolve(__dirname, '..', 'test', 'replay');
const quiet = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };

function newestRelease(): string {
  const dirs = fs.readdirSync(REPLAY_DIR).filter((d) => fs.existsSync(path.join(REPLAY_DIR, d, 'release.json')));
  const recorded = dirs.map((d) => ({ d, at: (JSON.parse(fs.readFileSync(path.join(REPLAY_DIR, d, 'release.json'), 'utf8')) as { recorded_at: string }).recorded_at }));
  return recorded.sort((a, b) => a.at.localeCompare(b.at)).at(-1)!.d;
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { n: { type: 'string', default: '200' }, path: { type: 'string' }, release: { type: 'string' }, 'no-preload': { type: 'boolean', default: false }, promises: { type: 'boolean', default: false } } });
  const n = Number(values.n);
  const release = values.release ?? newestRelease();
  const wanted = values.path?.split(',');
  const ids = (JSON.parse(fs.readFileSync(path.join(REPLAY_DIR, release, 'release.json'), 'utf8')) as { workflow_ids?: Record<string, string> }).workflow_ids ?? {};
  const files = fs.readdirSync(path.join(REPLAY_DIR, release)).filter((f) => f.endsWith('.json') && f !== 'release.json').filter((f) => !wanted || wanted.includes(f.replace(/\.json$/, '')));
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const keys = fs.readFileSync(path.join(REPLAY_DIR, 'test-key.txt'), 'utf8').trim();
  const workflowBundle = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, failureConverterPath: FAILURE_CONVERTER_PATH, logger: quiet, ...(values['no-preload'] ? {} : { preloadModules: preloadWorkflowModules() }) });
  // The sinks the worker registers (their calls are skipped in replay, as on a live worker's replay).
  const options = { workflowBundle, dataConverter: workerDataConverter(keys), sinks: flowMetricSinks() };
  console.log(`workflow code CPU per replay, ${n} replays of each history of test/replay/${release} (node ${process.version})`);
  for (const f of files) {
    const json: unknown = JSON.parse(fs.readFileSync(path.join(REPLAY_DIR, release, f), 'utf8'));
    const events = (json as { events: unknown[] }).events.length;
    const run = async (count: number): Promise<void> => {
      const histories = (async function* () {
        for (let i = 0; i < count; i++) yield { history: historyFromJSON(json), workflowId: ids[f.replace(/\.json$/, '')] ?? `${f.replace(/\.json$/, '')}-${i}` }; // child ids derive from it
      })();
      for await (const r of Worker.runReplayHistories(options, histories)) if (r.error) throw r.error;
    };
    await run(Math.min(20, n)); // warm-up
    if (values.promises) {
      // A separate pass: the hook itself costs CPU. Workflow promises are those of the workflow
      // context's own Promise (the SDK records a stack for each: docs/performance.md).
      let count = 0;
      const stop = promiseHooks.createHook({ init: (p: Promise<unknown>) => void (p.constructor !== Promise && count++) });
      await run(n);
      stop();
      console.log(`${f.replace(/\.json$/, '').padEnd(48)} ${String(events).padStart(3)} events  ${(count / n).toFixed(0).padStart(6)} workflow promises per replay`);
      continue;
    }
    const before = process.cpuUsage();
    const t0 = performance.now();
    await run(n);
    const cpu = process.cpuUsage(before);
    console.log(`${f.replace(/\.json$/, '').padEnd(48)} ${String(events).padStart(3)} events  ${((cpu.user + cpu.system) / 1000 / n).toFixed(2).padStart(6)} ms CPU  ${((performance.now() - t0) / n).toFixed(2).padStart(6)} ms wall`);
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
