/**
 * The worker process: runs the swap, payment-link and categories workflows and the provider
 * activities. Activities get the provider client and the sealer injected (createActivities).
 */
import { type NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { createActivities } from './activities';
import { workerDataConverter } from './codec/data-converter';
import { createSealer } from './codec/seal';
import { instrumentProvider } from './metrics/activity-metrics';
import { flowMetricSinks, initWorkerCounters } from './metrics/flow-metric-sink';
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
}

export function createMpfWorker(deps: MpfWorkerDeps): Promise<Worker> {
  // Provider calls counted and timed through the activity metric meter (src/metrics/activity-metrics.ts).
  const activities = createActivities({ client: instrumentProvider(deps.provider), sealer: createSealer(deps.keys) });
  initWorkerCounters({ namespace: deps.namespace, taskQueue: deps.taskQueue });
  return Worker.create({
    connection: deps.connection,
    namespace: deps.namespace,
    taskQueue: deps.taskQueue,
    ...(deps.identity ? { identity: deps.identity } : {}),
    ...(deps.workflowBundle ? { workflowBundle: deps.workflowBundle } : { workflowsPath: WORKFLOWS_PATH }),
    activities,
    // The flows' own metrics (src/workflows/flow-metrics.ts), counted once per run and occurrence.
    sinks: flowMetricSinks(),
    dataConverter: workerDataConverter(deps.keys),
    // Bounded concurrency towards the provider (the client's pool bounds connections too).
    maxConcurrentActivityTaskExecutions: 20,
  });
}
