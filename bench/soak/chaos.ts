/**
 * The soak's chaos, while the flows run:
 * - a worker SIGKILLed (its whole process group) every few seconds and restarted; some kills are
 *   timed while a provider POST is in flight: the soak looks, in the simulator's ledger, at the
 *   requests of flows whose start or PIN is outstanding, finds one the simulator is still holding
 *   (a latency fault widens that window), asks Temporal which worker runs that activity (its
 *   pending activity's lastWorkerIdentity, pid@host) and kills that worker;
 * - one gateway SIGKILLed and restarted on the same port, once;
 * - the Temporal server SIGKILLed and restarted on the same PostgreSQL, once (worker kills pause
 *   meanwhile);
 * - the identity provider SIGKILLed, once, for 5-10 s, when the cluster authorises calls: workers
 *   and gateways keep calling with the tokens they hold (their renewals fail and are tried again),
 *   and a worker restarted meanwhile cannot start until it is back (its restart is retried).
 */
import { Connection } from '@temporalio/client';
import type { SimulatorControl } from '../../src/simulator/control-client';
import type { FaultSetInput } from '../../src/simulator/faults';
import { NAMESPACE } from '../../tools/cluster/topology';
import type { Flow } from './flows';
import { type Rng, sleep } from './http';
import type { SoakTopology } from './topology';

export interface InFlightKill {
  worker: string;
  endpoint: string;
  ref: string;
  /** How long the simulator still held the request when the worker died. */
  remainingMs: number;
}

export interface ChaosStats {
  workerKills: number;
  inFlight: InFlightKill[];
  workerRestarts: number;
  workerRestartFailures: number;
  gatewayKills: Array<{ gateway: string; downMs: number }>;
  temporalKills: Array<{ downMs: number }>;
  idpKills: Array<{ downMs: number }>;
  log: string[];
}

export interface ChaosOptions {
  topology: SoakTopology;
  sim: SimulatorControl;
  flows: Flow[];
  rng: Rng;
  /** Time between worker kills (after the previous restart), ms. */
  killEveryMs: [number, number];
  /** Kills to time during a provider POST (tried first until reached). */
  inFlightTarget: number;
  /** Fractions of the flows done at which the gateway and the Temporal server are killed. */
  gatewayKillAt: number;
  temporalKillAt: number;
  /** … and the identity provider (with authorisation on). */
  idpKillAt: number;
  finished: () => number;
  /** True once the flows are done (or the soak stops): the chaos ends. */
  done: () => boolean;
  say: (line: string) => void;
}

const PROVIDER_POSTS = new Set(['swap.init', 'swap.confirm', 'link.create']);

export class Chaos {
  readonly stats: ChaosStats = { workerKills: 0, inFlight: [], workerRestarts: 0, workerRestartFailures: 0, gatewayKills: [], temporalKills: [], idpKills: [], log: [] };
  private temporalDown = false;
  private conn: Connection | undefined;
  private readonly t0 = Date.now();

  constructor(private readonly o: ChaosOptions) {}

  private note(line: string): void {
    const l = `[chaos +${((Date.now() - this.t0) / 1000).toFixed(1)}s] ${line}`;
    this.stats.log.push(l);
    this.o.say(l);
  }

  async run(): Promise<void> {
    try {
      await Promise.all([this.workerLoop(), this.onceLoop()]);
    } finally {
      await this.conn?.close().catch(() => undefined);
    }
  }

  // ---- workers ---------------------------------------------------------------------------------

  private async workerLoop(): Promise<void> {
    const { rng, topology } = this.o;
    while (!this.o.done()) {
      await this.pause(rng.int(...this.o.killEveryMs));
      if (this.o.done()) return;
      while (this.temporalDown && !this.o.done()) await sleep(200);
      if (this.o.done()) return;
      const wantInFlight = this.stats.inFlight.length < this.o.inFlightTarget;
      let killed: { worker: string; inFlight?: InFlightKill } | undefined;
      if (wantInFlight) killed = await this.killDuringPost(6_000);
      if (!killed) {
        const live = topology.workers.filter((w) => w.child.running);
        if (live.length === 0) continue;
        const w = rng.pick(live);
        await topology.killWorker(w);
        killed = { worker: w.name };
      }
      this.stats.workerKills++;
      if (killed.inFlight) this.stats.inFlight.push(killed.inFlight);
      this.note(
        `SIGKILL ${killed.worker}${killed.inFlight ? ` during a provider POST (${killed.inFlight.endpoint} of ${killed.inFlight.ref}, held ${killed.inFlight.remainingMs} ms more)` : ''}`,
      );
      await sleep(rng.int(300, 1_500));
      await this.restartWorkers();
    }
  }

  /** Restarts every worker that is not running (retrying while the Temporal server is away). */
  private async restartWorkers(): Promise<void> {
    const { topology } = this.o;
    for (const w of topology.workers) {
      for (let attempt = 1; !w.child.running; attempt++) {
        try {
          const t0 = Date.now();
          await topology.restartWorker(w);
          this.stats.workerRestarts++;
          this.note(`restarted ${w.name} (pid ${w.child.pid}, polling after ${Date.now() - t0} ms)`);
        } catch (e) {
          this.stats.workerRestartFailures++;
          this.note(`restarting ${w.name} failed (attempt ${attempt}): ${(e as Error).message.split('\n')[0]}`);
          if (attempt >= 10) throw e;
          await sleep(2_000);
        }
      }
    }
  }

  private async connection(): Promise<Connection> {
    this.conn ??= await Connection.connect({ address: this.o.topology.temporalAddress, connectTimeout: 2_000, ...this.o.topology.operatorConnection() });
    return this.conn;
  }

  /** The worker running `workflowId`'s pending activity (its identity is pid@host). */
  private async activityWorker(workflowId: string): Promise<number | undefined> {
    const conn = await this.connection();
    const d = await conn.withDeadline(Date.now() + 2_000, () =>
      conn.workflowService.describeWorkflowExecution({ namespace: NAMESPACE, execution: { workflowId } }),
    );
    const identity = d.pendingActivities?.find((a) => a.lastWorkerIdentity)?.lastWorkerIdentity;
    const pid = identity ? Number(identity.split('@')[0]) : NaN;
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  }

  /** Finds a provider POST the simulator still holds and kills the worker waiting for it. */
  private async killDuringPost(withinMs: number): Promise<{ worker: string; inFlight?: InFlightKill } | undefined> {
    const { sim, flows, topology, rng } = this.o;
    const until = Date.now() + withinMs;
    while (Date.now() < until && !this.o.done() && !this.temporalDown) {
      const busy = rng.shuffle(flows.filter((f) => f.busy)).slice(0, 12);
      for (const f of busy) {
        let found: { endpoint: string; endsAt: number } | undefined;
        try {
          const { requests } = await sim.ledger({ ref: f.ref });
          for (const r of requests) {
            if (!PROVIDER_POSTS.has(r.endpoint) || r.status !== 'pending' || !r.latency_ms) continue;
            const endsAt = Date.parse(r.at) + r.latency_ms;
            if (endsAt - Date.now() > 800) found = { endpoint: r.endpoint, endsAt };
          }
        } catch {
          continue;
        }
        if (!found) continue;
        let pid: number | undefined;
        try {
          pid = await this.activityWorker(f.id);
        } catch {
          this.conn = undefined;
          continue;
        }
        const w = pid === undefined ? undefined : topology.workerOfPid(pid);
        if (!w) continue;
        const remainingMs = found.endsAt - Date.now();
        await topology.killWorker(w);
        if (remainingMs <= 0) return { worker: w.name };
        return { worker: w.name, inFlight: { worker: w.name, endpoint: found.endpoint, ref: f.ref, remainingMs } };
      }
      await sleep(250);
    }
    return undefined;
  }

  // ---- the gateway and the Temporal server, once each ------------------------------------------

  private async onceLoop(): Promise<void> {
    const { rng, topology, flows } = this.o;
    const total = flows.length;
    let gatewayDone = topology.gateways.length === 0;
    let temporalDone = false;
    let idpDone = !topology.cluster.auth;
    while (!this.o.done() && !(gatewayDone && temporalDone && idpDone)) {
      const finished = this.o.finished();
      if (!gatewayDone && finished >= Math.ceil(total * this.o.gatewayKillAt)) {
        gatewayDone = true;
        const g = rng.pick(topology.gateways);
        const t0 = Date.now();
        await topology.killGateway(g);
        this.note(`SIGKILL ${g.name} (${g.url})`);
        await sleep(rng.int(1_000, 3_000));
        try {
          await topology.restartGateway(g);
          this.stats.gatewayKills.push({ gateway: g.name, downMs: Date.now() - t0 });
          this.note(`restarted ${g.name} on the same port (pid ${g.child.pid}; down ${Date.now() - t0} ms)`);
        } catch (e) {
          this.stats.gatewayKills.push({ gateway: g.name, downMs: -1 });
          this.note(`restarting ${g.name} failed: ${(e as Error).message.split('\n')[0]}`);
        }
      }
      if (!idpDone && finished >= Math.ceil(total * this.o.idpKillAt)) {
        idpDone = true;
        const t0 = Date.now();
        try {
          await topology.killIdp();
          this.note('SIGKILL the identity provider');
          await sleep(rng.int(5_000, 10_000));
          await topology.restartIdp();
          this.stats.idpKills.push({ downMs: Date.now() - t0 });
          this.note(`restarted the identity provider (down ${Date.now() - t0} ms)`);
        } catch (e) {
          this.stats.idpKills.push({ downMs: -1 });
          this.note(`restarting the identity provider failed: ${(e as Error).message.split('\n')[0]}`);
        }
      }
      if (!temporalDone && finished >= Math.ceil(total * this.o.temporalKillAt)) {
        temporalDone = true;
        this.temporalDown = true;
        const t0 = Date.now();
        try {
          await topology.killTemporal();
          this.note('SIGKILL the Temporal server');
          await sleep(rng.int(1_000, 3_000));
          const readyMs = await topology.restartTemporal();
          this.stats.temporalKills.push({ downMs: Date.now() - t0 });
          this.note(`restarted the Temporal server on the same PostgreSQL (serving after ${readyMs} ms; down ${Date.now() - t0} ms)`);
        } catch (e) {
          this.stats.temporalKills.push({ downMs: -1 });
          this.note(`restarting the Temporal server failed: ${(e as Error).message.split('\n')[0]}`);
        } finally {
          this.conn?.close().catch(() => undefined);
          this.conn = undefined;
          this.temporalDown = false;
        }
      }
      await sleep(250);
    }
  }

  private async pause(ms: number): Promise<void> {
    const until = Date.now() + ms;
    while (Date.now() < until && !this.o.done()) await sleep(Math.min(250, until - Date.now()));
  }

  /** Every worker running again (before the final checks, which need workers to answer queries). */
  async settle(): Promise<void> {
    await this.restartWorkers();
  }
}

/** Provider faults on every POST endpoint, and notification faults (the simulator's seeded stream). */
export function soakFaults(): FaultSetInput {
  const rules: FaultSetInput['rules'] = [];
  for (const endpoint of ['swap.init', 'swap.confirm', 'link.create'] as const) {
    rules.push(
      { endpoint, kind: 'latency', probability: 0.2, latencyMs: [1_500, 4_000] },
      { endpoint, kind: 'status5xx', probability: 0.05, status: 503 },
      { endpoint, kind: 'reset', probability: 0.05 },
      { endpoint, kind: 'rate_limit', probability: 0.05, retryAfterSeconds: 1 },
      { endpoint, kind: 'garbage', probability: 0.04 },
      { endpoint, kind: 'apply_then_fail', probability: 0.05 },
      { endpoint, kind: 'hang', probability: 0.03, maxMs: 8_000 },
    );
  }
  return { rules, notifications: { duplicate: 1, reorder: true, delayMs: 300 } };
}
