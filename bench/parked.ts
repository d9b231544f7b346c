/**
 * Parked flows, the way users run them: `mpf worker` and `mpf gateway` as processes of their own
 * (configured from the environment, on a task queue of their own) against the bench's Temporal
 * server and simulator. Swaps awaiting their PIN and links awaiting payment are started through
 * the gateway's API up to each target (e.g. 1,000 then 10,000 of each); at each target: the worker's
 * and the gateway's RSS, the server's database size (SQLite file + WAL, dev server only), the time
 * it took; then the wake latency (PIN → outcome through the gateway) of the oldest swaps (evicted
 * from the worker's sticky cache once more are parked than it holds) ÷ the newest (still cached),
 * interleaved. And, as the count grows: CPU ms per start (worker, gateway, Temporal server, this
 * process) and the start latency (p50/p99) over the last starts before each target, and the provider
 * guard's traffic per process (guardTraffic: what one worker or gateway asks of it a second, and
 * what each of those calls costs the server and the worker that runs the guard).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { Agent, request } from 'undici';
import { SIMULATOR_DEFAULT_CREDENTIALS } from '../src/simulator/options';
import { linkBody, SIM_PIN, swapBody } from '../test/helpers/fixtures';
import { providerGuardWorkflowId } from '../src/contract/provider-guard';
import { DEFAULT_BREAKER } from '../src/contract/provider-guard';
import { guardOutcomesSignal } from '../src/workflows/provider-guard';
import { GUARD_POLL_MS } from '../src/temporal/provider-guard-reading';
import { procCpuMs } from './proc';
import type { BenchStack } from './stack';
import { msSince, now, summarize, type Summary } from './stats';

export interface ParkedLevel {
  target: number;
  /** Seconds it took to park this level's new flows (swaps and links). */
  parkSeconds: number;
  workerRssMiB: number;
  gatewayRssMiB: number;
  /** SQLite file + WAL (dev server), undefined on an external server. */
  databaseMiB?: number;
  /** Starts (swaps and links) that answered 504 pending: parked, but their first answer took over 30 s. */
  slowStarts: number;
  /** PIN → outcome of the oldest swaps (likely evicted) and of the newest (cached). */
  wakeOldest: Summary;
  wakeNewest: Summary;
  /** The last starts before the target (swaps and links), measured: their count, latency (ms) and CPU ms per start by process. */
  lastStarts: { n: number; latency: Summary; cpuMsPerStart: Record<string, number> };
  /** The provider guard's traffic, measured at this level (guardTraffic). */
  guard: GuardTraffic;
}

/**
 * What the provider guard costs per process. Each worker and gateway process reads the guard once
 * every GUARD_POLL_MS (a describe, answered by the server with no worker) and each worker reports
 * its outcomes at most once a poll, when it has any (a signal-with-start, run as a workflow task of
 * the guard on a worker). Measured: `n` describes and `n` outcome signals sent one after another
 * from this process; CPU ms of each call by process. The traffic of P processes is then
 * P / GUARD_POLL_MS describes a second and at most P_workers signals a second, each at these costs.
 */
export interface GuardTraffic {
  pollMs: number;
  /**
   * CPU ms per second each process spent with no guard call in flight (idle windows just before and
   * after the calls: parked flows' own timers, e.g. PIN budgets whose reservations end, run then).
   * `cpuMsPerCall` is net of it; `rawCpuMsPerCall` is not.
   */
  backgroundMsPerSec: Record<string, number>;
  describes: { n: number; perSec: number; cpuMsPerCall: Record<string, number>; rawCpuMsPerCall: Record<string, number> };
  signals: { n: number; perSec: number; cpuMsPerCall: Record<string, number>; rawCpuMsPerCall: Record<string, number> };
}

const ROOT = path.resolve(__dirname, '..');
const API_KEY = 'bench-parked-api-key-0123456789';

function rssMiB(pid: number | undefined): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

function fileMiB(...files: string[]): number {
  return files.reduce((s, f) => s + (fs.existsSync(f) ? fs.statSync(f).size : 0), 0) / 2 ** 20;
}

/** Spawns `mpf <cmd>` and resolves once it printed a line matching `ready`. */
async function mpf(cmd: string[], env: Record<string, string>, ready: RegExp, logFile: string): Promise<{ child: ChildProcess; line: string }> {
  const child = spawn(process.execPath, [path.join(ROOT, 'bin/mpf.cjs'), ...cmd], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', fs.openSync(logFile, 'a')],
  });
  const line = await new Promise<string>((resolve, reject) => {
    readline.createInterface({ input: child.stdout! }).on('line', (l) => {
      if (ready.test(l)) resolve(l);
    });
    child.once('exit', (code) => reject(new Error(`mpf ${cmd[0]} exited (${code}) before it was ready (log: ${logFile})`)));
  });
  return { child, line };
}

const benchCpuMs = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

/** CPU ms of each process now: this one, and those given by pid. */
function cpuSnapshot(pids: Record<string, number | undefined>): Record<string, number> {
  return { bench: benchCpuMs(), ...Object.fromEntries(Object.entries(pids).filter(([, pid]) => pid).map(([k, pid]) => [k, procCpuMs(pid)])) };
}

const perCall = (a: Record<string, number>, b: Record<string, number>, n: number): Record<string, number> => Object.fromEntries(Object.keys(b).map((k) => [k, (b[k]! - (a[k] ?? 0)) / Math.max(1, n)]));

/** CPU ms per second of each process over `ms` with nothing sent. */
async function backgroundRate(pids: Record<string, number | undefined>, ms: number): Promise<Record<string, number>> {
  const a = cpuSnapshot(pids);
  const t = now();
  await new Promise((r) => setTimeout(r, ms));
  const b = cpuSnapshot(pids);
  const s = msSince(t) / 1000;
  return Object.fromEntries(Object.keys(b).map((k) => [k, (b[k]! - (a[k] ?? 0)) / s]));
}

/**
 * The guard's per-process traffic, one call at a time: `n` describes of its workflow, then `n`
 * outcome signals (one ok initiate each). What the processes spend meanwhile on anything else (the
 * background, measured idle for 3 s before and after) is taken off each phase's CPU: at 10,000
 * parked it was most of the raw figure.
 */
export async function guardTraffic(stack: BenchStack, taskQueue: string, pids: Record<string, number | undefined>, n: number): Promise<GuardTraffic> {
  const handle = stack.client.workflow.getHandle(providerGuardWorkflowId(taskQueue));
  const idleBefore = await backgroundRate(pids, 3_000);
  const c0 = cpuSnapshot(pids);
  let t = now();
  for (let i = 0; i < n; i++) await handle.describe();
  const describeMs = msSince(t);
  const c1 = cpuSnapshot(pids);
  t = now();
  for (let i = 0; i < n; i++)
    await stack.client.workflow.signalWithStart('providerGuardWorkflow', {
      workflowId: providerGuardWorkflowId(taskQueue),
      taskQueue,
      args: [{}],
      signal: guardOutcomesSignal,
      signalArgs: [{ counts: { initiate: { ok: 1, ambiguous: 0, throttled: 0 } }, settings: DEFAULT_BREAKER }],
    });
  const signalMs = msSince(t);
  // The guard's workflow tasks for those signals run on the worker after the last answered: let them finish.
  await new Promise((r) => setTimeout(r, 2_000));
  const signalPhaseMs = msSince(t);
  const c2 = cpuSnapshot(pids);
  const idleAfter = await backgroundRate(pids, 3_000);
  const background = Object.fromEntries(Object.keys(c2).map((k) => [k, ((idleBefore[k] ?? 0) + (idleAfter[k] ?? 0)) / 2]));
  const net = (raw: Record<string, number>, phaseMs: number): Record<string, number> =>
    Object.fromEntries(Object.entries(raw).map(([k, v]) => [k, Math.max(0, v - ((background[k] ?? 0) * phaseMs) / 1000 / Math.max(1, n))]));
  const [rawDescribe, rawSignal] = [perCall(c0, c1, n), perCall(c1, c2, n)];
  return {
    pollMs: GUARD_POLL_MS,
    backgroundMsPerSec: background,
    describes: { n, perSec: (n / describeMs) * 1000, cpuMsPerCall: net(rawDescribe, describeMs), rawCpuMsPerCall: rawDescribe },
    signals: { n, perSec: (n / signalMs) * 1000, cpuMsPerCall: net(rawSignal, signalPhaseMs), rawCpuMsPerCall: rawSignal },
  };
}

/** Wakes the oldest still-parked swaps and the newest (taken off `swaps`), interleaved: each one's latency (ms). */
async function wakeOldestAndNewest<S>(swaps: S[], samples: number, wake: (s: S) => Promise<void>): Promise<{ oldest: number[]; newest: number[] }> {
  const oldest: number[] = [];
  const newest: number[] = [];
  const timed = async (sw: S, into: number[]): Promise<void> => {
    const a = now();
    await wake(sw);
    into.push(msSince(a));
  };
  for (let i = 0; i < samples; i++) {
    const [old, recent] = [swaps.shift()!, swaps.pop()!];
    if (i % 2 === 0) {
      await timed(old, oldest);
      await timed(recent, newest);
    } else {
      await timed(recent, newest);
      await timed(old, oldest);
    }
  }
  return { oldest, newest };
}

export async function benchParked(
  stack: BenchStack,
  opts: { targets: number[]; concurrency: number; wakeSamples: number; say: (s: string) => void; lastStarts?: number; guardCalls?: number },
): Promise<ParkedLevel[]> {
  const taskQueue = `bench-parked-${Date.now().toString(36)}`;
  const common = {
    TEMPORAL_ADDRESS: stack.address,
    TEMPORAL_NAMESPACE: stack.namespace,
    TEMPORAL_TASK_QUEUE: taskQueue,
    PAYLOAD_ENCRYPTION_KEYS: stack.keys,
    MPS_BASE_URL: stack.simUrl,
    MPS_SECRET_KEY: SIMULATOR_DEFAULT_CREDENTIALS.secretKey,
    MPS_ACCESS_TOKEN: SIMULATOR_DEFAULT_CREDENTIALS.accessToken,
    MPS_MERCHANT_REF: SIMULATOR_DEFAULT_CREDENTIALS.merchantRef,
    LOG_LEVEL: 'warn',
  };
  const procs: ChildProcess[] = [];
  const agent = new Agent({ connections: opts.concurrency + 4 });
  try {
    const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mpf-bench-parked-'));
    opts.say(`mpf worker and mpf gateway log to ${logDir}`);
    const worker = await mpf(['worker'], common, /worker: polling task queue/, path.join(logDir, 'worker.log'));
    procs.push(worker.child);
    const gw = await mpf(['gateway', '--port', '0'], { ...common, GATEWAY_API_KEY: API_KEY, LINK_LATE_NOTIFICATION_GRACE_SECONDS: '0' }, /^listening on /, path.join(logDir, 'gateway.log'));
    procs.push(gw.child);
    const url = gw.line.replace(/^listening on /, '').trim();
    const post = async (p: string, body: unknown, headers: Record<string, string>): Promise<Record<string, unknown>> => {
      const res = await request(`${url}${p}`, { method: 'POST', dispatcher: agent, headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
      const json = (await res.body.json()) as Record<string, unknown>;
      // 504 pending: started, but its first answer took longer than the client waits; it is parked all the same.
      if (res.statusCode === 504 && json.error === 'pending') return { ...json, pending: true };
      if (res.statusCode >= 300) throw new Error(`POST ${p} answered ${res.statusCode}: ${JSON.stringify(json)}`);
      return json;
    };
    const run = Date.now().toString(36);
    /** The swaps parked now, oldest first. */
    const swaps: { id: string; token: string }[] = [];
    let seq = 0;
    let links = 0;
    /** Starts answered 504 pending (parked, but slower than the client's 30 s; not woken). */
    let slowStarts = 0;
    const levels: ParkedLevel[] = [];
    const pids = { worker: worker.child.pid, gateway: gw.child.pid, ...(stack.server ? { server: stack.server.pid } : {}) };
    for (const target of opts.targets) {
      const t0 = now();
      /** Parks swaps and links up to `upTo` each; with `latencies`, every start's latency goes there. */
      const parkUpTo = async (upTo: number, latencies?: number[]): Promise<number> => {
        let claimed = swaps.length + slowStarts;
        let started = 0;
        const timed = async <T>(fn: () => Promise<T>): Promise<T> => {
          const a = now();
          const r = await fn();
          latencies?.push(msSince(a));
          started++;
          return r;
        };
        const lane = async (): Promise<void> => {
          while (claimed < upTo) {
            claimed++;
            const i = seq++;
            const s = await timed(() => post('/v1/swaps', swapBody(`pk-${run}-${i}`), { 'x-api-key': API_KEY }));
            if (s.pending) slowStarts++;
            else swaps.push({ id: String(s.swap_id), token: String(s.pin_token) });
            if (links < upTo) {
              links++;
              const l = await timed(() => post('/v1/payment-links', linkBody(`pk-${run}-${i}`), { 'x-api-key': API_KEY }));
              if (l.pending) slowStarts++;
            }
          }
        };
        const progress = setInterval(() => opts.say(`parked ${swaps.length} swaps and ${links} links of ${target} each`), 15_000);
        try {
          await Promise.all(Array.from({ length: opts.concurrency }, lane));
        } finally {
          clearInterval(progress);
        }
        return started;
      };
      // The last starts before the target are measured (CPU per start by process, latency).
      const last = Math.max(1, Math.min(opts.lastStarts ?? 200, Math.floor((target - swaps.length - slowStarts) / 2)));
      await parkUpTo(target - last);
      const lastLatencies: number[] = [];
      const cpu0 = cpuSnapshot(pids);
      const lastN = await parkUpTo(target, lastLatencies);
      const cpu1 = cpuSnapshot(pids);
      const lastStarts = { n: lastN, latency: summarize(lastLatencies), cpuMsPerStart: perCall(cpu0, cpu1, lastN) };
      const parkSeconds = msSince(t0) / 1000;
      await new Promise((r) => setTimeout(r, 2_000));
      const db = stack.server ? path.join(path.dirname(stack.server.logFile), 'temporal.db') : undefined;
      const guard = await guardTraffic(stack, taskQueue, pids, opts.guardCalls ?? 100);
      const level: Omit<ParkedLevel, 'wakeOldest' | 'wakeNewest'> = {
        target,
        parkSeconds,
        workerRssMiB: rssMiB(worker.child.pid),
        gatewayRssMiB: rssMiB(gw.child.pid),
        ...(db ? { databaseMiB: fileMiB(db, `${db}-wal`) } : {}),
        slowStarts,
        lastStarts,
        guard,
      };
      opts.say(`parked ${target} swaps + ${target} links in ${parkSeconds.toFixed(0)} s (${slowStarts} slower than 30 s): worker RSS ${level.workerRssMiB.toFixed(0)} MiB, gateway ${level.gatewayRssMiB.toFixed(0)} MiB${level.databaseMiB !== undefined ? `, database ${level.databaseMiB.toFixed(0)} MiB` : ''}; last ${lastN} starts p50 ${lastStarts.latency.median.toFixed(0)} p99 ${lastStarts.latency.p99.toFixed(0)} ms, CPU ms per start ${JSON.stringify(lastStarts.cpuMsPerStart)}; guard describe ${JSON.stringify(guard.describes.cpuMsPerCall)}, signal ${JSON.stringify(guard.signals.cpuMsPerCall)}`);
      const wake = async (sw: { id: string; token: string }): Promise<void> => {
        const o = await post(`/v1/swaps/${sw.id}/pin`, { wallet_pin: SIM_PIN }, { authorization: `Bearer ${sw.token}` });
        if (o.outcome !== 'confirmed') throw new Error(`woken swap ${sw.id}: ${JSON.stringify(o)}`);
      };
      const { oldest, newest } = await wakeOldestAndNewest(swaps, Math.min(opts.wakeSamples, Math.floor(swaps.length / 2)), wake);
      levels.push({ ...level, wakeOldest: summarize(oldest), wakeNewest: summarize(newest) });
    }
    return levels;
  } finally {
    await agent.close();
    for (const c of procs.reverse()) {
      const exited = new Promise((r) => c.once('exit', r));
      c.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
      c.kill('SIGKILL');
    }
  }
}
