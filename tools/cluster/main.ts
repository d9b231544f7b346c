/**
 * `mpf cluster up` (in the foreground, like `docker compose up`: prints every address and
 * "cluster ready", then runs until Ctrl-C / SIGTERM / `mpf cluster down`, and stops everything in
 * reverse order) and `mpf cluster down` (stops a running `up` and waits until nothing is left).
 */
import path from 'node:path';
import { isRunning, processesOfRun, type Child } from './processes';
import { readInfo, runningUpPid, writeInfo, type ClusterInfo } from './state';
import { ClusterAlreadyRunning, ClusterStartAborted, cleanLeftovers, startCluster, type RunningCluster } from './up';
import { IDP_PEOPLE, idpTtlFromEnvironment, type IdpTtl } from './idp';
import { API_KEYS, authSwitchOn, KEYRING_FILE, NAMESPACE, retentionFromEnvironment, TASK_QUEUE } from './topology';

export interface UpOptions {
  stateDir: string;
  workers: number;
  gateways: number;
  keepData: boolean;
  /** Flow settings for every worker and gateway (`--app-env`). */
  appEnv?: Record<string, string>;
}

/** Restart backoff (compose restarts at once, then backs off too): 1 s, doubled to 30 s; back to 1 s after a minute up. */
const RESTART_MIN_MS = 1_000;
const RESTART_MAX_MS = 30_000;
const RESTART_RESET_AFTER_MS = 60_000;

/**
 * Authorisation of the Temporal API by the IdP's tokens: on by default; MPF_CLUSTER_AUTH=0 turns it
 * off (certificates only: any certificate of the cluster's CA may do anything, which `up` says), and
 * another value throws (topology.ts authSwitchOn, as compose reads it).
 * MPF_CLUSTER_TOKEN_TTL_SECONDS shortens every token's lifetime (a test of renewal; idp.ts).
 * MPF_NAMESPACE_RETENTION sets the namespace's retention (topology.ts; a bad value: nothing starts).
 */
export function authFromEnvironment(env: NodeJS.ProcessEnv): { auth?: boolean; idpTtl: IdpTtl; retention: string } {
  return { ...(authSwitchOn(env) ? {} : { auth: false }), idpTtl: idpTtlFromEnvironment(env), retention: retentionFromEnvironment(env) };
}

const out = (line: string) => process.stdout.write(`${line}\n`);
const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

export function formatAddresses(info: ClusterInfo): string[] {
  const row = (k: string, v: string) => `  ${k.padEnd(20)} ${v}`;
  return [
    row('Temporal gRPC', `${info.temporal?.address ?? '?'}  (namespace ${NAMESPACE}, task queue ${TASK_QUEUE}, pid ${info.temporal?.pid ?? '?'})`),
    row('Temporal Web', `${info.ui?.url ?? '?'}  (pid ${info.ui?.pid ?? '?'})`),
    row('identity provider', `${info.idp?.issuer ?? '?'}  (pid ${info.idp?.pid ?? '?'}; people ${IDP_PEOPLE.map((p) => p.id).join(', ')}, passwords in idp_password_<person> beside the secrets)`),
    ...(info.codec ? [row('codec (Temporal Web)', `${info.codec.url}  (pid ${info.codec.pid}; authorises the signed-in person's token)`)] : []),
    ...info.gateways.map((g) => row(g.name, `${g.url}  (pid ${g.pid}${g.metricsUrl ? `, metrics ${g.metricsUrl}/metrics` : ''})`)),
    row('simulator API', `${info.simulator?.url ?? '?'}  (pid ${info.simulator?.pid ?? '?'})`),
    row('simulator checkout', info.simulator?.checkoutUrl ?? '?'),
    row('PostgreSQL', `${info.postgres?.host ?? '?'}:${info.postgres?.port ?? '?'}  (pid ${info.postgres?.pid ?? '?'}, user ${info.postgres?.user ?? '?'})`),
    ...info.workers.map((w) => row(w.name, `pid ${w.pid}${w.metricsUrl ? `, metrics ${w.metricsUrl}/metrics, health /healthz /readyz` : ''}`)),
    row('secrets', `${info.secretsDir} (files of mode 0600, never printed)`),
    row('API keys', `${API_KEYS.map((k) => `${k.file} (${k.role})`).join(', ')} beside them; the gateways read the keyring ${KEYRING_FILE}`),
    row('certificates', `${info.tlsDir} (private CA; Temporal requires a client certificate from it)`),
    row('client settings', `set -a; . ${info.envFile}; set +a`),
    row('logs', info.logDir),
  ];
}

export async function runClusterUp(o: UpOptions): Promise<number> {
  const t0 = Date.now();
  const stateDir = path.resolve(o.stateDir);
  let authEnv: ReturnType<typeof authFromEnvironment>;
  try {
    authEnv = authFromEnvironment(process.env);
  } catch (e) {
    process.stderr.write(`mpf cluster up: ${(e as Error).message}; nothing was started\n`);
    return 2;
  }
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
  if (authEnv.auth === false) out('  MPF_CLUSTER_AUTH=0: the Temporal API authorises no call; any certificate of the cluster\'s CA may terminate, cancel or reset any flow, and Temporal Web has no sign-in');

  try {
    cluster = await startCluster({
      ...o, stateDir, say: (l) => out(`  ${l}`), aborted: () => stopRequested !== undefined, ...(o.appEnv && Object.keys(o.appEnv).length ? { appEnv: o.appEnv } : {}),
      ...authEnv,
    });
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

  // A component that exits without being asked (a crash, a kill, `mpf cluster restart`) is started
  // again as it was, like compose's `restart: unless-stopped`, with a backoff.
  const running = cluster;
  const supervise = (name: string, child: Child, delayMs = RESTART_MIN_MS): void => {
    const startedAt = Date.now();
    void child.exited.then(async (exit) => {
      if (child.stopping || stopRequested) return;
      const delay = Date.now() - startedAt > RESTART_RESET_AFTER_MS ? RESTART_MIN_MS : delayMs;
      out(`${name} (pid ${child.pid}) exited (${exit.signal ?? `code ${String(exit.code)}`}); restarting it in ${secs(delay)}; see ${child.opts.logFile}`);
      for (let wait = delay; ; wait = Math.min(wait * 2, RESTART_MAX_MS)) {
        await sleep(wait);
        if (stopRequested) return;
        try {
          const t = Date.now();
          const next = await running.restart(name);
          out(`${name} restarted (pid ${next.pid}, ready in ${secs(Date.now() - t)})`);
          supervise(name, next, Math.min(wait * 2, RESTART_MAX_MS));
          return;
        } catch (e) {
          if (stopRequested) return;
          out(`${name}: restart failed (${(e as Error).message.split('\n')[0]}); trying again`);
        }
      }
    });
  };
  for (const { name, child } of cluster.children) supervise(name, child);

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

/**
 * `mpf cluster restart <component>`: stops one component of a running `up` (SIGTERM), which `up`
 * starts again as it was (same command line, ports, certificate and environment: cluster.json's
 * `components`); answers once cluster.json shows the new process ready.
 */
export async function runClusterRestart(o: { stateDir: string; component: string; timeoutSeconds?: number }): Promise<number> {
  const stateDir = path.resolve(o.stateDir);
  const upPid = runningUpPid(stateDir);
  const info = readInfo(stateDir);
  if (upPid === undefined || !info) {
    process.stderr.write(`mpf cluster restart: no mpf cluster up is running from ${stateDir}\n`);
    return 1;
  }
  const c = info.components?.[o.component];
  if (!c) {
    process.stderr.write(`mpf cluster restart: no component ${o.component}; one of: ${Object.keys(info.components ?? {}).join(', ')}\n`);
    return 1;
  }
  const t0 = Date.now();
  out(`restarting ${o.component} (pid ${c.pid}): ${c.command.join(' ')}`);
  try {
    process.kill(c.pid, 'SIGTERM');
  } catch {
    // already gone: up restarts it anyway
  }
  const deadline = Date.now() + (o.timeoutSeconds ?? 180) * 1000;
  while (Date.now() < deadline) {
    await sleep(200);
    const now = readInfo(stateDir)?.components?.[o.component];
    if (now && now.pid !== c.pid && isRunning(now.pid)) {
      out(`${o.component} restarted in ${secs(Date.now() - t0)} (pid ${now.pid}); log ${now.log}`);
      return 0;
    }
  }
  process.stderr.write(`mpf cluster restart: ${o.component} was not back within ${o.timeoutSeconds ?? 180} s; see the log of mpf cluster up and ${c.log}\n`);
  return 1;
}
