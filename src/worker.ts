/**
 * The worker process: runs the swap, payment-link and categories workflows and the provider
 * activities. Activities get the provider client and the sealer injected (createActivities).
 */
import { type NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { createActivities } from './activities';
import { workerDataConverter } from './codec/data-converter';
import { createSealer } from './codec/seal';
import type { ProviderClient } from './provider/client';

export const WORKFLOWS_PATH = require.resolve('./workflows');

export interface MpfWorkerDeps {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  /** PAYLOAD_ENCRYPTION_KEYS: payload codec and sealing. */
  keys: string;
  provider: ProviderClient;
  /** A prebuilt bundle (tests build one per suite); default: bundle from WORKFLOWS_PATH. */
  workflowBundle?: WorkerOptions['workflowBundle'];
  identity?: string;
  /** Overrides of MPF_WORKER_TUNING (the benchmark's tuning experiments). */
  tuning?: Partial<WorkerOptions>;
}

/**
 * The worker options beyond connection, queue, code and converter, shared with the benchmark's
 * control workers (bench/control) so "our flow ÷ its control" compares like with like.
 */
export const MPF_WORKER_TUNING: Partial<WorkerOptions> = {
  // Bounded concurrency towards the provider (the client's pool bounds connections too).
  maxConcurrentActivityTaskExecutions: 20,
};

export function createMpfWorker(deps: MpfWorkerDeps): Promise<Worker> {
  const activities = createActivities({ client: deps.provider, sealer: createSealer(deps.keys) });
  return Worker.create({
    connection: deps.connection,
    namespace: deps.namespace,
    taskQueue: deps.taskQueue,
    ...(deps.identity ? { identity: deps.identity } : {}),
    ...(deps.workflowBundle ? { workflowBundle: deps.workflowBundle } : { workflowsPath: WORKFLOWS_PATH }),
    activities,
    dataConverter: workerDataConverter(deps.keys),
    ...MPF_WORKER_TUNING,
    ...deps.tuning,
  });
}
