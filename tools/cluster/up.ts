/**
 * Starts the production topology natively, on 127.0.0.1, with compose's dependencies:
 *
 *   postgresql → temporal-schema (job) → temporal → temporal-namespace (job) ┐
 *                                                 → temporal-ui             ├→ workers, gateways
 *   simulator (depends on nothing)                                          ┘
 *
 * and stops it tier by tier in the reverse order (gateways, workers, simulator, temporal-ui,
 * temporal, postgresql). If a step fails, whatever had started is stopped before the error is
 * thrown: nothing is left behind.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { codecWebEndpoint } from '../../src/codec/codec-server';
import { provisionTemporalCli } from '../../src/temporal/provision';
import { CUSTOM_SEARCH_ATTRIBUTES } from '../../src/workflows/search-attributes';
import { startGateway, startSimulator, startWorker, type RunningGateway, type RunningWorker } from './apps';
import { runNamespaceJob, runSchemaJob } from './jobs';
import { startPostgres } from './postgres';
import { PortBook } from './ports';
import { isRunning, killGroup, processesOfRun, waitGroupGone, type Child } from './processes';
import { provisionCluster } from './provision';
import { prepareSecrets, secretsDir } from './secrets';
import { prepareTls, tlsDir } from './tls';
import { files, readInfo, runningUpPid, writeInfo, type ClusterInfo } from './state';
import { startTemporalServer } from './temporal-server';
import { HISTORY_SHARDS, NAMESPACE, NAMESPACE_RETENTION, TASK_QUEUE, temporalClientTlsEnv, tlsComponents, VERSIONS } from './topology';
import { startUi, type RunningUi } from './ui';

export interface ClusterOptions {
  stateDir: string;
  workers: number;
  gateways: number;
  /** Keep PostgreSQL's data (and the secrets that go with it) across runs. */
  keepData: boolean;
  /** One progress line per step. */
  say: (line: string) => void;
  /** Checked between steps: a Ctrl-C while starting stops what has started. */
  aborted?: () => boolean;
  /** Flow settings given to every worker and gateway (`mpf cluster up --app-env NAME=VALUE`, topology.ts FLOW_SETTINGS). */
  appEnv?: Record<string, string>;
}

export interface RunningCluster {
  info: ClusterInfo;
  /** Every long-running child, in start order (for monitoring); a restart replaces its entry. */
  children: Array<{ name: string; child: Child }>;
  /** Starts a component again, as it was started (same ports, certificate, environment). */
  restart(name: string): Promise<Child>;
  stop(): Promise<void>;
}

/** A running component: its process, how to stop it, and how to start it again. */
interface Component {
  child: Child;
  stop(): Promise<void>;
  restart(): Promise<{ child: Child; stop(): Promise<void> }>;
}

export class ClusterStartAborted extends Error {
  override name = 'ClusterStartAborted';
}

export class ClusterAlreadyRunning extends Error {
  override name = 'ClusterAlreadyRunning';
}

const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** PostgreSQL's postmaster is stopped with SIGINT (its "fast" shutdown: no crash recovery on the next start). */
function isPostmaster(pid: number): boolean {
  try {
    return fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres' && fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes('-D');
  } catch {
    return false;
  }
}

/** The postmaster running on this state dir's data directory (postmaster.pid), whoever started it. */
function postmasterOf(dataDir: string | undefined): number | undefined {
  if (!dataDir) return undefined;
  try {
    const pid = Number(fs.readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 && isRunning(pid) && isPostmaster(pid) ? pid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Stops what runs on this state dir without a running `up`: the processes a previous `up` left
 * (it was SIGKILLed, say; each carries the run's marker, including a component `up` restarted),
 * and a PostgreSQL an operator started by hand on its data directory. Gracefully first (SIGTERM;
 * SIGINT for PostgreSQL, so its next start needs no crash recovery), SIGKILL after 10 s.
 */
export async function cleanLeftovers(stateDir: string, say: (line: string) => void): Promise<number> {
  const prev = readInfo(stateDir);
  const ofRun = prev?.runId ? processesOfRun(prev.runId) : [];
  const postmaster = postmasterOf(prev?.postgres?.dataDir);
  const pids = [...new Set([...ofRun, ...(postmaster ? [postmaster] : [])])];
  if (pids.length === 0) return 0;
  say(`stopping ${pids.length} process(es) left running on ${stateDir}${prev?.runId ? ` (run ${prev.runId})` : ''}: ${pids.join(', ')}`);
  const signalOf = (pid: number): NodeJS.Signals => (isPostmaster(pid) ? 'SIGINT' : 'SIGTERM');
  for (const pid of pids) {
    const sig = signalOf(pid);
    if (sig === 'SIGTERM') killGroup(pid, sig);
    try {
      process.kill(pid, sig);
    } catch {
      // gone
    }
  }
  const alive = () => pids.filter((p) => isRunning(p));
  const deadline = Date.now() + 10_000;
  while (alive().length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  for (const pid of [...alive(), ...(prev?.runId ? processesOfRun(prev.runId) : [])]) {
    killGroup(pid, 'SIGKILL');
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  for (const pid of pids) await waitGroupGone(pid, 2_000);
  return pids.length;
}

export async function startCluster(o: ClusterOptions): Promise<RunningCluster> {
  const stateDir = path.resolve(o.stateDir);
  fs.mkdirSync(stateDir, { recursive: true });
  const f = files(stateDir);
  const other = runningUpPid(stateDir);
  if (other !== undefined && other !== process.pid) {
    throw new ClusterAlreadyRunning(`a cluster is already running from ${stateDir} (mpf cluster up, pid ${other}); stop it with: mpf cluster down --state-dir ${stateDir}`);
  }
  await cleanLeftovers(stateDir, o.say);
  fs.mkdirSync(f.logs, { recursive: true, mode: 0o700 });
  fs.writeFileSync(f.pid, `${process.pid}\n`);

  const runId = randomUUID();
  const info: ClusterInfo = {
    runId,
    status: 'starting',
    pid: process.pid,
    stateDir,
    startedAt: new Date().toISOString(),
    keepData: o.keepData,
    gateways: [],
    workers: [],
    secretsDir: secretsDir(stateDir),
    tlsDir: tlsDir(stateDir),
    envFile: f.env,
    logDir: f.logs,
  };
  writeInfo(info);

  // Each tier (all gateways, all workers together) is stopped in the reverse of compose's order,
  // whatever order they happened to become ready in.
  const STOP_RANK = ['postgresql', 'temporal', 'temporal-ui', 'simulator', 'workers', 'gateways'] as const;
  const tiers = new Map<(typeof STOP_RANK)[number], string[]>();
  const running = new Map<string, Component>();
  const children: RunningCluster['children'] = [];
  /** Registers a started component: stopped with its tier, restartable, its command line in cluster.json. */
  const register = (tier: (typeof STOP_RANK)[number], name: string, c: Component): void => {
    running.set(name, c);
    tiers.set(tier, [...(tiers.get(tier) ?? []).filter((n) => n !== name), name]);
    const i = children.findIndex((x) => x.name === name);
    if (i >= 0) children[i] = { name, child: c.child };
    else children.push({ name, child: c.child });
    (info.components ??= {})[name] = { pid: c.child.pid, command: [c.child.command, ...c.child.args], log: c.child.opts.logFile };
  };
  const restart = async (name: string): Promise<Child> => {
    const c = running.get(name);
    if (!c) throw new Error(`no component ${name} (one of: ${[...running.keys()].join(', ')})`);
    const tier = [...tiers].find(([, names]) => names.includes(name))![0];
    if (c.child.running) await c.stop();
    const next = await c.restart();
    register(tier, name, { ...next, restart: c.restart });
    const pid = next.child.pid;
    for (const w of info.workers) if (w.name === name) w.pid = pid;
    for (const g of info.gateways) if (g.name === name) g.pid = pid;
    if (name === 'simulator' && info.simulator) info.simulator.pid = pid;
    if (name === 'postgresql' && info.postgres) info.postgres.pid = pid;
    if (name === 'temporal' && info.temporal) info.temporal.pid = pid;
    if (name === 'temporal-ui' && info.ui) info.ui.pid = pid;
    writeInfo(info);
    return next.child;
  };
  let postgresRoot: string | undefined;
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    info.status = 'stopping';
    writeInfo(info);
    for (const name of [...STOP_RANK].reverse()) {
      const names = tiers.get(name);
      if (!names) continue;
      const t0 = Date.now();
      try {
        await Promise.all(names.map((n) => running.get(n)?.stop()));
        o.say(`stopped ${name} (${secs(Date.now() - t0)})`);
      } catch (e) {
        o.say(`stopping ${name}: ${(e as Error).message}`);
      }
    }
    // Anything of this run still running (it should not be): kill it.
    for (const pid of processesOfRun(runId)) killGroup(pid, 'SIGKILL');
    if (!o.keepData) {
      // The database goes, and so do the secrets and the config files that hold them.
      const t0 = Date.now();
      if (postgresRoot) fs.rmSync(postgresRoot, { recursive: true, force: true });
      for (const dir of [secretsDir(stateDir), tlsDir(stateDir), path.join(stateDir, 'temporal'), path.join(stateDir, 'ui'), path.dirname(f.simulatorState)]) fs.rmSync(dir, { recursive: true, force: true });
      for (const file of [f.env, f.ports]) fs.rmSync(file, { force: true });
      o.say(`removed the database, the simulator's records, the secrets, the certificates, the ports and the config files (${secs(Date.now() - t0)}; --keep-data keeps them)`);
    }
    info.status = 'stopped';
    writeInfo(info);
    fs.rmSync(f.pid, { force: true });
  };

  const step = async <T>(label: string, run: () => Promise<T>, describe: (r: T) => string): Promise<T> => {
    if (o.aborted?.()) throw new ClusterStartAborted('interrupted while starting');
    const t0 = Date.now();
    const r = await run();
    o.say(`${label.padEnd(19)} ${describe(r)} (${secs(Date.now() - t0)})`);
    return r;
  };
  const ctxFor = { logDir: f.logs, runId };
  /** Steps run in parallel: every one is awaited (and what it started registered) before a failure is thrown. */
  const pending: Array<Promise<unknown>> = [];
  const parallel = <T>(p: Promise<T>): Promise<T> => {
    pending.push(p.catch(() => undefined));
    return p;
  };

  try {
    const bins = await step('binaries', async () => ({ ...provisionCluster(), temporalCli: provisionTemporalCli() }), (b) =>
      `temporal-server ${VERSIONS.temporalServer}, temporal-sql-tool, temporal-ui-server ${VERSIONS.temporalUi}, Temporal CLI, PostgreSQL from ${b.pgBinDir}`);
    const secrets = prepareSecrets(stateDir, o.keepData);
    const names = (n: number, role: string) => Array.from({ length: n }, (_, i) => `${role}-${i + 1}`);
    const tls = await step(
      'certificates',
      () => prepareTls(stateDir, tlsComponents({ workers: names(o.workers, 'worker'), gateways: names(o.gateways, 'gateway') }), o.keepData, ctxFor),
      (t) => `private CA and ${t.issued.length} new certificate(s) in ${t.dir} (openssl; frontend and internode mTLS, one client certificate per process)`,
    );
    const ports = new PortBook(f.ports, o.keepData, o.say);
    const appCtx = { secretsDir: secretsDir(stateDir), tlsDir: tls.dir, ports, simulatorStateFile: f.simulatorState, ...ctxFor };
    const operatorTls = path.join(tls.dir, 'operator');

    // The simulator depends on nothing (as in compose): it starts beside the database chain.
    const simulator = parallel(
      step('simulator', () => startSimulator(appCtx), (s) => `API ${s.url}, checkout ${s.checkoutUrl} (pid ${s.pid})`).then((sim) => {
        register('simulator', 'simulator', { child: sim.child, stop: sim.stop, restart: () => startSimulator(appCtx) });
        info.simulator = { url: sim.url, checkoutUrl: sim.checkoutUrl, pid: sim.pid };
        return sim;
      }),
    );

    const pg = await step(
      'postgresql',
      () => startPostgres({ binDir: bins.pgBinDir, stateDir, logDir: f.logs, password: secrets.postgres_password, keepData: o.keepData, runId, ports }),
      (p) => `127.0.0.1:${p.port} (pid ${p.pid}, as user ${p.user}, data ${p.dataDir})`,
    );
    postgresRoot = pg.root;
    // A restart never wipes the data: the database of this run is kept whatever --keep-data says.
    register('postgresql', 'postgresql', {
      child: pg.child,
      stop: pg.stop,
      restart: () => startPostgres({ binDir: bins.pgBinDir, stateDir, logDir: f.logs, password: secrets.postgres_password, keepData: true, runId, ports }),
    });
    info.postgres = { host: pg.host, port: pg.port, pid: pg.pid, dataDir: pg.dataDir, user: pg.user, binDir: bins.pgBinDir };
    writeInfo(info);

    await step(
      'temporal-schema',
      () => runSchemaJob({ sqlTool: bins.sqlTool, schemaDir: bins.schemaDir, host: pg.host, port: pg.port, password: secrets.postgres_password, ...ctxFor }),
      () => 'databases temporal and temporal_visibility created and on the latest schema',
    );

    const temporalOpts = { binary: bins.temporalServer, stateDir, logDir: f.logs, postgres: { host: pg.host, port: pg.port, password: secrets.postgres_password }, runId, tlsDir: tls.dir, ports };
    const temporal = await step(
      'temporal',
      () => startTemporalServer(temporalOpts),
      (t) => `gRPC ${t.address} (pid ${t.pid}, ${HISTORY_SHARDS} history shards, persistence and visibility on PostgreSQL, mTLS: client certificates required)`,
    );
    register('temporal', 'temporal', { child: temporal.child, stop: temporal.stop, restart: () => startTemporalServer(temporalOpts) });
    info.temporal = {
      address: temporal.address, httpAddress: temporal.httpAddress, pid: temporal.pid, namespace: NAMESPACE, taskQueue: TASK_QUEUE,
      historyShards: HISTORY_SHARDS, version: VERSIONS.temporalServer,
    };
    writeInfo(info);

    // Temporal Web needs only the server (as in compose), so it starts beside the namespace job.
    // It decodes through gateway-1's codec endpoint: that gateway's port is chosen now.
    const gw1Port = await ports.one('gateway-1');
    const codecFor = (gatewayUrl: string) => codecWebEndpoint(gatewayUrl, secrets.codec_auth_token);
    let ui: RunningUi | undefined;
    let codecEndpoint = codecFor(`http://127.0.0.1:${gw1Port}`);
    const uiOpts = () => ({ binary: bins.uiServer, stateDir, logDir: f.logs, runId, temporalAddress: temporal.address, codecEndpoint, tlsDir: path.join(tls.dir, 'temporal-ui'), ports, ...(ui ? { port: ui.port } : {}) });
    const registerUi = (u: RunningUi): void => {
      ui = u;
      register('temporal-ui', 'temporal-ui', { child: u.child, stop: u.stop, restart: () => startUi(uiOpts()) });
    };
    const uiStarted = parallel(
      step('temporal-ui', () => startUi(uiOpts()), (u) => `${u.url} (pid ${u.pid}, codec endpoint on gateway-1)`).then((u) => {
        registerUi(u);
        return u;
      }),
    );
    const namespaceJobDone = parallel(
      step(
        'temporal-namespace',
        () => runNamespaceJob({ temporalCli: bins.temporalCli, address: temporal.address, tlsEnv: temporalClientTlsEnv(operatorTls), ...ctxFor }),
        () => `namespace ${NAMESPACE} (retention ${NAMESPACE_RETENTION}), search attributes ${Object.keys(CUSTOM_SEARCH_ATTRIBUTES).join(', ')}`,
      ),
    );
    await Promise.all(pending);
    const [sim, firstUi] = await Promise.all([simulator, uiStarted, namespaceJobDone]);
    ui = firstUi;
    info.ui = { url: ui.url, pid: ui.pid, version: VERSIONS.temporalUi };
    writeInfo(info);

    // Workers and gateways, all at once (compose starts them together once their dependencies are up).
    const started = await step(
      'workers, gateways',
      async () => {
        const workerOpts = { temporalAddress: temporal.address, providerBaseUrl: sim.url, ...(o.appEnv ? { extraEnv: o.appEnv } : {}) };
        const gatewayOpts = (port?: number) => ({ temporalAddress: temporal.address, temporalWebOrigin: firstUi.url, ...(port ? { port } : {}), ...(o.appEnv ? { extraEnv: o.appEnv } : {}) });
        const workerJobs = Array.from({ length: o.workers }, (_, i) => startWorker(appCtx, `worker-${i + 1}`, workerOpts));
        const gatewayJobs = Array.from({ length: o.gateways }, (_, i) => startGateway(appCtx, `gateway-${i + 1}`, gatewayOpts(i === 0 ? gw1Port : undefined)));
        const [w, g] = await Promise.all([Promise.allSettled(workerJobs), Promise.allSettled(gatewayJobs)]);
        const workers = w.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
        const gateways = g.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
        for (const x of workers) register('workers', x.name, { child: x.child, stop: x.stop, restart: () => startWorker(appCtx, x.name, workerOpts) });
        // A gateway comes back on its own port: the notification URLs the provider holds point at it.
        for (const x of gateways) register('gateways', x.name, { child: x.child, stop: x.stop, restart: () => startGateway(appCtx, x.name, gatewayOpts(Number(new URL(x.url).port))) });
        const failed = [...w, ...g].find((r) => r.status === 'rejected');
        if (failed) throw failed.reason;
        return { workers, gateways };
      },
      (r) => `${r.workers.length} worker(s) polling ${TASK_QUEUE}, ${r.gateways.length} gateway(s) ready`,
    );
    const workers: RunningWorker[] = started.workers;
    const gateways: RunningGateway[] = started.gateways;

    // gateway-1 lost the port chosen for it to another process: Temporal Web must follow it.
    const gw1 = gateways[0];
    if (gw1 && gw1.url !== `http://127.0.0.1:${gw1Port}`) {
      await ui.stop();
      codecEndpoint = codecFor(gw1.url);
      registerUi(await startUi(uiOpts()));
      info.ui = { url: ui.url, pid: ui.pid, version: VERSIONS.temporalUi };
    }

    info.workers = workers.map((w) => ({ name: w.name, pid: w.pid, metricsUrl: w.metricsUrl }));
    info.gateways = gateways.map((g) => ({ name: g.name, url: g.url, pid: g.pid, metricsUrl: g.metricsUrl }));
    writeClientEnv(info);
    info.status = 'ready';
    writeInfo(info);
    return { info, children, stop, restart };
  } catch (e) {
    // Steps still running in parallel register what they start; wait for them, then stop it all.
    await Promise.all(pending);
    await stop();
    info.status = 'failed';
    writeInfo(info);
    throw e;
  }
}

/**
 * cluster.env: what a shell needs to use the cluster with `mpf` and `temporal` (addresses, NAME_FILE
 * paths and the operator's certificate paths only).
 */
function writeClientEnv(info: ClusterInfo): void {
  const s = (name: string) => path.join(info.secretsDir, name);
  const tls = Object.entries(temporalClientTlsEnv(path.join(info.tlsDir, 'operator'))).map(([k, v]) => `${k}=${v}`);
  const lines = [
    '# mpf cluster: client settings of the running topology. No secret values: secrets are NAME_FILE paths.',
    '#   set -a; . ' + info.envFile + '; set +a',
    `TEMPORAL_ADDRESS=${info.temporal?.address ?? ''}`,
    "# The operator's client certificate: the frontend accepts only certificates of the cluster's CA (mpf and temporal read these).",
    ...tls,
    `TEMPORAL_NAMESPACE=${NAMESPACE}`,
    `TEMPORAL_TASK_QUEUE=${TASK_QUEUE}`,
    `TEMPORAL_UI_URL=${info.ui?.url ?? ''}`,
    `PAYLOAD_ENCRYPTION_KEYS_FILE=${s('payload_encryption_keys')}`,
    `GATEWAY_PUBLIC_URL=${info.gateways[0]?.url ?? ''}`,
    `GATEWAY_API_KEY_FILE=${s('gateway_api_key')}`,
    `CODEC_AUTH_TOKEN_FILE=${s('codec_auth_token')}`,
    `# gateways: ${info.gateways.map((g) => g.url).join(' ')}`,
    // `mpf sim pay|notify` (the simulator stands for the provider; checkout ${info.simulator?.checkoutUrl ?? ''}).
    `MPF_SIMULATOR_URL=${info.simulator?.url ?? ''}`,
    // The provisioned Temporal CLI first on PATH, for `temporal workflow …` as the runbook writes it.
    `PATH=${path.dirname(provisionTemporalCliOrEmpty())}:$PATH`,
  ];
  fs.writeFileSync(info.envFile, `${lines.join('\n')}\n`, { mode: 0o600 });
}

/** The provisioned Temporal CLI (its path), or '.' when it cannot be provisioned (PATH is then unchanged in effect). */
function provisionTemporalCliOrEmpty(): string {
  try {
    return provisionTemporalCli();
  } catch {
    return './temporal';
  }
}
