/**
 * The worker process: runs the swap, payment-link and categories workflows and the provider
 * activities. Activities get the provider client and the sealer injected (createActivities).
 */
import { readFileSync } from 'node:fs';
import { Client } from '@temporalio/client';
import { type NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { createActivities } from './activities';
import { createEventActivities } from './activities/events';
import { workerDataConverter } from './codec/data-converter';
import { createSealer } from './codec/seal';
import { type MerchantEventsConfig, NO_MERCHANT_EVENTS } from './merchant-events/config';
import { logProviderCall } from './observability/provider-call-log';
import { mpfWorkerInterceptors, mpfWorkflowInterceptorModules } from './observability/worker-interceptors';
import { instrumentProvider } from './observability/activity-metrics';
import { flowMetricSinks, initWorkerCounters } from './metrics/flow-metric-sink';
import { providerGuardGauges } from './metrics/provider-guard-gauges';
import { type BreakerSettings, PROVIDER_GUARD_WORKFLOW_TYPE } from './contract/provider-guard';
import { ProviderGuardLink } from './temporal/provider-guard-link';
import { WebhookEndpointsReader } from './temporal/webhook-endpoints-reading';
import { WEBHOOK_ENDPOINTS_WORKFLOW_TYPE } from './contract/webhook-endpoints';
import { ClosedFlowSweeper } from './temporal/closed-flow-sweeper';
import { CLOSED_FLOW_WORKFLOW_TYPE } from './workflows/closed-flows';
import type { ProviderClient } from './provider/client';
import { DEFAULT_DEPLOYMENT_NAME, releaseBuildId, versionWorker, type WorkerVersioning } from './temporal/deployment';

export const WORKFLOWS_PATH = require.resolve('./workflows');

/** How often a worker sweeps for flows closed from outside, unless told (CLOSED_FLOW_SWEEP_SECONDS). */
export const DEFAULT_CLOSED_FLOW_SWEEP_MS = 10_000;

/**
 * The modules every bundle of our workflows preloads: evaluated once per workflow thread and shared
 * by every flow on it (the SDK deep-freezes their exports), where the SDK otherwise evaluates each
 * of our ~25 workflow modules again for every flow a worker starts or replays. Safe because they
 * keep no state at module scope: lint refuses a module-level `let`/`var` or a module-level Map, Set
 * or array built with `new` in src/workflows/ (eslint.config.mjs). Measured with
 * `npx tsx bench/workflow-cpu.ts` (docs/performance.md). The bench's control preloads its own
 * workflows module alike.
 */
export const preloadWorkflowModules = (workflowsPath: string = WORKFLOWS_PATH): string[] => [workflowsPath];

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
  /** Merchant events: endpoints, signing secrets, retry schedule (default: none configured). */
  events?: MerchantEventsConfig;
  /** Overrides of MPF_WORKER_TUNING (the benchmark's tuning experiments). */
  tuning?: Partial<WorkerOptions>;
  /**
   * The Worker Deployment Version this worker registers as, and its promote policy
   * (src/temporal/deployment.ts); default: deployment `merchant-payment-flows`, build id of this
   * release, `if-none`.
   */
  versioning?: WorkerVersioning;
  /** Told where the version stands after the promote policy (one line for the log). */
  onVersion?: (line: string) => void;
  /**
   * How often this worker sweeps for flows closed from outside (terminated in Temporal…) and
   * carries them on (src/temporal/closed-flow-sweeper.ts); 0 = never. Default 10 s.
   */
  closedFlowSweepMs?: number;
  /** Told what the sweeper did (one line each). */
  onSweep?: (line: string) => void;
  /** The provider breakers' thresholds (PROVIDER_BREAKER_*; default DEFAULT_BREAKER). */
  breaker?: Partial<BreakerSettings>;
  /**
   * How long one reading of the registered webhook endpoints serves this worker's deliveries
   * (default DEFAULT_ENDPOINTS_TTL_MS; 0: each delivery reads them).
   */
  webhookEndpointsTtlMs?: number;
}

export function defaultVersioning(): WorkerVersioning {
  return { deploymentName: DEFAULT_DEPLOYMENT_NAME, buildId: releaseBuildId(), promote: 'if-none' };
}

/**
 * The worker options beyond connection, queue, code and converter, shared with the benchmark's
 * control workers (bench/control) so "our flow ÷ its control" compares like with like.
 */
export const MPF_WORKER_TUNING: Partial<WorkerOptions> = {
  // Bounded concurrency towards the provider (the client's pool bounds connections too).
  maxConcurrentActivityTaskExecutions: 20,
  // Provider activities heartbeat every second; send one at least every 2 s, well inside their
  // 8 s heartbeat timeout, so a live worker's call is never taken for a dead one.
  maxHeartbeatThrottleInterval: '2s',
  // Flows kept in the sticky cache (WORKER_MAX_CACHED_WORKFLOWS overrides it). The SDK's default
  // grows with the heap limit (about 2,300 here) and each cached flow holds its own copy of the
  // workflow modules, so a worker's memory grew with the flows parked on it (waiting for PINs and
  // payments). Bounded here: a parked flow past it is replayed from history when it wakes, which
  // `npm run bench -- --parked` measures (wake of an evicted flow ÷ a cached one).
  maxCachedWorkflows: 1000,
};

/**
 * Whether the worker's workflows include the provider guard: a prebuilt bundle of a release from
 * before it (an upgrade test, a rollback) cannot run the guard workflow, so the guard would never
 * answer and every money-moving call would be held; such a release had no guard, and runs without.
 */
export function bundleHasProviderGuard(bundle: WorkerOptions['workflowBundle']): boolean {
  return bundleHas(bundle, PROVIDER_GUARD_WORKFLOW_TYPE);
}

/** Whether the worker's workflows include a workflow type (a prebuilt bundle of an older release may not). */
function bundleHas(bundle: WorkerOptions['workflowBundle'], workflowType: string): boolean {
  if (!bundle) return true;
  const code = 'code' in bundle ? bundle.code : readFileSync(bundle.codePath, 'utf8');
  return code.includes(workflowType);
}

export async function createMpfWorker(deps: MpfWorkerDeps): Promise<Worker> {
  // Before the first poll, so a new deployment's first worker finds its version Current.
  const version = await versionWorker(deps.connection, deps.namespace, deps.versioning ?? defaultVersioning(), deps.identity ?? `mpf-worker@${process.pid}`);
  deps.onVersion?.(version.line);
  // The deployment's registered webhook endpoints, read when each event is sent (a bundle of a
  // release from before them cannot run their record: only the configured endpoints then).
  const endpoints = bundleHas(deps.workflowBundle, WEBHOOK_ENDPOINTS_WORKFLOW_TYPE)
    ? new WebhookEndpointsReader({
        client: new Client({ connection: deps.connection, namespace: deps.namespace, dataConverter: workerDataConverter(deps.keys) }),
        taskQueue: deps.taskQueue,
        ...(deps.webhookEndpointsTtlMs !== undefined ? { ttlMs: deps.webhookEndpointsTtlMs } : {}),
      })
    : undefined;
  const { close: _closeEvents, ...eventActivities } = createEventActivities(deps.events ?? NO_MERCHANT_EVENTS, endpoints ? { endpoints: endpoints.current, freshEndpoints: endpoints.fresh } : {});
  // Provider calls counted and timed through the activity metric meter (src/observability/activity-metrics.ts).
  // The deployment's provider guard (kill switch, breakers), read every second and asked when a
  // money-moving call has its connection, right before it is sent; this worker's calls are
  // reported to it.
  const guard = bundleHasProviderGuard(deps.workflowBundle)
    ? new ProviderGuardLink({
        client: new Client({ connection: deps.connection, namespace: deps.namespace, dataConverter: workerDataConverter(deps.keys) }),
        taskQueue: deps.taskQueue,
        ...(deps.breaker ? { settings: deps.breaker } : {}),
        onView: providerGuardGauges({ namespace: deps.namespace, taskQueue: deps.taskQueue }),
      })
    : undefined;
  if (guard) deps.provider.observe(guard.record, { slowMs: guard.settings.slow_ms });
  else deps.onVersion?.('worker: this workflow bundle predates the provider guard: money-moving calls are not guarded (no breaker, no pause)');
  const activities = {
    ...createActivities({ client: instrumentProvider(deps.provider), sealer: createSealer(deps.keys), eventSettings: eventActivities.eventSettings, ...(guard ? { guard } : {}) }),
    ...eventActivities,
  };
  initWorkerCounters({ namespace: deps.namespace, taskQueue: deps.taskQueue });
  // Request ids in log lines, no task tokens; OpenTelemetry when tracing is installed. A prebuilt
  // bundle carries its own workflow interceptor modules (mpfWorkflowInterceptorModules()).
  const { activity, sinks } = mpfWorkerInterceptors();
  deps.provider.observe(logProviderCall);
  const worker = await Worker.create({
    interceptors: { activity, ...(deps.workflowBundle ? {} : { workflowModules: mpfWorkflowInterceptorModules() }) },
    connection: deps.connection,
    namespace: deps.namespace,
    taskQueue: deps.taskQueue,
    ...(deps.identity ? { identity: deps.identity } : {}),
    ...(deps.workflowBundle ? { workflowBundle: deps.workflowBundle } : { workflowsPath: WORKFLOWS_PATH, bundlerOptions: { preloadModules: preloadWorkflowModules() } }),
    activities,
    // The tracing sink when tracing is on, and the flows' own metrics (src/workflows/flow-metrics.ts),
    // counted once per run and occurrence.
    sinks: { ...sinks, ...flowMetricSinks() },
    dataConverter: workerDataConverter(deps.keys),
    workerDeploymentOptions: version.workerDeploymentOptions,
    ...MPF_WORKER_TUNING,
    ...deps.tuning,
  });
  // The guard is read while the worker runs (its first reading once the worker polls: the guard
  // workflow needs a worker), and let go when it stops.
  // Flows closed from outside are carried on to a truthful end by every worker (a bundle of a
  // release from before it cannot run the carrying workflow: no sweep).
  const sweepMs = deps.closedFlowSweepMs ?? DEFAULT_CLOSED_FLOW_SWEEP_MS;
  const sweeper =
    sweepMs > 0 && bundleHas(deps.workflowBundle, CLOSED_FLOW_WORKFLOW_TYPE)
      ? new ClosedFlowSweeper({
          client: new Client({ connection: deps.connection, namespace: deps.namespace, dataConverter: workerDataConverter(deps.keys) }),
          taskQueue: deps.taskQueue,
          intervalMs: sweepMs,
          ...(deps.onSweep ? { log: deps.onSweep } : {}),
        })
      : undefined;
  const run = worker.run.bind(worker);
  worker.run = async () => {
    void guard?.start();
    sweeper?.start();
    try {
      return await run();
    } finally {
      await Promise.all([guard?.close(), sweeper?.close()]);
    }
  };
  return worker;
}
