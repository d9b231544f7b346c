/**
 * A full stack for integration tests, all real: the test's Temporal dev server, the provider
 * simulator over loopback HTTP, an in-process worker (one workflow bundle per test file) and the
 * typed client. `stop()` tears it down in order.
 */
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode, NativeConnection, type Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { clientDataConverter, FAILURE_CONVERTER_PATH } from '../../src/codec/data-converter';
import { generateDevKeys } from '../../src/codec/keys';
import { ProviderClient } from '../../src/provider/client';
import { SIMULATOR_DEFAULT_CREDENTIALS as EMBEDDED_SIMULATOR_CREDENTIALS } from '../../src/simulator/options';
import { startSimulator, type RunningSimulator, type SimulatorOptions } from '../../src/simulator';
import { createControlClient, type SimulatorControl } from '../../src/simulator/control-client';
import { MpfClient, type MpfClientOptions } from '../../src/starter/client';
import { createMpfWorker, WORKFLOWS_PATH } from '../../src/worker';
import { getTestTemporal, uniqueTaskQueue } from './temporal';

let bundle: Promise<WorkflowBundleWithSourceMap> | undefined;
export function workflowBundle(): Promise<WorkflowBundleWithSourceMap> {
  bundle ??= bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, failureConverterPath: FAILURE_CONVERTER_PATH, logger: quietLogger });
  return bundle;
}

const quietLogger = {
  log() {},
  trace() {},
  debug() {},
  info() {},
  warn() {},
  error() {},
};

export interface StackOptions {
  simulator?: SimulatorOptions;
  client?: Partial<Omit<MpfClientOptions, 'client' | 'taskQueue' | 'keys'>>;
  /** Don't start the in-process worker (tests that run the worker as a process). */
  noWorker?: boolean;
  /** PAYLOAD_ENCRYPTION_KEYS; default: fresh dev keys. */
  keys?: string;
  /** A Temporal server of the test's own (one it kills); default the run's shared server. */
  temporal?: { address: string; namespace: string };
}

export interface Stack {
  sim: RunningSimulator;
  control: SimulatorControl;
  mpf: MpfClient;
  client: Client;
  taskQueue: string;
  keys: string;
  address: string;
  namespace: string;
  startWorker(): Promise<void>;
  stopWorker(): Promise<void>;
  stop(): Promise<void>;
}

export async function startStack(opts: StackOptions = {}): Promise<Stack> {
  const temporal = opts.temporal ?? (await getTestTemporal());
  const sim = await startSimulator(opts.simulator);
  const control = createControlClient(sim.baseUrl);
  const keys = opts.keys ?? generateDevKeys();
  const taskQueue = uniqueTaskQueue('mpf');
  const connection = await Connection.connect({ address: temporal.address });
  const client = new Client({ connection, namespace: temporal.namespace, dataConverter: clientDataConverter(keys) });
  const mpf = new MpfClient({
    client,
    taskQueue,
    keys,
    publicUrl: 'http://127.0.0.1:9/unused',
    ...opts.client,
  });
  const provider = new ProviderClient({
    baseUrl: sim.baseUrl,
    ...EMBEDDED_SIMULATOR_CREDENTIALS,
  });
  let native: NativeConnection | undefined;
  let worker: Worker | undefined;
  let running: Promise<void> | undefined;

  const startWorker = async (): Promise<void> => {
    if (worker) return; // one worker per stack; starting it again is a no-op
    native ??= await NativeConnection.connect({ address: temporal.address });
    worker = await createMpfWorker({
      connection: native,
      namespace: temporal.namespace,
      taskQueue,
      keys,
      provider,
      workflowBundle: await workflowBundle(),
    });
    running = worker.run();
  };
  const stopWorker = async (): Promise<void> => {
    if (!worker) return;
    worker.shutdown();
    await running;
    worker = undefined;
  };
  if (!opts.noWorker) await startWorker();

  return {
    sim,
    control,
    mpf,
    client,
    taskQueue,
    keys,
    address: temporal.address,
    namespace: temporal.namespace,
    startWorker,
    stopWorker,
    async stop() {
      await stopWorker();
      await native?.close();
      await connection.close();
      await provider.close();
      await sim.close();
    },
  };
}

/** Polls `fn` until it returns a truthy value (or throws after `timeoutMs`). */
export async function eventually<T>(fn: () => Promise<T | undefined | false>, timeoutMs = 20_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A swap start body for user-1: 10.5 USD to NGN, with `extra` on top. */
export const swapBody = (txn_ref: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  user_ref: 'user-1',
  from_currency: 'USD',
  to_currency: 'NGN',
  amount: 10.5,
  txn_ref,
  ...extra,
});
