/**
 * `mpf worker`: the worker process configured from the environment. It fails closed: no provider
 * configured (MPS_BASE_URL, or MPS_PROVIDER=simulator outside production) means it refuses to
 * start. It registers our search attributes on whatever Temporal it is pointed at.
 */
import path from 'node:path';
import type { Logger } from 'pino';
import { loadEnv, providerChoice, requireKeys } from './config/env';
import { tracingFromEnv } from './observability/tracing';
import { createWorkerPino, workerRuntimeLogging } from './observability/worker-logger';
import { startWorkerEndpoint } from './metrics/worker-endpoint';
import { installWorkerRuntime } from './metrics/worker-runtime';
import { providerClientFromEnv, type ProviderClient } from './provider/client';
import type * as Simulator from './simulator';
import { temporalTargetFromEnv } from './temporal/connection';
import { connectNative } from './temporal/native-connection';
import { ensureSearchAttributes } from './temporal/search-attributes-admin';
import { merchantEventsFromEnv } from './merchant-events/config';
import { breakerSettingsFromEnv } from './config/provider-guard-env';
import { createMpfWorker } from './worker';
import { releaseBuildId } from './temporal/deployment';

async function providerFromEnv(env: ReturnType<typeof loadEnv>, log: Logger): Promise<{ provider: ProviderClient; close?: () => Promise<void> }> {
  const choice = providerChoice(env); // throws a ConfigError naming the variables
  if (choice.kind === 'url') return { provider: providerClientFromEnv(env, choice.baseUrl) };
  // Loaded only when asked for: the production path never loads the simulator.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const sim = require('./simulator') as typeof Simulator;
  const running = await sim.startSimulator();
  log.warn(`worker: MPS_PROVIDER=simulator: using the embedded provider simulator at ${running.baseUrl} (NO MONEY MOVES; never for production)`);
  return { provider: providerClientFromEnv(env, running.baseUrl, undefined, sim.SIMULATOR_DEFAULT_CREDENTIALS), close: running.close };
}

export async function runWorkerMain(): Promise<void> {
  const env = loadEnv();
  const keys = requireKeys(env);
  // Every line is one JSON object (pino, stdout), the SDK's and the workflows'/activities' included.
  const log = createWorkerPino({ level: env.LOG_LEVEL });
  // The Runtime, before any connection: with WORKER_METRICS_ADDRESS, the SDK's Prometheus exporter
  // too, served with /healthz and /readyz by the worker's operations endpoint (src/metrics/).
  const { exporterUrl } = await installWorkerRuntime({ ...workerRuntimeLogging(log) }, env.WORKER_METRICS_ADDRESS !== undefined);
  // The start-up lines are what scripts wait for: printed whatever LOG_LEVEL says.
  const startup = log.isLevelEnabled('info') ? log : log.child({}, { level: 'info' });
  const tracing = tracingFromEnv('mpf-worker'); // off unless OTEL_EXPORTER_OTLP_ENDPOINT is set
  const { provider, close: closeSim } = await providerFromEnv(env, log);
  const events = merchantEventsFromEnv(env);
  const ops = env.WORKER_METRICS_ADDRESS ? await startWorkerEndpoint({ ...env.WORKER_METRICS_ADDRESS, exporterUrl }) : undefined;
  if (ops) startup.info(`worker: metrics and health on ${ops.url} (/metrics, /healthz, /readyz)`);
  const target = temporalTargetFromEnv(env);
  const connection = await connectNative(target);
  const added = await ensureSearchAttributes(connection, target.namespace);
  if (added.length) startup.info(`worker: registered search attributes ${added.join(', ')} in namespace ${target.namespace}`);
  const worker = await createMpfWorker({
    connection,
    namespace: target.namespace,
    taskQueue: env.TEMPORAL_TASK_QUEUE,
    keys,
    provider,
    events,
    breaker: breakerSettingsFromEnv(env),
    ...(env.WORKER_MAX_CACHED_WORKFLOWS !== undefined ? { tuning: { maxCachedWorkflows: env.WORKER_MAX_CACHED_WORKFLOWS } } : {}),
    ...(env.WORKER_WORKFLOW_BUNDLE ? { workflowBundle: { codePath: path.resolve(env.WORKER_WORKFLOW_BUNDLE) } } : {}),
    versioning: { deploymentName: env.WORKER_DEPLOYMENT_NAME, buildId: env.WORKER_BUILD_ID ?? releaseBuildId(), promote: env.WORKER_PROMOTE },
    onVersion: (line) => startup.info(line),
    closedFlowSweepMs: env.CLOSED_FLOW_SWEEP_SECONDS * 1000,
    onSweep: (line) => log.warn(line),
  });
  if (env.WORKER_WORKFLOW_BUNDLE) startup.info(`worker: workflows from the bundle ${env.WORKER_WORKFLOW_BUNDLE}`);
  ops?.attach({ worker, connection });
  startup.info(`worker: polling task queue ${env.TEMPORAL_TASK_QUEUE} on ${target.address} (namespace ${target.namespace}), provider at ${provider.origin}`);
  startup.info(
    events.secrets.length === 0
      ? 'worker: merchant events are not delivered (no MERCHANT_WEBHOOK_SECRET); flows list them in their view'
      : `worker: merchant events signed and delivered to ${events.urls.length} configured endpoint(s) and flows' own webhook_url`,
  );
  // Worker.run() installs SIGINT/SIGTERM handlers that shut down gracefully.
  await worker.run();
  await provider.close();
  await connection.close();
  await ops?.close();
  await closeSim?.();
  await tracing?.shutdown();
}
