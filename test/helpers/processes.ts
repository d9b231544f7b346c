/** Real child processes of the `mpf` CLI for tests (worker kill/restart, servers). */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { generateDevKeys } from '../../src/codec/keys';
import { SIMULATOR_DEFAULT_CREDENTIALS } from '../../src/simulator/options';
import type { ClusterInfo } from '../../tools/cluster/state';

export const MPF_BIN = path.resolve(__dirname, '..', '..', 'bin', 'mpf.cjs');
const ROOT = path.resolve(__dirname, '..', '..');

export interface MpfRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `mpf args…` to completion with exactly `env` (stdin: `input`, or nothing); rejects with the
 * output so far if it has not exited after `timeoutMs` (and kills it).
 */
export function runMpf(args: string[], env: NodeJS.ProcessEnv, opts: { input?: string; timeoutMs?: number } = {}): Promise<MpfRun> {
  const timeoutMs = opts.timeoutMs ?? 60_000;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MPF_BIN, ...args], { cwd: ROOT, env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`mpf ${args.join(' ')} did not finish in ${timeoutMs} ms\n${stdout}\n${stderr}`));
    }, timeoutMs);
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
    child.stdin.end(opts.input ?? '');
  });
}

export interface MpfProcess {
  child: ChildProcess;
  output(): string;
  /** Resolves with the first stdout line matching `re`. */
  waitFor(re: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

export function spawnMpf(args: string[], env: NodeJS.ProcessEnv): MpfProcess {
  const child = spawn(process.execPath, [MPF_BIN, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const waiters: Array<() => void> = [];
  const onData = (d: Buffer) => {
    out += d.toString();
    for (const w of waiters.splice(0)) w();
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<void>((resolve) =>
    child.once('exit', () => {
      for (const w of waiters.splice(0)) w();
      resolve();
    }),
  );
  return {
    child,
    output: () => out,
    waitFor(re, timeoutMs = 60_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`timed out waiting for ${re} in:\n${out}`)), timeoutMs);
        const check = () => {
          const m = out.match(re);
          if (m) {
            clearTimeout(timer);
            resolve(m);
          } else if (child.exitCode !== null) {
            clearTimeout(timer);
            reject(new Error(`process exited (${child.exitCode}) before ${re}:\n${out}`));
          } else waiters.push(check);
        };
        check();
      });
    },
    async kill(signal = 'SIGKILL') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}

/**
 * Runs a TypeScript entry of the repository (`bench/run.ts`, `bench/soak/main.ts`) to its end as
 * `npm run` runs it: through tsx's CLI, which relays SIGTERM so the script stops what it started.
 * `output` is its stdout and stderr as they came. It is sent SIGTERM after `timeoutMs`, and when
 * this test process exits first.
 */
export async function runRepoScript(script: string, args: string[], timeoutMs: number): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, [require.resolve('tsx/cli'), script, ...args], { cwd: ROOT, env: process.env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  const stopOnExit = () => child.kill('SIGTERM');
  process.once('exit', stopOnExit);
  const timer = setTimeout(() => child.kill('SIGTERM'), timeoutMs);
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  clearTimeout(timer);
  process.off('exit', stopOnExit);
  return { code, output };
}

/** What `mpf cluster up` prints once the topology is ready (the last line included). */
export const CLUSTER_READY = /cluster ready in ([\d.]+) s\n[^]*stops everything\.\n/;

/**
 * `mpf cluster up --workers W --gateways G` in a fresh state directory (`mpf-<prefix>-…` under the
 * system's temp dir), with `env` added: the process and its state dir at once (so the file's
 * `after` can clean up even when the start fails), and `ready`, cluster.json once `up` printed
 * "cluster ready". The cluster is stopped (SIGTERM to `up`) if this test process exits first.
 */
export function startClusterForTest(o: { prefix: string; workers: number; gateways: number; env?: NodeJS.ProcessEnv; appEnv?: Record<string, string>; timeoutMs: number }): { up: MpfProcess; stateDir: string; ready: Promise<ClusterInfo> } {
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), `mpf-${o.prefix}-`));
  const appEnv = Object.entries(o.appEnv ?? {}).flatMap(([k, v]) => ['--app-env', `${k}=${v}`]);
  const up = spawnMpf(['cluster', 'up', '--workers', String(o.workers), '--gateways', String(o.gateways), ...appEnv, '--state-dir', stateDir], o.env ?? {});
  process.once('exit', () => {
    if (up.child.exitCode === null) up.child.kill('SIGTERM');
  });
  const ready = up.waitFor(CLUSTER_READY, o.timeoutMs).then(() => JSON.parse(fs.readFileSync(path.join(stateDir, 'cluster.json'), 'utf8')) as ClusterInfo);
  return { up, stateDir, ready };
}

/**
 * The `after` of a file that runs `mpf cluster up`: when a test failed before the file's own
 * `mpf cluster down` ran, stops the cluster anyway (`down`, then the `up` process), and removes
 * the state directory.
 */
export async function cleanUpCluster(up: MpfProcess | undefined, stateDir: string | undefined): Promise<void> {
  if (up && up.child.exitCode === null && up.child.signalCode === null) {
    await runMpf(['cluster', 'down', '--state-dir', stateDir ?? ''], { ...process.env }, { timeoutMs: 120_000 }).catch(() => undefined);
    await up.kill('SIGKILL');
  }
  if (stateDir) fs.rmSync(stateDir, { recursive: true, force: true });
}

/**
 * The variables `mpf worker` and `mpf gateway` processes are configured with, as users configure
 * them: the test's Temporal server, a task queue of their own, fresh payload keys, a simulator as
 * the provider (with the credentials it accepts) and the gateway's API key.
 */
export function mpfAppEnv(o: { temporal: { address: string; namespace: string }; taskQueue: string; simulatorUrl: string; apiKey: string }): Record<string, string> {
  return {
    TEMPORAL_ADDRESS: o.temporal.address,
    TEMPORAL_NAMESPACE: o.temporal.namespace,
    TEMPORAL_TASK_QUEUE: o.taskQueue,
    PAYLOAD_ENCRYPTION_KEYS: generateDevKeys(),
    MPS_BASE_URL: o.simulatorUrl,
    MPS_SECRET_KEY: SIMULATOR_DEFAULT_CREDENTIALS.secretKey,
    MPS_ACCESS_TOKEN: SIMULATOR_DEFAULT_CREDENTIALS.accessToken,
    MPS_MERCHANT_REF: SIMULATOR_DEFAULT_CREDENTIALS.merchantRef,
    GATEWAY_API_KEY: o.apiKey,
  };
}
