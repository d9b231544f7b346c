/**
 * `mpf cluster up` (in the foreground, like `docker compose up`: prints every address and
 * "cluster ready", then runs until Ctrl-C / SIGTERM / `mpf cluster down`, and stops everything in
 * reverse order) and `mpf cluster down` (stops a running `up` and waits until nothing is left).
 */
import path from 'node:path';
import { isRunning, processesOfRun } from './processes';
import { readInfo, runningUpPid, writeInfo, type ClusterInfo } from './state';
import { ClusterAlreadyRunning, ClusterStartAborted, cleanLeftovers, startCluster, type RunningCluster } from './up';
import { NAMESPACE, TASK_QUEUE } from './topology';

export interface UpOptions {
  stateDir: string;
  workers: number;
  gateways: number;
  keepData: boolean;
}

const out = (line: string) => process.stdout.write(`${line}\n`);
const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

export function formatAddresses(info: ClusterInfo): string[] {
  const row = (k: string, v: string) => `  ${k.padEnd(20)} ${v}`;
  return [
    row('Temporal gRPC', `${info.temporal?.address ?? '?'}  (namespace ${NAMESPACE}, task queue ${TASK_QUEUE}, pid ${info.temporal?.pid ?? '?'})`),
    row('Temporal Web', `${info.ui?.url ?? '?'}  (pid ${info.ui?.pid ?? '?'})`),
    ...info.gateways.map((g) => row(g.name, `${g.url}  (pid ${g.pid}${g.metricsUrl ? `, metrics ${g.metricsUrl}/metrics` : ''})`)),
    row('simulator API', `${info.simulator?.url ?? '?'}  (pid ${info.simulator?.pid ?? '?'})`),
    row('simulator checkout', info.simulator?.checkoutUrl ?? '?'),
    row('PostgreSQL', `${info.postgres?.host ?? '?'}:${info.postgres?.port ?? '?'}  (pid ${info.postgres?.pid ?? '?'}, user ${info.postgres?.user ?? '?'})`),
    ...info.workers.map((w) => row(w.name, `pid ${w.pid}${w.metricsUrl ? `, metrics ${w.metricsUrl}/metrics, health /healthz /readyz` : ''}`)),
    row('secrets', `${info.secretsDir} (files of mode 0600, never printed)`),
    row('certificates', `${info.tlsDir} (private CA; Temporal requires a client certificate from it)`),
    row('client settings', `set -a; . ${info.envFile}; set +a`),
    row('logs', info.logDir),
  ];
}

export async function runClusterUp(o: UpOptions): Promise<number> {
  const t0 = Date.now();
  const stateDir = path.resolve(o.stateDir);
  out(`mpf cluster up: the production topology on 127.0.0.1 (${o.workers} worker(s), ${o.gateways} gateway(s); state dir ${stateDir}${o.keepData ? ', keeping data' : ''})`);
  let stopRequested: NodeJS.Signals | undefined;
  let cluster: RunningCluster | undefined;
  let wake: () => void = () => undefined;
  const onSignal = (sig: NodeJS.Signals) => {
    if (stopRequested) {
      // A second Ctrl-C: no more waiting (the exit hook SIGKILLs every child).
      out(`${sig} again: killing everything now`);
      process.exit(130);
    }
    stopRequested = sig;
    out(`${sig}: stopping${cluster ? '' : ' (once the current step ends)'}…`);
    wake();
  };
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(sig, onSignal);

  try {
    cluster = await startCluster({ ...o, stateDir, say: (l) => out(`  ${l}`), aborted: () => stopRequested !== undefined });
  } catch (e) {
    if (e instanceof ClusterStartAborted) {
      out(`stopped before it was ready (${secs(Date.now() - t0)}); no process left`);
      return 130;
    }
    const msg = e instanceof Error ? e.message : String(e);
    process.stderr.write(`mpf cluster up: ${msg}\n`);
    if (!(e instanceof ClusterAlreadyRunning)) process.stderr.write(`everything it had started was stopped; logs in ${path.join(stateDir, 'logs')}\n`);
    return 1;
  }
  const readyMs = Date.now() - t0;
  cluster.info.readyInMs = readyMs;
  writeInfo(cluster.info);
  out(`cluster ready in ${secs(readyMs)}`);
  for (const line of formatAddresses(cluster.info)) out(line);
  out(`Ctrl-C, or \`mpf cluster down --state-dir ${stateDir}\`, stops everything.`);

  // Say so when a process dies on its own (no restart policy here, unlike compose's).
  for (const { name, child } of cluster.children) {
    void child.exited.then((exit) => {
      if (!child.stopping && !stopRequested) {
        out(`${name} (pid ${child.pid}) exited on its own (${exit.signal ?? `code ${String(exit.code)}`}); see ${child.opts.logFile}`);
      }
    });
  }

  if (!stopRequested) await new Promise<void>((resolve) => (wake = resolve));
  const s0 = Date.now();
  await cluster.stop();
  const left = processesOfRun(cluster.info.runId);
  out(left.length ? `stopped in ${secs(Date.now() - s0)}, but ${left.length} process(es) remain: ${left.join(', ')}` : `stopped in ${secs(Date.now() - s0)}; no process left`);
  return left.length ? 1 : 0;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function runClusterDown(o: { stateDir: string; timeoutSeconds?: number }): Promise<number> {
  const stateDir = path.resolve(o.stateDir);
  const info = readInfo(stateDir);
  const upPid = runningUpPid(stateDir);
  const t0 = Date.now();
  if (upPid !== undefined) {
    out(`stopping the cluster of ${stateDir} (mpf cluster up, pid ${upPid})…`);
    process.kill(upPid, 'SIGTERM');
    const deadline = Date.now() + (o.timeoutSeconds ?? 120) * 1000;
    while (isRunning(upPid) && Date.now() < deadline) await sleep(100);
    if (isRunning(upPid)) {
      out(`mpf cluster up (pid ${upPid}) did not stop in time: killing it and what it started`);
      process.kill(upPid, 'SIGKILL');
    }
  } else {
    out(`no mpf cluster up is running from ${stateDir}`);
  }
  // Whatever is left of that run (nothing, unless `up` was killed): stop it too.
  const cleaned = await cleanLeftovers(stateDir, out);
  const left = info?.runId ? processesOfRun(info.runId) : [];
  if (left.length) {
    process.stderr.write(`mpf cluster down: ${left.length} process(es) still running: ${left.join(', ')}\n`);
    return 1;
  }
  if (upPid !== undefined || cleaned) out(`cluster stopped in ${secs(Date.now() - t0)}; no process left`);
  return 0;
}
