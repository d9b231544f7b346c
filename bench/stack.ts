/**
 * The benchmark's stack, all real and on loopback: a Temporal server (a dev server of its own,
 * with the dynamic config asked for, or an external one such as the PostgreSQL topology), the
 * provider simulator (in this process, or in a process of its own), the gateway (which also
 * receives the simulator's notifications, as in production), our worker, and a control worker on
 * its own task queue with the SAME worker options (MPF_WORKER_TUNING + the experiment's tuning)
 * and the same encrypting data converter, running the control workflows of bench/control; and
 * the equal-work control alike (its worker, its own undici Pool to the simulator, its client and
 * its webhook receiver in this process, as ours are).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { Client, Connection, type TLSConfig } from '@temporalio/client';
import { type BundleOptions, bundleWorkflowCode, NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { clientDataConverter, FAILURE_CONVERTER_PATH, workerDataConverter } from '../src/codec/data-converter';
import { generateDevKeys } from '../src/codec/keys';
import { ProviderClient } from '../src/provider/client';
import { startSimulator } from '../src/simulator';
import { createControlClient, type SimulatorControl } from '../src/simulator/control-client';
import { SIMULATOR_DEFAULT_CREDENTIALS } from '../src/simulator/options';
import { MpfClient } from '../src/starter/client/mpf-client';
import { type RunningGateway, startGateway } from '../src/starter/gateway/main';
import { startDevServer, type DevServer } from '../src/temporal/dev-server';
import { ensureSearchAttributes } from '../src/temporal/search-attributes-admin';
import { createMpfWorker, defaultVersioning, MPF_WORKER_TUNING, preloadWorkflowModules, WORKFLOWS_PATH } from '../src/worker';
import { versionWorker } from '../src/temporal/deployment';
import { mpfWorkflowInterceptorModules } from '../src/observability/worker-interceptors';
import type { RenewingToken } from '../src/temporal/tokens';
import * as controlActivities from './control/activities';
import { createEqualWorkActivities } from './control/equal-work-activities';
import { EqualWorkClient, startEqualWorkReceiver } from './control/equal-work-client';
import { DEFAULT_SWAP_NOTIFICATION_WAIT_SECONDS } from '../src/config/flow-defaults';

export const BENCH_API_KEY = 'bench-gateway-api-key-0123456789';

export interface BenchStackOptions {
  /** The dev server's dynamic config (ignored with `temporalAddress`). */
  dynamicConfig?: Record<string, string | number | boolean>;
  /** An external Temporal frontend (e.g. `mpf cluster up`'s); default: a dev server of our own. */
  temporalAddress?: string;
  /** TLS client options for `temporalAddress` (the cluster's operator certificate: its frontend requires mTLS). */
  temporalTls?: TLSConfig;
  /** With a cluster that authorises every call: the admin tools' token (renewed by the cluster), for the bench's client and its workers. */
  temporalToken?: RenewingToken;
  namespace?: string;
  /** Run the simulator in a process of its own (it then shares no event loop with worker and client). */
  simulatorProcess?: boolean;
  /** The provider's swap window (default 300 s); parked swaps must outlive their parking. */
  swapExpiresInSeconds?: number;
  /** Worker option overrides for BOTH workers (ours and the control's). */
  tuning?: Partial<WorkerOptions>;
}

export interface BenchStack {
  address: string;
  namespace: string;
  server?: DevServer;
  client: Client;
  /** The workers' connection (a variant's worker joins it: bench/ablation.ts). */
  native: NativeConnection;
  mpf: MpfClient;
  gateway: RunningGateway;
  simUrl: string;
  control: SimulatorControl;
  taskQueue: string;
  controlQueue: string;
  /** The equal-work control: its client (starts, PINs) and its task queue. */
  equal: EqualWorkClient;
  equalQueue: string;
  keys: string;
  simulatorPid?: number;
  stop(): Promise<void>;
}

const quietLogger = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };

/**
 * Our workflows bundled as `mpf worker` runs them (with its workflow interceptor modules: request
 * ids in log lines); `webpackConfigHook` for a bench variant of them (bench/ablation.ts).
 */
export function bundleOurWorkflows(webpackConfigHook?: BundleOptions['webpackConfigHook']): ReturnType<typeof bundleWorkflowCode> {
  return bundleWorkflowCode({
    workflowsPath: WORKFLOWS_PATH,
    preloadModules: preloadWorkflowModules(),
    failureConverterPath: FAILURE_CONVERTER_PATH,
    workflowInterceptorModules: mpfWorkflowInterceptorModules(),
    logger: quietLogger,
    ...(webpackConfigHook ? { webpackConfigHook } : {}),
  });
}

const uniq = (p: string): string => `${p}-${process.pid}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`;

/** The simulator in a child process (`tsx src/simulator/main.ts`); resolves with its URL. */
async function spawnSimulator(swapExpiresInSeconds?: number): Promise<{ url: string; child: ChildProcess }> {
  const root = path.resolve(__dirname, '..');
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'src/simulator/main.ts'), '--port', '0', '--seed', '1', ...(swapExpiresInSeconds ? ['--swap-expires-in-seconds', String(swapExpiresInSeconds)] : [])], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    const lines = readline.createInterface({ input: child.stdout! });
    lines.on('line', (l) => {
      const m = /^listening on (\S+)/.exec(l);
      if (m) resolve(m[1]!);
    });
    child.once('exit', (code) => reject(new Error(`simulator process exited (${code}) before listening`)));
  });
  return { url, child };
}

/**
 * The equal-work control: its worker (same options and data converter as ours, its own
 * deployment made Current), its provider Pool, its webhook receiver and its client.
 */
async function startEqualWork(
  o: { native: NativeConnection; namespace: string; client: Client; keys: string; simUrl: string; taskQueue: string; tuning?: Partial<WorkerOptions> },
  cleanups: (() => Promise<void>)[],
): Promise<{ worker: Worker; equal: EqualWorkClient }> {
  const workflowsPath = require.resolve('./control/equal-work-workflows');
  const bundle = await bundleWorkflowCode({ workflowsPath, preloadModules: preloadWorkflowModules(workflowsPath), failureConverterPath: FAILURE_CONVERTER_PATH, logger: quietLogger });
  const provider = createEqualWorkActivities({ baseUrl: o.simUrl, ...SIMULATOR_DEFAULT_CREDENTIALS });
  cleanups.push(() => provider.close());
  const version = await versionWorker(o.native, o.namespace, { deploymentName: 'mpf-bench-equal', buildId: 'equal', promote: 'always' }, 'mpf-bench');
  const worker = await Worker.create({
    connection: o.native,
    namespace: o.namespace,
    taskQueue: o.taskQueue,
    workflowBundle: bundle,
    activities: provider.activities,
    dataConverter: workerDataConverter(o.keys),
    workerDeploymentOptions: version.workerDeploymentOptions,
    ...MPF_WORKER_TUNING,
    ...o.tuning,
  });
  const receiver = await startEqualWorkReceiver(o.client);
  cleanups.push(() => receiver.close());
  const equal = new EqualWorkClient({
    client: o.client,
    taskQueue: o.taskQueue,
    notifyBaseUrl: receiver.notifyBaseUrl,
    notificationWaitSeconds: DEFAULT_SWAP_NOTIFICATION_WAIT_SECONDS,
    linkLifetimeSeconds: 86_400,
  });
  return { worker, equal };
}

export async function startBenchStack(opts: BenchStackOptions = {}): Promise<BenchStack> {
  const cleanups: (() => Promise<void>)[] = [];
  const stop = async (): Promise<void> => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
  };
  try {
    let server: DevServer | undefined;
    let address = opts.temporalAddress;
    const namespace = opts.namespace ?? 'default';
    if (!address) {
      server = await startDevServer({ unref: true, dynamicConfig: opts.dynamicConfig });
      cleanups.push(() => server!.stop());
      address = server.address;
    }
    const keys = generateDevKeys();

    let simUrl: string;
    let simulatorPid: number | undefined;
    if (opts.simulatorProcess) {
      const { url, child } = await spawnSimulator(opts.swapExpiresInSeconds);
      simUrl = url;
      simulatorPid = child.pid;
      cleanups.push(async () => {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      });
    } else {
      const sim = await startSimulator({ seed: 1, swapExpiresInSeconds: opts.swapExpiresInSeconds });
      cleanups.push(() => sim.close());
      simUrl = sim.baseUrl;
    }

    const tls = opts.temporalTls ? { tls: opts.temporalTls } : {};
    const token = opts.temporalToken;
    const connection = await Connection.connect({ address, ...tls, ...(token ? { apiKey: () => token.current() } : {}) });
    cleanups.push(() => connection.close());
    if (!server) await ensureSearchAttributes(connection, namespace);
    const client = new Client({ connection, namespace, dataConverter: clientDataConverter(keys) });
    const taskQueue = uniq('bench-mpf');
    const controlQueue = uniq('bench-control');
    const equalQueue = uniq('bench-equal');
    const mpf = new MpfClient({ client, taskQueue, keys, publicUrl: 'http://127.0.0.1:9' });
    const gateway = await startGateway({
      mpf,
      apiKey: BENCH_API_KEY,
      port: 0,
      logger: false,
      // The bench sends one PIN per swap, all from one address: the per-address limit may not
      // refuse them. Each swap has its own user (gateway.bench.ts), so the per-user budget, taken
      // and settled for every PIN, keeps its default: its cost is measured, not its refusals.
      pinRateLimit: { max: 1_000_000, timeWindowMs: 60_000 },
    });
    cleanups.push(() => gateway.close());

    const provider = new ProviderClient({ baseUrl: simUrl, ...SIMULATOR_DEFAULT_CREDENTIALS });
    cleanups.push(() => provider.close());
    const native = await NativeConnection.connect({ address, ...tls, ...(token ? { apiKey: token.current() } : {}) });
    token?.onRenew((t) => native.setApiKey(t));
    cleanups.push(() => native.close());
    const [ourBundle, controlBundle] = await Promise.all([
      bundleOurWorkflows(),
      bundleWorkflowCode({
        workflowsPath: require.resolve('./control/workflows'),
        preloadModules: preloadWorkflowModules(require.resolve('./control/workflows')),
        failureConverterPath: FAILURE_CONVERTER_PATH,
        logger: quietLogger,
      }),
    ]);
    // Both sides versioned alike (Worker Deployment Versioning, as every mpf worker runs), each its
    // own deployment, made Current at start.
    const ours = await createMpfWorker({
      connection: native,
      namespace,
      taskQueue,
      keys,
      provider,
      workflowBundle: ourBundle,
      tuning: opts.tuning,
      versioning: { ...defaultVersioning(), promote: 'always' },
    });
    const controlVersion = await versionWorker(native, namespace, { deploymentName: 'mpf-bench-control', buildId: 'control', promote: 'always' }, 'mpf-bench');
    const theirs = await Worker.create({
      connection: native,
      namespace,
      taskQueue: controlQueue,
      workflowBundle: controlBundle,
      activities: controlActivities,
      dataConverter: workerDataConverter(keys),
      workerDeploymentOptions: controlVersion.workerDeploymentOptions,
      ...MPF_WORKER_TUNING,
      ...opts.tuning,
    });
    const { worker: equalWorker, equal } = await startEqualWork({ native, namespace, client, keys, simUrl, taskQueue: equalQueue, tuning: opts.tuning }, cleanups);
    for (const w of [ours, theirs, equalWorker]) {
      const running = w.run();
      cleanups.push(async () => {
        w.shutdown();
        await running;
      });
    }
    return {
      address,
      namespace,
      server,
      client,
      native,
      mpf,
      gateway,
      simUrl,
      control: createControlClient(simUrl),
      taskQueue,
      controlQueue,
      equal,
      equalQueue,
      keys,
      simulatorPid,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
