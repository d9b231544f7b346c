/**
 * End-to-end swaps on the real Temporal dev server, through the typed client (update-with-start,
 * then the PIN update), against the floor of the same server: a trivial workflow with one activity
 * (test/fixtures/hello-workflows.ts) on its own worker and task queue, started with
 * client.workflow.execute on the same client (same encrypting data converter, so the ratio is the
 * flows' own work, not the codec's). Sequential latencies (interleaved) and 5-concurrent rates.
 */
import { bundleWorkflowCode, NativeConnection, Worker } from '@temporalio/worker';
import { payloadCodecs } from '../src/codec/data-converter';
import { SIM_PIN, swapBody } from '../test/helpers/fixtures';
import type { Stack } from '../test/helpers/stack';
import { uniqueTaskQueue } from '../test/helpers/temporal';
import * as helloActivities from '../test/fixtures/hello-activities';
import { type BenchSection, row } from './report';
import { msSince, now, pairedThroughput, summarize, timeMs } from './stats';

export interface E2eBenchOptions {
  warmup: number;
  sequential: number;
  concurrency: number;
  rounds: number;
  perRound: number;
  budgetMs: number;
}

const quietLogger = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };

export async function benchTemporalE2e(stack: Stack, opts: E2eBenchOptions): Promise<BenchSection> {
  const runId = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
  let seq = 0;

  const startSwap = async (): Promise<string> => {
    const txn_ref = `bench-${runId}-${seq++}`;
    const started = await stack.mpf.startSwap(swapBody(txn_ref));
    if (started.swap.state !== 'awaiting_pin') throw new Error(`swap ${started.swap.swap_id} is ${started.swap.state}, not awaiting_pin`);
    return started.swap.swap_id;
  };
  const confirm = async (swapId: string): Promise<void> => {
    const outcome = await stack.mpf.submitPin(swapId, { wallet_pin: SIM_PIN });
    if (outcome?.outcome !== 'confirmed') throw new Error(`swap ${swapId}: PIN outcome ${outcome?.outcome}, not confirmed`);
  };
  const swap = async (): Promise<void> => confirm(await startSwap());

  const helloQueue = uniqueTaskQueue('bench-hello');
  const hello = async (): Promise<void> => {
    const out = await stack.client.workflow.execute('helloWorkflow', {
      taskQueue: helloQueue,
      workflowId: `bench-hello-${runId}-${seq++}`,
      args: ['merchant'],
    });
    if (out !== 'Hello, merchant!') throw new Error(`hello workflow returned ${String(out)}`);
  };

  const native = await NativeConnection.connect({ address: stack.address });
  const helloWorker = await Worker.create({
    connection: native,
    namespace: stack.namespace,
    taskQueue: helloQueue,
    workflowBundle: await bundleWorkflowCode({ workflowsPath: require.resolve('../test/fixtures/hello-workflows'), logger: quietLogger }),
    activities: helloActivities,
    dataConverter: { payloadCodecs: payloadCodecs(stack.keys) },
  });
  const running = helloWorker.run();

  try {
    for (let i = 0; i < opts.warmup; i++) {
      await swap();
      await hello();
    }
    const toPin: number[] = [];
    const toConfirmed: number[] = [];
    const total: number[] = [];
    const helloMs: number[] = [];
    let truncated = false;
    const t0 = now();
    const timedSwap = async (): Promise<void> => {
      const a = now();
      const id = await startSwap();
      toPin.push(msSince(a));
      const b = now();
      await confirm(id);
      toConfirmed.push(msSince(b));
      total.push(msSince(a));
    };
    for (let i = 0; i < opts.sequential; i++) {
      if (i >= 5 && msSince(t0) > opts.budgetMs) {
        truncated = true;
        break;
      }
      if (i % 2 === 0) {
        await timedSwap();
        helloMs.push(await timeMs(hello));
      } else {
        helloMs.push(await timeMs(hello));
        await timedSwap();
      }
    }
    const conc = await pairedThroughput(swap, hello, { rounds: opts.rounds, perRound: opts.perRound, concurrency: opts.concurrency });

    const h = summarize(helloMs);
    const [p, c, t] = [summarize(toPin), summarize(toConfirmed), summarize(total)];
    const bench = 'temporal: swap vs hello';
    const n = toPin.length;
    return {
      name: 'temporal e2e',
      subjectLabel: 'swap via MpfClient (startSwap update-with-start, submitPin update)',
      baselineLabel: 'helloWorkflow (1 activity) via client.workflow.execute, own worker/queue',
      rows: [
        row(bench, 'startSwap -> awaiting_pin median (ms)', p.median, h.median, n),
        row(bench, 'startSwap -> awaiting_pin p95 (ms)', p.p95, h.p95, n),
        row(bench, 'submitPin -> confirmed median (ms)', c.median, h.median, n),
        row(bench, 'submitPin -> confirmed p95 (ms)', c.p95, h.p95, n),
        row(bench, 'whole swap median (ms)', t.median, h.median, n),
        row(bench, `concurrency ${opts.concurrency} rate (flows/s)`, conc.subject.opsPerSec, conc.baseline.opsPerSec, conc.subject.ops),
        row(bench, `concurrency ${opts.concurrency} p95 per flow (ms)`, conc.subject.latency.p95, conc.baseline.latency.p95, conc.subject.ops),
      ],
      info: { helloMedianMs: h.median, sequentialTruncated: truncated },
    };
  } finally {
    helloWorker.shutdown();
    await running;
    await native.close();
  }
}
