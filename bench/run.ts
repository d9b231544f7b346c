/**
 * `npm run bench`: the benchmarks, each a ratio against a baseline measured in the same run
 * (interleaved with it), bounded in count and time, loopback only. Prints a table and writes
 * .cache/bench/results.json. Order: pure CPU (codec), then HTTP on a standalone simulator, then
 * the Temporal stack (dev server + simulator + worker), so the server idles through nothing it
 * could disturb. A watchdog ends the run if it ever exceeds its time bound.
 *
 *   MPF_BENCH_QUICK=1   smaller counts (a smoke run)
 */
import { startSimulator } from '../src/simulator';
import { startStack, type Stack } from '../test/helpers/stack';
import { getTestTemporal } from '../test/helpers/temporal';
import { benchCodec } from './codec.bench';
import { benchProviderClient } from './provider-client.bench';
import { type BenchSection, environment, formatTable, writeResults } from './report';
import { msSince, now } from './stats';
import { benchTemporalE2e } from './temporal-e2e.bench';

const QUICK = process.env.MPF_BENCH_QUICK === '1';
const WATCHDOG_MS = 170_000;
const q = (full: number, quick: number): number => (QUICK ? quick : full);

async function main(): Promise<void> {
  const t0 = now();
  const sections: BenchSection[] = [];
  const envBefore = environment();
  const step = (what: string): void => console.error(`[bench ${(msSince(t0) / 1000).toFixed(1)}s] ${what}`);

  step('codec');
  sections.push(await benchCodec({ batch: q(200, 50), batches: q(40, 10), warmupBatches: q(5, 2), budgetMs: 15_000 }));

  step('provider client (standalone simulator)');
  const sim = await startSimulator({ seed: 1 });
  try {
    sections.push(
      await benchProviderClient(sim.baseUrl, {
        warmup: q(30, 10),
        sequential: q(300, 60),
        concurrency: 8,
        rounds: q(4, 2),
        perRound: q(200, 50),
        budgetMs: 25_000,
      }),
    );
  } finally {
    await sim.close();
  }

  step('temporal dev server + stack');
  let stack: Stack | undefined;
  try {
    // notificationRetryScheduleMs [0]: the provider's notification to the (absent) gateway is tried once.
    stack = await startStack({ simulator: { seed: 1, notificationRetryScheduleMs: [0] } });
    step('temporal e2e');
    sections.push(
      await benchTemporalE2e(stack, {
        warmup: q(3, 1),
        sequential: q(20, 6),
        concurrency: 5,
        rounds: q(2, 1),
        perRound: q(15, 5),
        budgetMs: 40_000,
      }),
    );
  } finally {
    step('shutting down');
    await stack?.stop();
    await (await getTestTemporal()).shutdown();
  }

  const wallS = msSince(t0) / 1000;
  console.log(formatTable(sections));
  const file = writeResults(sections, { environment: envBefore, loadavgAfter: environment().loadavg, quick: QUICK, wallSeconds: wallS });
  console.log(`\nwall time ${wallS.toFixed(1)} s; results: ${file}`);
}

const watchdog = setTimeout(() => {
  console.error(`bench: exceeded ${WATCHDOG_MS / 1000} s, aborting`);
  process.exit(2);
}, WATCHDOG_MS);
watchdog.unref();

main().then(
  () => {
    process.exitCode = 0;
    // Let handles close on their own; don't hang if one lingers.
    setTimeout(() => process.exit(0), 2_000).unref();
  },
  (err: unknown) => {
    console.error('bench failed:', err);
    process.exit(1);
  },
);
