/**
 * Parked flows, the way users run them: `mpf worker` and `mpf gateway` as processes of their own
 * (configured from the environment, on a task queue of their own) against the bench's Temporal
 * server and simulator. Swaps awaiting their PIN and links awaiting payment are started through
 * the gateway's API up to each target (e.g. 1,000 then 10,000 of each); at each target: the worker's
 * and the gateway's RSS, the server's database size (SQLite file + WAL, dev server only), the time
 * it took; then the wake latency (PIN → outcome through the gateway) of the oldest swaps (evicted
 * from the worker's sticky cache once more are parked than it holds) ÷ the newest (still cached),
 * interleaved.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { Agent, request } from 'undici';
import { SIMULATOR_DEFAULT_CREDENTIALS } from '../src/simulator/options';
import { linkBody, SIM_PIN, swapBody } from '../test/helpers/fixtures';
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

export async function benchParked(stack: BenchStack, opts: { targets: number[]; concurrency: number; wakeSamples: number; say: (s: string) => void }): Promise<ParkedLevel[]> {
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
    for (const target of opts.targets) {
      const t0 = now();
      let claimed = swaps.length + slowStarts;
      const lane = async (): Promise<void> => {
        while (claimed < target) {
          claimed++;
          const i = seq++;
          const s = await post('/v1/swaps', swapBody(`pk-${run}-${i}`), { 'x-api-key': API_KEY });
          if (s.pending) slowStarts++;
          else swaps.push({ id: String(s.swap_id), token: String(s.pin_token) });
          if (links < target) {
            links++;
            const l = await post('/v1/payment-links', linkBody(`pk-${run}-${i}`), { 'x-api-key': API_KEY });
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
      const parkSeconds = msSince(t0) / 1000;
      await new Promise((r) => setTimeout(r, 2_000));
      const db = stack.server ? path.join(path.dirname(stack.server.logFile), 'temporal.db') : undefined;
      const level: Omit<ParkedLevel, 'wakeOldest' | 'wakeNewest'> = {
        target,
        parkSeconds,
        workerRssMiB: rssMiB(worker.child.pid),
        gatewayRssMiB: rssMiB(gw.child.pid),
        ...(db ? { databaseMiB: fileMiB(db, `${db}-wal`) } : {}),
        slowStarts,
      };
      opts.say(`parked ${target} swaps + ${target} links in ${parkSeconds.toFixed(0)} s (${slowStarts} slower than 30 s): worker RSS ${level.workerRssMiB.toFixed(0)} MiB, gateway ${level.gatewayRssMiB.toFixed(0)} MiB${level.databaseMiB !== undefined ? `, database ${level.databaseMiB.toFixed(0)} MiB` : ''}`);
      // Wake: the oldest still-parked swaps vs the newest, interleaved.
      const oldest: number[] = [];
      const newest: number[] = [];
      const wake = async (s: { id: string; token: string }, into: number[]): Promise<void> => {
        const a = now();
        const o = await post(`/v1/swaps/${s.id}/pin`, { wallet_pin: SIM_PIN }, { authorization: `Bearer ${s.token}` });
        if (o.outcome !== 'confirmed') throw new Error(`woken swap ${s.id}: ${JSON.stringify(o)}`);
        into.push(msSince(a));
      };
      const samples = Math.min(opts.wakeSamples, Math.floor(swaps.length / 2));
      for (let i = 0; i < samples; i++) {
        const [old, recent] = [swaps.shift()!, swaps.pop()!];
        if (i % 2 === 0) {
          await wake(old, oldest);
          await wake(recent, newest);
        } else {
          await wake(recent, newest);
          await wake(old, oldest);
        }
      }
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
