/**
 * The soak's topology: the production topology of `mpf cluster up` (tools/cluster: PostgreSQL, the
 * schema job, the Temporal server on it, the namespace job, Temporal Web, the simulator and the
 * workers, each its own process on loopback), started through the cluster's exported functions so
 * the soak can kill and restart single processes:
 *
 * - workers: started by the cluster (startWorker, as `mpf cluster up` does), and restarted after a
 *   SIGKILL with the same function and context;
 * - gateways: started here with the cluster's own command line and environment (appCommand,
 *   appEnvironment, IMAGE_ENV) plus the soak's settings, which the cluster gives no way to pass:
 *   SWAP_SETTLE_WAIT_SECONDS and LINK_LIFETIME_SECONDS are read by the gateway (they become workflow
 *   input), and their defaults (900 s, one day) would outlast any bounded soak;
 * - the Temporal server: SIGKILLed and restarted with its own command line, config file (same
 *   ports) and environment, on the same PostgreSQL.
 *
 * - workers of a second release (startReleaseWorker): the cluster's startWorker under another name
 *   (its certificate issued here from the cluster's CA) with another WORKER_BUILD_ID;
 * - every worker restarted with other settings (restartWorkersWith: the provider breaker's, for the
 *   incident phase), which later restarts after a kill keep.
 *
 * Every connection to Temporal is mutual TLS with the cluster's certificates (the gateways' are
 * issued here from the cluster's CA, the soak's own connection uses the operator's) and, as the
 * cluster authorises every call by default, a token: each worker and gateway started here fetches
 * and renews its own as the cluster's machine client of its role; the soak's own connections (its
 * readiness checks, the chaos phase's describes, the release phase's promotion) carry the admin
 * tools' token the cluster renews (cluster.operatorConnection()).
 *
 * Every process carries the cluster's run marker (MPF_CLUSTER_RUN), so stop() can prove nothing
 * is left, and processes.ts's exit hook SIGKILLs every child still running if the soak dies.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { request } from 'undici';
import { appContextOf, startWorker, type AppContext, type RunningApp } from '../../tools/cluster/apps';
import { Child, processesOfRun } from '../../tools/cluster/processes';
import { issueCertificate } from '../../tools/cluster/tls';
import { apiKeyFile, type ApiKeyRole, appCommand, appEnvironment, IMAGE_ENV, NAMESPACE } from '../../tools/cluster/topology';
import { idpTtlOf } from '../../tools/cluster/idp';
import { startCluster, type RunningCluster } from '../../tools/cluster/up';
import { freePort } from '../../src/temporal/ports';
import { PROJECT_ROOT } from '../../src/temporal/provision';

export type OperatorConnection = ReturnType<RunningCluster['operatorConnection']>;

export interface TopologyOptions {
  stateDir: string;
  workers: number;
  gateways: number;
  /** Extra environment of the gateways (the soak's short windows). */
  gatewayEnv: Record<string, string>;
  /** The lifetime of the machine clients' tokens (short: they renew during the soak). */
  tokenTtlSeconds: number;
  say: (line: string) => void;
  aborted: () => boolean;
}

export interface Proc {
  name: string;
  child: Child;
}

export interface GatewayProc extends Proc {
  url: string;
  port: number;
}

const LOOPBACK = '127.0.0.1';
const READY_MS = 120_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function readyz(url: string): Promise<boolean> {
  const res = await request(`${url}/readyz`, { headersTimeout: 2_000, bodyTimeout: 2_000 });
  await res.body.text();
  return res.statusCode === 200;
}

/** Ready: the frontend answers (over mTLS, with the operator's token when calls are authorised) and the namespace is served (as the cluster's own readiness check). */
async function temporalReady(address: string, operator: OperatorConnection): Promise<boolean> {
  const conn = Connection.lazy({ address, connectTimeout: 1_000, ...operator });
  try {
    await conn.ensureConnected();
    await conn.workflowService.getSystemInfo({});
    await conn.workflowService.describeNamespace({ namespace: NAMESPACE });
    return true;
  } finally {
    await conn.close();
  }
}

export class SoakTopology {
  readonly workers: Proc[] = [];
  readonly gateways: GatewayProc[] = [];
  /** Workers of another release (the release phase), beside the cluster's. */
  readonly releaseWorkers: Proc[] = [];
  /** Extra environment of the cluster's workers, kept by every restart (restartWorkersWith). */
  private workerEnv: Record<string, string> = {};
  private temporal!: Child;
  private appCtx!: AppContext;
  /** Processes this soak started beyond the cluster's own (restarts, gateways). */
  private readonly mine = new Set<Child>();
  private stopped = false;

  private constructor(
    readonly cluster: RunningCluster,
    private readonly o: TopologyOptions,
  ) {}

  static async start(o: TopologyOptions): Promise<SoakTopology> {
    // Gateways 0: the soak runs its own (see the header); workers: the cluster's.
    const cluster = await startCluster({ stateDir: o.stateDir, workers: o.workers, gateways: 0, keepData: false, say: o.say, aborted: o.aborted, idpTtl: idpTtlOf(o.tokenTtlSeconds) });
    const t = new SoakTopology(cluster, o);
    try {
      t.init();
      for (let i = 0; i < o.gateways; i++) t.gateways.push(await t.spawnGateway(`gateway-${i + 1}`));
    } catch (e) {
      await t.stop();
      throw e;
    }
    return t;
  }

  private init(): void {
    const { info, children } = this.cluster;
    this.appCtx = appContextOf(info);
    const temporal = children.find((c) => c.name === 'temporal');
    if (!temporal) throw new Error('the cluster started no Temporal server');
    this.temporal = temporal.child;
    for (const c of children) if (/^worker-\d+$/.test(c.name)) this.workers.push({ name: c.name, child: c.child });
  }

  get info() {
    return this.cluster.info;
  }
  get temporalAddress(): string {
    return this.info.temporal!.address;
  }
  get simulatorUrl(): string {
    return this.info.simulator!.url;
  }
  get checkoutUrl(): string {
    return this.info.simulator!.checkoutUrl;
  }
  get runId(): string {
    return this.info.runId;
  }
  apiKey(role: ApiKeyRole = 'backend'): string {
    return fs.readFileSync(path.join(this.info.secretsDir, apiKeyFile(role)), 'utf8').trim();
  }
  /** Where every process writes its log (<name>.log). */
  get logDir(): string {
    return this.appCtx.logDir;
  }

  /** The operator's connection options: mutual TLS, and the admin tools' token when the cluster authorises calls. */
  operatorConnection(): OperatorConnection {
    return this.cluster.operatorConnection();
  }

  /** The token settings of a worker or gateway started here (none when the cluster authorises no call). */
  private clientEnv(client: 'mpf-worker' | 'mpf-gateway'): Record<string, string> {
    return this.cluster.auth?.clientEnv(client) ?? {};
  }

  private async spawnGateway(name: string, port?: number): Promise<GatewayProc> {
    // The cluster made certificates for its own processes only (it started no gateway): this one's, from its CA.
    const tlsDir = path.join(this.info.tlsDir, name);
    if (!fs.existsSync(path.join(tlsDir, 'cert.pem'))) await issueCertificate(this.info.tlsDir, { name, kind: 'client' }, { logDir: this.info.logDir, runId: this.runId });
    for (let attempt = 1; ; attempt++) {
      const p = port ?? (await freePort());
      const url = `http://${LOOPBACK}:${p}`;
      const [node, ...args] = appCommand('gateway', { port: p, host: LOOPBACK });
      if (node !== 'node') throw new Error('the gateway command does not start with node');
      const env = {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        ...IMAGE_ENV,
        ...appEnvironment(
          'gateway',
          {
            temporalAddress: this.temporalAddress,
            gatewayPort: String(p),
            gatewayHost: LOOPBACK,
            gatewayPublicUrl: url,
            gatewayNotificationBaseUrl: url,
            temporalWebOrigin: this.info.ui?.url ?? url,
          },
          this.appCtx.secretsDir,
          tlsDir,
        ),
        ...this.clientEnv('mpf-gateway'),
        ...this.o.gatewayEnv,
      };
      const child = new Child(name, process.execPath, args, { cwd: PROJECT_ROOT, env, logFile: path.join(this.appCtx.logDir, `${name}.log`), runId: this.runId });
      this.mine.add(child);
      try {
        await child.waitForLog(/listening on (http:\/\/\S+)/, READY_MS);
        await child.waitUntil(() => readyz(url), READY_MS, 'ready (/readyz)');
        return { name, child, url, port: p };
      } catch (e) {
        await child.stop('SIGTERM', 5_000);
        this.mine.delete(child);
        if (attempt < 3 && /EADDRINUSE|address already in use/i.test(child.log())) {
          await sleep(1_000);
          continue;
        }
        throw e;
      }
    }
  }

  /** SIGKILL to a worker's whole process group (a crash). */
  async killWorker(w: Proc): Promise<void> {
    await w.child.kill();
  }

  /** A new worker process in the killed one's place (the cluster's startWorker, same context and extra environment). */
  async restartWorker(w: Proc): Promise<void> {
    const app: RunningApp = await startWorker(this.appCtx, w.name, { temporalAddress: this.temporalAddress, providerBaseUrl: this.simulatorUrl, extraEnv: { ...this.clientEnv('mpf-worker'), ...this.workerEnv } });
    this.mine.add(app.child);
    w.child = app.child;
  }

  /**
   * Every worker of the cluster stopped (SIGTERM: in-flight tasks drain) and started again with
   * `env` added to its environment, one at a time so one always polls; later restarts keep it.
   */
  async restartWorkersWith(env: Record<string, string>): Promise<void> {
    this.workerEnv = { ...env };
    for (const w of this.workers) {
      await w.child.stop('SIGTERM', 15_000);
      await this.restartWorker(w);
    }
  }

  /**
   * A worker of another release beside the cluster's: the cluster's startWorker as `name` (its
   * client certificate issued from the cluster's CA), with `env` (WORKER_BUILD_ID, WORKER_PROMOTE).
   */
  async startReleaseWorker(name: string, env: Record<string, string>): Promise<Proc> {
    if (!fs.existsSync(path.join(this.info.tlsDir, name, 'cert.pem'))) await issueCertificate(this.info.tlsDir, { name, kind: 'client' }, { logDir: this.info.logDir, runId: this.runId });
    const app = await startWorker(this.appCtx, name, { temporalAddress: this.temporalAddress, providerBaseUrl: this.simulatorUrl, extraEnv: { ...this.clientEnv('mpf-worker'), ...this.workerEnv, ...env } });
    this.mine.add(app.child);
    const p = { name, child: app.child };
    this.releaseWorkers.push(p);
    return p;
  }

  async killGateway(g: GatewayProc): Promise<void> {
    await g.child.kill();
  }

  /** On the same port: the notification URLs handed to the provider name it. */
  async restartGateway(g: GatewayProc): Promise<void> {
    const again = await this.spawnGateway(g.name, g.port);
    g.child = again.child;
  }

  /** SIGKILL to the identity provider: running processes keep their tokens; a process that starts meanwhile gets none. */
  async killIdp(): Promise<void> {
    const idp = this.cluster.children.find((c) => c.name === 'idp');
    if (!idp) throw new Error('the cluster started no identity provider');
    await idp.child.kill();
  }

  /** The identity provider again, as the cluster started it (same port, keys and clients). */
  async restartIdp(): Promise<void> {
    const child = await this.cluster.restart('idp');
    this.mine.add(child);
  }

  /**
   * The machine clients' token renewals over the soak, from the logs of every worker and gateway
   * (src/temporal/tokens.ts logs each renewal and each failed attempt, never a token).
   */
  tokenRenewals(): { renewed: number; failedAttempts: number } {
    let renewed = 0;
    let failedAttempts = 0;
    for (const file of fs.readdirSync(this.logDir)) {
      if (!/^(worker|gateway|release)-.*\.log$/.test(file)) continue;
      const text = fs.readFileSync(path.join(this.logDir, file), 'utf8');
      renewed += text.match(/temporal token: renewed/g)?.length ?? 0;
      failedAttempts += text.match(/temporal token: renewal failed/g)?.length ?? 0;
    }
    return { renewed, failedAttempts };
  }

  async killTemporal(): Promise<void> {
    await this.temporal.kill();
  }

  /** The same binary, arguments, config file (same ports) and environment, on the same PostgreSQL. */
  async restartTemporal(): Promise<number> {
    const old = this.temporal;
    const t0 = Date.now();
    const child = new Child(old.name, old.command, old.args, old.opts);
    this.mine.add(child);
    this.temporal = child;
    await child.waitUntil(() => temporalReady(this.temporalAddress, this.operatorConnection()), 90_000, 'serving');
    return Date.now() - t0;
  }

  /** pid (in its process group) → the worker it belongs to. */
  workerOfPid(pid: number): Proc | undefined {
    let pgrp: number | undefined;
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      pgrp = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
    } catch {
      return undefined;
    }
    return this.workers.find((w) => w.child.running && (w.child.pid === pid || w.child.pid === pgrp));
  }

  /** Gateways, workers, the restarted Temporal server (if any), then the cluster in its order. Returns the pids left. */
  async stop(): Promise<number[]> {
    if (this.stopped) return processesOfRun(this.runId);
    this.stopped = true;
    const timeout = (c: Child, ms: number) => c.stop('SIGTERM', ms);
    await Promise.all(this.gateways.map((g) => timeout(g.child, 10_000)));
    await Promise.all([...this.workers, ...this.releaseWorkers].map((w) => timeout(w.child, 15_000)));
    if (this.mine.has(this.temporal)) await timeout(this.temporal, 20_000);
    for (const c of this.mine) if (c.running) await timeout(c, 5_000);
    await this.cluster.stop();
    return processesOfRun(this.runId);
  }
}
