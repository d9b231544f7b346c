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
import { startGateway, startSimulator, startWorker, type AppContext, type RunningGateway, type RunningSimulator, type RunningWorker } from './apps';
import { startPersonCodec, type RunningPersonCodec } from './codec';
import { DEFAULT_IDP_TTL, IDP_PEOPLE, idpSecretFiles, PERMISSIONS_CLAIM, prepareIdpSecrets, startIdp, TEMPORAL_AUDIENCE, UI_CLIENT_ID, type IdpSecrets, type IdpTtl, type MachineClientId, type RunningIdp } from './idp';
import { tokenFile } from './login';
import { renewingToken, type RenewingToken } from '../../src/temporal/tokens';
import { runNamespaceJob, runSchemaJob } from './jobs';
import { startPostgres, type RunningPostgres } from './postgres';
import { PortBook } from './ports';
import { isRunning, killGroup, processesOfRun, waitGroupGone, type Child } from './processes';
import { provisionCluster, type ClusterBinaries } from './provision';
import { prepareSecrets, secretsDir, type Secrets } from './secrets';
import { clientTls, prepareTls, tlsDir } from './tls';
import { files, readInfo, runningUpPid, writeInfo, type ClusterInfo } from './state';
import { startTemporalServer, type RunningTemporalServer, type TemporalAuth } from './temporal-server';
import { apiKeyFile, HISTORY_SHARDS, KEYRING_FILE, NAMESPACE, NAMESPACE_RETENTION, SECRET_FILES, TASK_QUEUE, temporalClientTlsEnv, tlsComponents, VERSIONS } from './topology';
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
  /** Token lifetimes of the identity provider (short ones test renewal). */
  idpTtl?: IdpTtl;
  /**
   * The Temporal API authorises every call by the IdP's JWTs (workers and gateways fetch and renew
   * theirs, people sign in to Temporal Web and the operator's shell). On unless `false`
   * (`MPF_CLUSTER_AUTH=0`): then any certificate of the cluster's CA may do anything.
   */
  auth?: boolean;
  /** The namespace's retention (`MPF_NAMESPACE_RETENTION`; default topology's NAMESPACE_RETENTION). */
  retention?: string;
}

export interface RunningCluster {
  info: ClusterInfo;
  /** Every long-running child, in start order (for monitoring); a restart replaces its entry. */
  children: Array<{ name: string; child: Child }>;
  /** Starts a component again, as it was started (same ports, certificate, environment). */
  restart(name: string): Promise<Child>;
  /**
   * With authorisation on: the admin tools' token (client credentials of `mpf-admin-tools`, renewed
   * until stop), for the harnesses that drive the topology as its operator (the soak, the bench),
   * and the token settings of each machine client, for one more worker or gateway started beside
   * the cluster's.
   */
  auth?: { adminToken: RenewingToken; clientEnv(client: MachineClientId): Record<string, string> };
  /** How a harness connects to the Temporal API as the operator: the operator's certificate, and with authorisation the admin tools' token. */
  operatorConnection(): { tls: ReturnType<typeof clientTls>; apiKey?: () => string };
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

/**
 * Starts the topology, step by step, each component registered (to be stopped with its tier and
 * restarted as it was) as it starts. If a step fails, whatever had started is stopped before the
 * error is thrown.
 */
export async function startCluster(o: ClusterOptions): Promise<RunningCluster> {
  const run = await beginRun(o);
  const { info } = run;
  const stop = (): Promise<void> => stopRun(run);
  try {
    const base = await prepareRun(run);
    // The simulator depends on nothing (as in compose): it starts beside the database chain.
    const simulator = run.parallel(startSimulatorComponent(run, base));
    // So does the identity provider.
    const idp = run.parallel(startIdpComponent(run, base));
    const pg = await startPostgresComponent(run, base);
    await run.step(
      'temporal-schema',
      () => runSchemaJob({ sqlTool: base.bins.sqlTool, schemaDir: base.bins.schemaDir, host: pg.host, port: pg.port, password: base.secrets.postgres_password, ...run.ctx }),
      () => 'databases temporal and temporal_visibility created and on the latest schema',
    );
    // With authorisation on, the server reads the IdP's keys as it starts: the IdP is up first.
    if (o.auth !== false) await clusterAuth(run, base, await idp);
    const temporal = await startTemporalComponent(run, base, pg);
    // Temporal Web needs only the server (as in compose), so it starts beside the namespace job.
    const ui = await startUiComponent(run, base, temporal.address);
    const namespaceJobDone = run.parallel(runNamespaceStep(run, base, temporal.address));
    await Promise.all(run.pending);
    const [sim, firstUi] = await Promise.all([simulator, ui.started, namespaceJobDone, idp]);
    info.ui = { url: firstUi.url, pid: firstUi.pid, version: VERSIONS.temporalUi };
    writeInfo(info);

    const { workers, gateways } = await startApps(run, base, { temporalAddress: temporal.address, providerBaseUrl: sim.url, temporalWebOrigin: firstUi.url, gw1Port: ui.gw1Port });
    const finalUi = await ui.followGateway1(gateways[0]);
    info.ui = { url: finalUi.url, pid: finalUi.pid, version: VERSIONS.temporalUi };
    info.workers = workers.map((w) => ({ name: w.name, pid: w.pid, metricsUrl: w.metricsUrl }));
    info.gateways = gateways.map((g) => ({ name: g.name, url: g.url, pid: g.pid, metricsUrl: g.metricsUrl }));
    writeClientEnv(info);
    info.status = 'ready';
    writeInfo(info);
    const auth = run.auth ? { adminToken: run.auth.adminToken, clientEnv: run.auth.clientEnv } : undefined;
    const operatorConnection = () => ({ tls: clientTls(path.join(info.tlsDir, 'operator')), ...(auth ? { apiKey: () => auth.adminToken.current() } : {}) });
    return { info, children: run.components.children, stop, restart: (name) => run.components.restart(name), ...(auth ? { auth } : {}), operatorConnection };
  } catch (e) {
    // Steps still running in parallel register what they start; wait for them, then stop it all.
    await Promise.all(run.pending);
    await stop();
    info.status = 'failed';
    writeInfo(info);
    throw e;
  }
}

/** Each tier (all gateways, all workers together) is stopped in the reverse of compose's order, whatever order they happened to become ready in. */
const STOP_RANK = ['postgresql', 'idp', 'codec', 'temporal', 'temporal-ui', 'simulator', 'workers', 'gateways'] as const;
type Tier = (typeof STOP_RANK)[number];

/**
 * The components of one run, as they started: stopped tier by tier in the reverse of compose's
 * order, each restartable as it was started, each one's command line in cluster.json.
 */
class Components {
  private readonly tiers = new Map<Tier, string[]>();
  private readonly running = new Map<string, Component>();
  /** Every long-running child, in start order; a restart replaces its entry. */
  readonly children: RunningCluster['children'] = [];

  constructor(private readonly info: ClusterInfo) {}

  /** Registers a started component: stopped with its tier, restartable, its command line in cluster.json. */
  register(tier: Tier, name: string, c: Component): void {
    this.running.set(name, c);
    this.tiers.set(tier, [...(this.tiers.get(tier) ?? []).filter((n) => n !== name), name]);
    const i = this.children.findIndex((x) => x.name === name);
    if (i >= 0) this.children[i] = { name, child: c.child };
    else this.children.push({ name, child: c.child });
    (this.info.components ??= {})[name] = { pid: c.child.pid, command: [c.child.command, ...c.child.args], log: c.child.opts.logFile };
  }

  async restart(name: string): Promise<Child> {
    const info = this.info;
    const c = this.running.get(name);
    if (!c) throw new Error(`no component ${name} (one of: ${[...this.running.keys()].join(', ')})`);
    const tier = [...this.tiers].find(([, names]) => names.includes(name))![0];
    if (c.child.running) await c.stop();
    const next = await c.restart();
    this.register(tier, name, { ...next, restart: c.restart });
    const pid = next.child.pid;
    for (const w of info.workers) if (w.name === name) w.pid = pid;
    for (const g of info.gateways) if (g.name === name) g.pid = pid;
    if (name === 'simulator' && info.simulator) info.simulator.pid = pid;
    if (name === 'postgresql' && info.postgres) info.postgres.pid = pid;
    if (name === 'temporal' && info.temporal) info.temporal.pid = pid;
    if (name === 'temporal-ui' && info.ui) info.ui.pid = pid;
    if (name === 'idp' && info.idp) info.idp.pid = pid;
    if (name === 'codec' && info.codec) info.codec.pid = pid;
    writeInfo(info);
    return next.child;
  }

  /** Stops every tier, the last to start first; a tier that fails to stop is reported, not thrown. */
  async stopAll(say: (line: string) => void): Promise<void> {
    for (const tier of [...STOP_RANK].reverse()) {
      const names = this.tiers.get(tier);
      if (!names) continue;
      const t0 = Date.now();
      try {
        await Promise.all(names.map((n) => this.running.get(n)?.stop()));
        say(`stopped ${tier} (${secs(Date.now() - t0)})`);
      } catch (e) {
        say(`stopping ${tier}: ${(e as Error).message}`);
      }
    }
  }
}

/** One run of `startCluster`: its state dir, its components, and how its steps are timed and awaited. */
interface Run {
  o: ClusterOptions;
  stateDir: string;
  f: ReturnType<typeof files>;
  runId: string;
  info: ClusterInfo;
  components: Components;
  /** What every job and process of the run is given: its log dir and the run's marker. */
  ctx: { logDir: string; runId: string };
  /** PostgreSQL's root (its data), once it started: removed on stop without --keep-data. */
  postgresRoot?: string;
  /** With authorisation on: what the server checks, the admin tools' token, each machine client's settings. */
  auth?: { temporal: TemporalAuth; adminToken: RenewingToken; clientEnv(client: MachineClientId): Record<string, string> };
  stopped: boolean;
  /** Steps running in parallel: every one is awaited (and what it started registered) before a failure is thrown. */
  pending: Array<Promise<unknown>>;
  parallel<T>(p: Promise<T>): Promise<T>;
  /** Runs a step unless the start was aborted, and prints its line with how long it took. */
  step<T>(label: string, run: () => Promise<T>, describe: (r: T) => string): Promise<T>;
}

/** Claims the state dir (no other `up` on it, leftovers stopped), and writes the run's pid file and cluster.json. */
async function beginRun(o: ClusterOptions): Promise<Run> {
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
  const pending: Array<Promise<unknown>> = [];
  return {
    o,
    stateDir,
    f,
    runId,
    info,
    components: new Components(info),
    ctx: { logDir: f.logs, runId },
    stopped: false,
    pending,
    parallel: <T>(p: Promise<T>): Promise<T> => {
      pending.push(p.catch(() => undefined));
      return p;
    },
    step: async <T>(label: string, run: () => Promise<T>, describe: (r: T) => string): Promise<T> => {
      if (o.aborted?.()) throw new ClusterStartAborted('interrupted while starting');
      const t0 = Date.now();
      const r = await run();
      o.say(`${label.padEnd(19)} ${describe(r)} (${secs(Date.now() - t0)})`);
      return r;
    },
  };
}

/**
 * Stops the run once: its tiers, anything of it still running, and without --keep-data the
 * database, the secrets and the config files that hold them.
 */
async function stopRun(run: Run): Promise<void> {
  const { o, info, f, stateDir } = run;
  if (run.stopped) return;
  run.stopped = true;
  info.status = 'stopping';
  writeInfo(info);
  run.auth?.adminToken.stop();
  await run.components.stopAll(o.say);
  // Anything of this run still running (it should not be): kill it.
  for (const pid of processesOfRun(run.runId)) killGroup(pid, 'SIGKILL');
  if (!o.keepData) {
    // The database goes, and so do the secrets and the config files that hold them.
    const t0 = Date.now();
    if (run.postgresRoot) fs.rmSync(run.postgresRoot, { recursive: true, force: true });
    for (const dir of [secretsDir(stateDir), tlsDir(stateDir), path.join(stateDir, 'temporal'), path.join(stateDir, 'ui'), path.join(stateDir, 'idp'), path.join(stateDir, 'tokens'), path.dirname(f.simulatorState)]) fs.rmSync(dir, { recursive: true, force: true });
    for (const file of [f.env, f.ports]) fs.rmSync(file, { force: true });
    o.say(`removed the database, the simulator's records, the secrets, the certificates, people's tokens, the ports and the config files (${secs(Date.now() - t0)}; --keep-data keeps them)`);
  }
  info.status = 'stopped';
  writeInfo(info);
  fs.rmSync(f.pid, { force: true });
}

/** What every component of the run is started with: binaries, secrets, certificates, ports. */
interface RunBase {
  bins: ClusterBinaries & { temporalCli: string };
  secrets: Secrets;
  idpSecrets: IdpSecrets;
  tls: { dir: string; issued: string[] };
  ports: PortBook;
  appCtx: AppContext;
}

/** The binaries (provisioned once), the secrets and the certificates (kept with --keep-data), the port book. */
async function prepareRun(run: Run): Promise<RunBase> {
  const { o, stateDir, f } = run;
  const bins = await run.step('binaries', async () => ({ ...provisionCluster(), temporalCli: provisionTemporalCli() }), (b) =>
    `temporal-server ${VERSIONS.temporalServer}, temporal-sql-tool, temporal-ui-server ${VERSIONS.temporalUi}, Temporal CLI, PostgreSQL from ${b.pgBinDir}`);
  const secrets = prepareSecrets(stateDir, o.keepData);
  const idpSecrets = prepareIdpSecrets(secretsDir(stateDir), o.keepData);
  const names = (n: number, role: string) => Array.from({ length: n }, (_, i) => `${role}-${i + 1}`);
  const tls = await run.step(
    'certificates',
    () => prepareTls(stateDir, tlsComponents({ workers: names(o.workers, 'worker'), gateways: names(o.gateways, 'gateway') }), o.keepData, run.ctx),
    (t) => `private CA and ${t.issued.length} new certificate(s) in ${t.dir} (openssl; frontend and internode mTLS, one client certificate per process)`,
  );
  const ports = new PortBook(f.ports, o.keepData, o.say);
  const appCtx: AppContext = { secretsDir: secretsDir(stateDir), tlsDir: tls.dir, ports, simulatorStateFile: f.simulatorState, ...run.ctx };
  return { bins, secrets, idpSecrets, tls, ports, appCtx };
}

/** The provider simulator (it depends on nothing). */
async function startSimulatorComponent(run: Run, base: RunBase): Promise<RunningSimulator> {
  const sim = await run.step('simulator', () => startSimulator(base.appCtx), (s) => `API ${s.url}, checkout ${s.checkoutUrl} (pid ${s.pid})`);
  run.components.register('simulator', 'simulator', { child: sim.child, stop: sim.stop, restart: () => startSimulator(base.appCtx) });
  run.info.simulator = { url: sim.url, checkoutUrl: sim.checkoutUrl, pid: sim.pid };
  return sim;
}

/**
 * Authorisation by the IdP's tokens: what the Temporal server checks (its JWKS, the audience, the
 * claim), the admin tools' token (readiness checks, the namespace job), and the settings each
 * machine client is started with (it fetches and renews its own tokens).
 */
async function clusterAuth(run: Run, base: RunBase, idp: RunningIdp): Promise<void> {
  const adminToken = await renewingToken({ issuer: idp.issuer, clientId: 'mpf-admin-tools', clientSecret: base.idpSecrets.clientSecrets['mpf-admin-tools'], audience: TEMPORAL_AUDIENCE });
  run.auth = {
    temporal: { jwksUrl: idp.jwksUrl, audience: TEMPORAL_AUDIENCE, permissionsClaimName: PERMISSIONS_CLAIM, token: () => adminToken.current() },
    adminToken,
    clientEnv: (client) => ({
      TEMPORAL_OIDC_ISSUER: idp.issuer,
      TEMPORAL_OIDC_CLIENT_ID: client,
      TEMPORAL_OIDC_CLIENT_SECRET_FILE: path.join(secretsDir(run.stateDir), idpSecretFiles.clientSecret(client)),
      TEMPORAL_OIDC_AUDIENCE: TEMPORAL_AUDIENCE,
      // The gateways also take people's access tokens on their operator routes and /codec.
      ...(client === 'mpf-gateway' ? { GATEWAY_OIDC_ISSUER: idp.issuer, GATEWAY_OIDC_AUDIENCE: TEMPORAL_AUDIENCE } : {}),
    }),
  };
  run.info.auth = true;
  writeInfo(run.info);
}

/**
 * The identity provider (it depends on nothing). Temporal Web's callback URL names the port
 * Temporal Web will take (the port book gives it the same one when it starts).
 */
async function startIdpComponent(run: Run, base: RunBase): Promise<RunningIdp> {
  const uiPort = await base.ports.one('temporal-ui');
  const idpOpts = {
    stateDir: run.stateDir, logDir: run.f.logs, runId: run.runId, secrets: base.idpSecrets, ttl: run.o.idpTtl ?? DEFAULT_IDP_TTL, ports: base.ports,
    uiCallbackUrls: [`http://127.0.0.1:${uiPort}/auth/sso/callback`],
  };
  const idp = await run.step('idp', () => startIdp(idpOpts), (i) => `${i.issuer} (pid ${i.pid}, node-oidc-provider: ${IDP_PEOPLE.length} people, 3 machine clients, JWT access tokens for the Temporal API)`);
  run.components.register('idp', 'idp', { child: idp.child, stop: idp.stop, restart: () => startIdp(idpOpts) });
  run.info.idp = { issuer: idp.issuer, pid: idp.pid, jwksUrl: idp.jwksUrl, tokenUrl: idp.tokenUrl };
  writeInfo(run.info);
  return idp;
}

/** PostgreSQL, Temporal's persistence and visibility store. */
async function startPostgresComponent(run: Run, base: RunBase): Promise<RunningPostgres> {
  const { o, stateDir, f, runId, info } = run;
  const { bins, secrets, ports } = base;
  const pgOpts = (keepData: boolean) => ({ binDir: bins.pgBinDir, stateDir, logDir: f.logs, password: secrets.postgres_password, keepData, runId, ports });
  const pg = await run.step('postgresql', () => startPostgres(pgOpts(o.keepData)), (p) => `127.0.0.1:${p.port} (pid ${p.pid}, as user ${p.user}, data ${p.dataDir})`);
  run.postgresRoot = pg.root;
  // A restart never wipes the data: the database of this run is kept whatever --keep-data says.
  run.components.register('postgresql', 'postgresql', { child: pg.child, stop: pg.stop, restart: () => startPostgres(pgOpts(true)) });
  info.postgres = { host: pg.host, port: pg.port, pid: pg.pid, dataDir: pg.dataDir, user: pg.user, binDir: bins.pgBinDir };
  writeInfo(info);
  return pg;
}

/** The Temporal server on PostgreSQL, its frontend behind mTLS. */
async function startTemporalComponent(run: Run, base: RunBase, pg: RunningPostgres): Promise<RunningTemporalServer> {
  const { stateDir, f, runId, info } = run;
  const temporalOpts = {
    binary: base.bins.temporalServer, stateDir, logDir: f.logs, postgres: { host: pg.host, port: pg.port, password: base.secrets.postgres_password }, runId, tlsDir: base.tls.dir, ports: base.ports,
    ...(run.auth ? { auth: run.auth.temporal } : {}),
  };
  const temporal = await run.step(
    'temporal',
    () => startTemporalServer(temporalOpts),
    (t) => `gRPC ${t.address} (pid ${t.pid}, ${HISTORY_SHARDS} history shards, persistence and visibility on PostgreSQL, mTLS: client certificates required${run.auth ? '; every call authorised by the IdP\'s JWTs' : ''})`,
  );
  run.components.register('temporal', 'temporal', { child: temporal.child, stop: temporal.stop, restart: () => startTemporalServer(temporalOpts) });
  info.temporal = {
    address: temporal.address, httpAddress: temporal.httpAddress, pid: temporal.pid, namespace: NAMESPACE, taskQueue: TASK_QUEUE,
    historyShards: HISTORY_SHARDS, version: VERSIONS.temporalServer,
  };
  writeInfo(info);
  return temporal;
}

/**
 * Temporal Web, started in parallel. It decodes through gateway-1's codec endpoint: that gateway's
 * port is chosen now (`gw1Port`), and when gateway-1 ends up on another one, `followGateway1`
 * starts Temporal Web again pointing at it.
 */
async function startUiComponent(
  run: Run,
  base: RunBase,
  temporalAddress: string,
): Promise<{ gw1Port: number; started: Promise<RunningUi>; followGateway1(gw1: RunningGateway | undefined): Promise<RunningUi> }> {
  const gw1Port = await base.ports.one('gateway-1');
  // With authorisation on, people sign in to Temporal Web at the IdP (its client `temporal-ui`), and
  // it decodes through the codec endpoint that authorises their token, not a gateway's capability URL.
  const personCodec = run.auth && run.info.idp ? await startPersonCodecComponent(run, base, run.info.idp) : undefined;
  const codecFor = (gatewayUrl: string) => personCodec?.endpoint ?? codecWebEndpoint(gatewayUrl, base.secrets.codec_auth_token);
  let ui: RunningUi | undefined;
  let codecEndpoint = codecFor(`http://127.0.0.1:${gw1Port}`);
  const auth = run.auth && run.info.idp ? { auth: { issuer: run.info.idp.issuer, clientId: UI_CLIENT_ID, clientSecret: base.idpSecrets.clientSecrets[UI_CLIENT_ID] } } : {};
  const uiOpts = () => ({ binary: base.bins.uiServer, stateDir: run.stateDir, logDir: run.f.logs, runId: run.runId, temporalAddress, codecEndpoint, tlsDir: path.join(base.tls.dir, 'temporal-ui'), ports: base.ports, ...(ui ? { port: ui.port } : {}), ...auth });
  const registerUi = (u: RunningUi): RunningUi => {
    ui = u;
    run.components.register('temporal-ui', 'temporal-ui', { child: u.child, stop: u.stop, restart: () => startUi(uiOpts()) });
    return u;
  };
  const followed = async (u: RunningUi): Promise<RunningUi> => {
    await personCodec?.followUi(u.url);
    return u;
  };
  const started = run.parallel(run.step('temporal-ui', () => startUi(uiOpts()), (u) => `${u.url} (pid ${u.pid}, ${personCodec ? 'people sign in at the identity provider; codec endpoint authorising their tokens' : 'codec endpoint on gateway-1'})`).then(registerUi).then(followed));
  return {
    gw1Port,
    started,
    async followGateway1(gw1) {
      // gateway-1 lost the port chosen for it to another process: Temporal Web must follow it.
      const first = await started;
      if (!gw1 || gw1.url === `http://127.0.0.1:${gw1Port}`) return first;
      await first.stop();
      codecEndpoint = codecFor(gw1.url);
      return followed(registerUi(await startUi(uiOpts())));
    },
  };
}

/** The codec endpoint of Temporal Web behind sign-in (codec.ts): the person's token, verified against the IdP's keys, authorises each call. */
async function startPersonCodecComponent(run: Run, base: RunBase, idp: NonNullable<ClusterInfo['idp']>): Promise<RunningPersonCodec & { followUi(uiUrl: string): Promise<void> }> {
  const opts = {
    stateDir: run.stateDir, logDir: run.f.logs, runId: run.runId, ports: base.ports,
    keysFile: path.join(secretsDir(run.stateDir), SECRET_FILES.payload_encryption_keys), authTokenFile: path.join(secretsDir(run.stateDir), SECRET_FILES.codec_auth_token),
    uiOrigin: `http://127.0.0.1:${await base.ports.one('temporal-ui')}`,
    personTokens: { issuer: idp.issuer, audience: TEMPORAL_AUDIENCE, jwksUrl: idp.jwksUrl, permissionsClaim: PERMISSIONS_CLAIM },
    tlsDir: base.tls.dir, ctx: run.ctx,
  };
  const codec = await run.step('codec', () => startPersonCodec(opts), (c) => `${c.endpoint} (pid ${c.pid}, Temporal Web's codec endpoint: the signed-in person's token, read permission on the namespace)`);
  run.components.register('codec', 'codec', { child: codec.child, stop: codec.stop, restart: () => startPersonCodec(opts) });
  run.info.codec = { url: codec.endpoint, pid: codec.pid };
  writeInfo(run.info);
  return Object.assign(codec, {
    /** Temporal Web took another port than the one its origin was read from (its own was taken): allow the origin it serves from. */
    async followUi(uiUrl: string): Promise<void> {
      if (uiUrl === opts.uiOrigin) return;
      opts.uiOrigin = uiUrl;
      const child = await run.components.restart('codec');
      run.info.codec = { url: run.info.codec?.url ?? codec.endpoint, pid: child.pid };
      writeInfo(run.info);
    },
  });
}

/** The namespace job: the namespace with its retention and our search attributes. */
function runNamespaceStep(run: Run, base: RunBase, temporalAddress: string): Promise<void> {
  return run.step(
    'temporal-namespace',
    () => runNamespaceJob({
      temporalCli: base.bins.temporalCli, address: temporalAddress, ...run.ctx, retention: run.o.retention ?? NAMESPACE_RETENTION,
      // The admin tools' token (the whole cluster) beside the operator's certificate, when calls are authorised.
      tlsEnv: { ...temporalClientTlsEnv(path.join(base.tls.dir, 'operator')), ...(run.auth ? { TEMPORAL_API_KEY: run.auth.adminToken.current() } : {}) },
    }),
    () => `namespace ${NAMESPACE} (retention ${run.o.retention ?? NAMESPACE_RETENTION}), search attributes ${Object.keys(CUSTOM_SEARCH_ATTRIBUTES).join(', ')}`,
  );
}

/** Workers and gateways, all at once (compose starts them together once their dependencies are up); gateway-1 on `gw1Port`. */
async function startApps(
  run: Run,
  base: RunBase,
  o: { temporalAddress: string; providerBaseUrl: string; temporalWebOrigin: string; gw1Port: number },
): Promise<{ workers: RunningWorker[]; gateways: RunningGateway[] }> {
  const { appCtx } = base;
  // Each machine client's token settings (client id, secret file) when calls are authorised.
  const extra = (client: MachineClientId) => ({ extraEnv: { ...run.o.appEnv, ...run.auth?.clientEnv(client) } });
  const workerOpts = { temporalAddress: o.temporalAddress, providerBaseUrl: o.providerBaseUrl, ...extra('mpf-worker') };
  const gatewayOpts = (port?: number) => ({ temporalAddress: o.temporalAddress, temporalWebOrigin: o.temporalWebOrigin, ...(port ? { port } : {}), ...extra('mpf-gateway') });
  return run.step(
    'workers, gateways',
    async () => {
      const workerJobs = Array.from({ length: run.o.workers }, (_, i) => startWorker(appCtx, `worker-${i + 1}`, workerOpts));
      const gatewayJobs = Array.from({ length: run.o.gateways }, (_, i) => startGateway(appCtx, `gateway-${i + 1}`, gatewayOpts(i === 0 ? o.gw1Port : undefined)));
      const [w, g] = await Promise.all([Promise.allSettled(workerJobs), Promise.allSettled(gatewayJobs)]);
      const workers = w.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
      const gateways = g.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
      for (const x of workers) run.components.register('workers', x.name, { child: x.child, stop: x.stop, restart: () => startWorker(appCtx, x.name, workerOpts) });
      // A gateway comes back on its own port: the notification URLs the provider holds point at it.
      for (const x of gateways) run.components.register('gateways', x.name, { child: x.child, stop: x.stop, restart: () => startGateway(appCtx, x.name, gatewayOpts(Number(new URL(x.url).port))) });
      const failed = [...w, ...g].find((r) => r.status === 'rejected');
      if (failed) throw failed.reason;
      return { workers, gateways };
    },
    (r) => `${r.workers.length} worker(s) polling ${TASK_QUEUE}, ${r.gateways.length} gateway(s) ready`,
  );
}

/**
 * cluster.env: what a shell needs to use the cluster with `mpf` and `temporal` (addresses, NAME_FILE
 * paths and the operator's certificate paths only).
 */
function writeClientEnv(info: ClusterInfo): void {
  const s = (name: string) => path.join(info.secretsDir, name);
  const tls = Object.entries(temporalClientTlsEnv(path.join(info.tlsDir, 'operator'))).map(([k, v]) => `${k}=${v}`);
  const lines = [
    '# mpf cluster: client settings of the running topology. No secret values: secrets are NAME_FILE paths (or read from them).',
    '#   set -a; . ' + info.envFile + '; set +a',
    `TEMPORAL_ADDRESS=${info.temporal?.address ?? ''}`,
    "# The operator's client certificate: the frontend accepts only certificates of the cluster's CA (mpf and temporal read these).",
    ...tls,
    ...(info.auth
      ? [
        `# Every call is authorised by a person's token: sign in with \`mpf cluster login --user operator --state-dir ${info.stateDir}\``,
        '# (the password on stdin; it is idp_password_operator among the secrets), then source this file again. The token lasts',
        "# the IdP's access-token lifetime (15 minutes by default), then sign in again. temporal and mpf send TEMPORAL_API_KEY to Temporal;",
        "# mpf sends MPF_ACCESS_TOKEN as Authorization: Bearer to the gateway's operator routes (mpf reconcile, mpf provider), so",
        '# a resolution or a pause is recorded under the person. mpf takes one credential from the environment (two are refused,',
        '# exit 2), so the operator key (MPF_API_KEY_FILE) is set only while no one signed in; afterwards it is',
        '# `mpf --api-key-file "$GATEWAY_API_KEY_FILE" …` (break glass when the IdP is down).',
        `TEMPORAL_API_KEY="$(cat '${tokenFile(info.stateDir, 'operator')}' 2>/dev/null)"`,
        `MPF_ACCESS_TOKEN="$(cat '${tokenFile(info.stateDir, 'operator')}' 2>/dev/null)"`,
      ]
      : []),
    `TEMPORAL_NAMESPACE=${NAMESPACE}`,
    `TEMPORAL_TASK_QUEUE=${TASK_QUEUE}`,
    `TEMPORAL_UI_URL=${info.ui?.url ?? ''}`,
    `PAYLOAD_ENCRYPTION_KEYS_FILE=${s('payload_encryption_keys')}`,
    `GATEWAY_PUBLIC_URL=${info.gateways[0]?.url ?? ''}`,
    // The operator's own key (role operator): `mpf reconcile resolve --gateway` when no one signed in (with calls
    // authorised, only then: a person's token beside it would be refused as two credentials), and
    // `curl -H "x-api-key: $GATEWAY_API_KEY"` as the runbook writes it (read from its file when the shell sources this).
    // The backend's and the read-only keys are beside it, for their callers; the gateways read only the keyring.
    info.auth
      ? `MPF_API_KEY_FILE="$([ -s '${tokenFile(info.stateDir, 'operator')}' ] || printf %s '${s(apiKeyFile('operator'))}')"`
      : `MPF_API_KEY_FILE=${s(apiKeyFile('operator'))}`,
    `GATEWAY_API_KEY_FILE=${s(apiKeyFile('operator'))}`,
    `GATEWAY_API_KEY="$(cat '${s(apiKeyFile('operator'))}')"`,
    `GATEWAY_API_KEYS_FILE=${s(KEYRING_FILE)}`,
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
