/** Real child processes of the `mpf` CLI for tests (worker kill/restart, servers). */
import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';

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
