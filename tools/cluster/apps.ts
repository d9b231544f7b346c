/**
 * The app services, each started exactly as a user starts it — `node bin/mpf.cjs simulator |
 * worker | gateway …` from the project directory — and configured only by its environment
 * (topology.ts: the same variables compose sets, secrets through NAME_FILE), plus the image's
 * NODE_ENV=production. Nothing of our own environment leaks in but PATH and HOME.
 */
import path from 'node:path';
import { request } from 'undici';
import { releaseBuildId } from '../../src/temporal/deployment';
import { PROJECT_ROOT } from '../../src/temporal/provision';
import { Child, ChildExitedError } from './processes';
import { PortBook } from './ports';
import { files, type ClusterInfo } from './state';
import { appCommand, appEnvironment, IMAGE_ENV, SIMULATOR_PROVIDER, type AddressKey, type AppRole } from './topology';

export interface AppContext {
  secretsDir: string;
  /** The certificate directory (tls.ts): each app gets its own subdirectory, named as the app. */
  tlsDir: string;
  logDir: string;
  runId: string;
  /** Ports by component, the same again after a --keep-data restart (ports.ts). */
  ports: PortBook;
  /** The simulator's state file (it stands for a provider that persists). */
  simulatorStateFile: string;
}

export interface RunningApp {
  name: string;
  pid: number;
  child: Child;
  stop(): Promise<void>;
}

export interface RunningSimulator extends RunningApp {
  url: string;
  checkoutUrl: string;
}

export interface RunningGateway extends RunningApp {
  url: string;
  /** GET /metrics (GATEWAY_METRICS_ADDRESS). */
  metricsUrl: string;
}

export interface RunningWorker extends RunningApp {
  /** GET /metrics, /healthz, /readyz (WORKER_METRICS_ADDRESS). */
  metricsUrl: string;
}

/** The context to start one more app of a running cluster with (a replacement, a restart). */
export function appContextOf(info: ClusterInfo): AppContext {
  const f = files(info.stateDir);
  return { secretsDir: info.secretsDir, tlsDir: info.tlsDir, logDir: info.logDir, runId: info.runId, ports: new PortBook(f.ports, true), simulatorStateFile: f.simulatorState };
}

const LOOPBACK = '127.0.0.1';
const START_ATTEMPTS = 3;

function spawnApp(ctx: AppContext, name: string, role: AppRole, argv: string[], addresses: Partial<Record<AddressKey, string>>, extraEnv: Record<string, string> = {}): Child {
  const [node, ...args] = argv;
  if (node !== 'node') throw new Error(`${role}: its command does not start with node`);
  return new Child(name, process.execPath, args, {
    cwd: PROJECT_ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...IMAGE_ENV, ...appEnvironment(role, addresses, ctx.secretsDir, path.join(ctx.tlsDir, name)), ...extraEnv },
    logFile: path.join(ctx.logDir, `${name}.log`),
    runId: ctx.runId,
  });
}

/** Runs `start` again when the child lost a port it was given to another process (EADDRINUSE). */
async function withPortRetry<T>(child: (fresh: boolean) => Promise<{ child: Child; ready: Promise<T> }>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const started = await child(attempt > 1);
    try {
      return await started.ready;
    } catch (e) {
      await started.child.stop();
      if (e instanceof ChildExitedError && /EADDRINUSE|address already in use/i.test(started.child.log()) && attempt < START_ATTEMPTS) continue;
      throw e;
    }
  }
}

const READY_MS = 120_000;

export function startSimulator(ctx: AppContext): Promise<RunningSimulator> {
  return withPortRetry(async (fresh) => {
    const [port, checkoutPort] = (await ctx.ports.take('simulator', 2, { fresh })) as [number, number];
    const child = spawnApp(ctx, 'simulator', 'simulator', appCommand('simulator', { port, checkoutPort, host: LOOPBACK }), {
      checkoutPublicUrl: `http://${LOOPBACK}:${checkoutPort}`,
      // Its notifications go to the gateways on loopback, which it always may reach: no other host.
      notificationAllowHosts: '',
      simulatorStateFile: ctx.simulatorStateFile,
    });
    const ready = (async () => {
      const url = (await child.waitForLog(/listening on (http:\/\/\S+)/, READY_MS))[1] as string;
      const checkoutUrl = (await child.waitForLog(/checkout on (http:\/\/\S+)/, READY_MS))[1] as string;
      return { name: 'simulator', pid: child.pid, child, url, checkoutUrl, stop: () => child.stop() };
    })();
    return { child, ready };
  });
}

/**
 * The release (Worker Deployment Version build id) of every worker this process starts, fixed when
 * it starts the first one: a worker restarted after a commit in the checkout (a crash, the soak's
 * kills, `mpf cluster` supervising) stays in the version its flows are pinned to, instead of
 * registering a new version that is not Current and gets no flow. A new release is a new
 * `mpf cluster up` (docs/operations/upgrading.md).
 */
let workersBuildId: string | undefined;
const clusterBuildId = (): string => (workersBuildId ??= releaseBuildId());

export function startWorker(ctx: AppContext, name: string, o: { temporalAddress: string; providerBaseUrl: string; extraEnv?: Record<string, string> }): Promise<RunningWorker> {
  return withPortRetry(async (fresh) => {
    const metricsUrl = `http://${LOOPBACK}:${await ctx.ports.one(`${name}-metrics`, { fresh })}`;
    const child = spawnApp(ctx, name, 'worker', appCommand('worker'), {
      temporalAddress: o.temporalAddress,
      // The simulator on loopback, dialled directly: no forwarder is needed here (compose's worker has one).
      providerBaseUrl: o.providerBaseUrl,
      ...SIMULATOR_PROVIDER,
      workerMetricsAddress: metricsUrl.slice('http://'.length),
    }, { WORKER_BUILD_ID: clusterBuildId(), ...o.extraEnv });
    const ready = (async () => {
      await child.waitForLog(/polling task queue/, READY_MS);
      // compose's healthcheck: GET /readyz on the metrics port.
      await child.waitUntil(() => readyz(metricsUrl), READY_MS, 'ready (/readyz)');
      // Worker.run() drains in-flight tasks on SIGTERM; give it the time a container stop would.
      return { name, pid: child.pid, child, metricsUrl, stop: () => child.stop('SIGTERM', 15_000) };
    })();
    return { child, ready };
  });
}

async function readyz(url: string): Promise<boolean> {
  const res = await request(`${url}/readyz`, { headersTimeout: 2_000, bodyTimeout: 2_000 });
  await res.body.text();
  return res.statusCode === 200;
}

export function startGateway(
  ctx: AppContext,
  name: string,
  o: { temporalAddress: string; temporalWebOrigin: string; port?: number; extraEnv?: Record<string, string> },
): Promise<RunningGateway> {
  let first = true;
  return withPortRetry(async (fresh) => {
    const port = first && o.port ? o.port : await ctx.ports.one(name, { fresh });
    first = false;
    const url = `http://${LOOPBACK}:${port}`;
    const metricsUrl = `http://${LOOPBACK}:${await ctx.ports.one(`${name}-metrics`, { fresh })}`;
    const child = spawnApp(ctx, name, 'gateway', appCommand('gateway', { port, host: LOOPBACK }), {
      gatewayMetricsAddress: metricsUrl.slice('http://'.length),
      temporalAddress: o.temporalAddress,
      gatewayPort: String(port),
      gatewayHost: LOOPBACK,
      // Each replica is reached directly here; behind a load balancer both are the balancer's address.
      gatewayPublicUrl: url,
      gatewayNotificationBaseUrl: url,
      temporalWebOrigin: o.temporalWebOrigin,
    }, o.extraEnv);
    const ready = (async () => {
      const listening = (await child.waitForLog(/listening on (http:\/\/\S+)/, READY_MS))[1] as string;
      // compose's healthcheck: GET /readyz (Temporal answers and a worker polls the task queue).
      await child.waitUntil(() => readyz(listening), READY_MS, 'ready (/readyz)');
      return { name, pid: child.pid, child, url: listening, metricsUrl, stop: () => child.stop('SIGTERM', 10_000) };
    })();
    return { child, ready };
  });
}
