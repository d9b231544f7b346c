/**
 * A full stack for integration tests, all real: the test's Temporal dev server, the provider
 * simulator over loopback HTTP, an in-process worker (one workflow bundle per test file) and the
 * typed client. `stop()` tears it down in order.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode, NativeConnection, type Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { clientDataConverter, FAILURE_CONVERTER_PATH } from '../../src/codec/data-converter';
import { generateDevKeys } from '../../src/codec/keys';
import { ProviderClient } from '../../src/provider/client';
import { SIMULATOR_DEFAULT_CREDENTIALS as EMBEDDED_SIMULATOR_CREDENTIALS } from '../../src/simulator/options';
import { startSimulator, type RunningSimulator, type SimulatorOptions } from '../../src/simulator';
import { createControlClient, type SimulatorControl } from '../../src/simulator/control-client';
import { MpfClient, type MpfClientOptions } from '../../src/starter/client/mpf-client';
import { createMpfWorker, defaultVersioning, preloadWorkflowModules, WORKFLOWS_PATH } from '../../src/worker';
import type { MerchantEventsConfig } from '../../src/merchant-events/config';
import type { BreakerSettings } from '../../src/contract/provider-guard';
import { getTestTemporal, uniqueTaskQueue } from './temporal';

let bundle: Promise<WorkflowBundleWithSourceMap> | undefined;
export function workflowBundle(): Promise<WorkflowBundleWithSourceMap> {
  bundle ??= bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, preloadModules: preloadWorkflowModules(), failureConverterPath: FAILURE_CONVERTER_PATH, logger: quietLogger });
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
  /** Merchant events of the in-process worker (endpoints, secrets, schedule); default none. */
  events?: MerchantEventsConfig;
  /** The provider breakers' thresholds of the in-process worker (default DEFAULT_BREAKER). */
  breaker?: Partial<BreakerSettings>;
  /** How often the in-process worker sweeps for flows closed from outside (default the worker's). */
  closedFlowSweepMs?: number;
  /** The worker's provider client's connections (maxConnections; default the client's). */
  providerConnections?: number;
  /** How long the in-process worker's reading of the registered webhook endpoints serves (default the worker's). */
  webhookEndpointsTtlMs?: number;
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
  /** Where the flows' notification_url point (the stack's stand-in for the gateway's receiver). */
  notificationBaseUrl: string;
  startWorker(): Promise<void>;
  stopWorker(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Closes what a stack opened, last first. Every step runs even when an earlier one throws, so a
 * failing step (a worker whose run rejected, a server slow to close) leaves no listening socket or
 * connection behind: a test file with an open handle never exits, and its whole output is lost.
 */
class Teardown {
  private readonly steps: { what: string; run: () => Promise<unknown> | unknown }[] = [];
  add(what: string, run: () => Promise<unknown> | unknown): void {
    this.steps.push({ what, run });
  }
  async run(): Promise<void> {
    const errors: unknown[] = [];
    for (const step of this.steps.splice(0).reverse()) {
      try {
        await step.run();
      } catch (e) {
        errors.push(new Error(`stack teardown: ${step.what} failed: ${e instanceof Error ? e.message : String(e)}`, { cause: e }));
      }
    }
    if (errors.length === 1) throw errors[0];
    if (errors.length > 1) throw new AggregateError(errors, `stack teardown: ${errors.length} steps failed`);
  }
}

export async function startStack(opts: StackOptions = {}): Promise<Stack> {
  const teardown = new Teardown();
  try {
    return await openStack(opts, teardown);
  } catch (e) {
    // A stack that failed half-way closes what it opened, then reports why it failed.
    await teardown.run().catch(() => undefined);
    throw e;
  }
}

async function openStack(opts: StackOptions, teardown: Teardown): Promise<Stack> {
  const temporal = opts.temporal ?? (await getTestTemporal());
  const sim = await startSimulator(opts.simulator);
  teardown.add('the simulator', () => sim.close());
  const control = createControlClient(sim.baseUrl);
  const keys = opts.keys ?? generateDevKeys();
  const taskQueue = uniqueTaskQueue('mpf');
  const connection = await Connection.connect({ address: temporal.address });
  teardown.add('the client connection', () => connection.close());
  const client = new Client({ connection, namespace: temporal.namespace, dataConverter: clientDataConverter(keys) });
  // The provider's notifications reach the flows, as through the gateway's receiver (without its
  // token check: the gateway tests prove that): POST …/v1/notifications/<kind>/<flow_id>/<token>.
  let mpf: MpfClient | undefined;
  const receiver: Server = createServer((req, res) => {
    let raw = '';
    req.on('data', (d: Buffer) => (raw += d.toString()));
    req.on('end', () => {
      const m = /\/v1\/notifications\/[^/]+\/([^/]+)\/[^/]+$/.exec(req.url ?? '');
      let payload: unknown;
      try {
        payload = JSON.parse(raw);
      } catch {
        payload = undefined;
      }
      if (!m || !mpf) return res.writeHead(404).end();
      mpf.deliverNotification(decodeURIComponent(m[1]!), payload, raw).then(
        () => res.writeHead(200).end(),
        () => res.writeHead(503).end(),
      );
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  teardown.add('the notification receiver', async () => {
    receiver.closeAllConnections();
    await new Promise((r) => receiver.close(r));
  });
  mpf = new MpfClient({
    client,
    taskQueue,
    keys,
    publicUrl: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`,
    ...opts.client,
  });
  const provider = new ProviderClient({
    baseUrl: sim.baseUrl,
    ...EMBEDDED_SIMULATOR_CREDENTIALS,
    ...(opts.providerConnections ? { maxConnections: opts.providerConnections } : {}),
  });
  teardown.add('the provider client', () => provider.close());
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
      ...(opts.events ? { events: opts.events } : {}),
      ...(opts.breaker ? { breaker: opts.breaker } : {}),
      ...(opts.closedFlowSweepMs !== undefined ? { closedFlowSweepMs: opts.closedFlowSweepMs } : {}),
      ...(opts.webhookEndpointsTtlMs !== undefined ? { webhookEndpointsTtlMs: opts.webhookEndpointsTtlMs } : {}),
      // Every test's queue joins this release's version of the shared deployment; made Current
      // over a version an earlier run left on a long-lived TEMPORAL_ADDRESS server.
      versioning: { ...defaultVersioning(), promote: 'always' },
    });
    running = worker.run();
  };
  const stopWorker = async (): Promise<void> => {
    if (!worker) return;
    worker.shutdown();
    await running;
    worker = undefined;
  };
  teardown.add('the worker and its connection', async () => {
    try {
      await stopWorker();
    } finally {
      await native?.close();
    }
  });
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
    notificationBaseUrl: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`,
    startWorker,
    stopWorker,
    stop: () => teardown.run(),
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

/** The environment an `mpf worker` process needs to serve this stack, as a user would set it. */
export function workerProcessEnv(stack: Pick<Stack, 'address' | 'namespace' | 'taskQueue' | 'keys' | 'sim'>): Record<string, string> {
  return {
    TEMPORAL_ADDRESS: stack.address,
    TEMPORAL_NAMESPACE: stack.namespace,
    TEMPORAL_TASK_QUEUE: stack.taskQueue,
    MPS_BASE_URL: stack.sim.baseUrl,
    MPS_SECRET_KEY: 'sim-secret-key',
    MPS_ACCESS_TOKEN: 'sim-access-token',
    MPS_MERCHANT_REF: 'sim-merchant',
    PAYLOAD_ENCRYPTION_KEYS: stack.keys,
  };
}
