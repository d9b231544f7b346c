/**
 * The topology's child processes: each in its own process group (its own session, so a terminal's
 * Ctrl-C reaches only `mpf cluster up`, which then stops them in order), its output in a log file,
 * and a marker variable (MPF_CLUSTER_RUN=<run id>) in its environment by which `mpf cluster down`
 * finds whatever a crashed `up` left behind. Stopping a child signals it, waits, and then kills
 * whatever is left of its process group (PostgreSQL's backends outlive a killed postmaster).
 * An exit hook SIGKILLs the groups of every child still running.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';

export const RUN_MARKER = 'MPF_CLUSTER_RUN';

const live = new Set<Child>();
let hooked = false;
function hookExit(): void {
  if (hooked) return;
  hooked = true;
  process.once('exit', () => {
    for (const c of live) killGroup(c.pid, 'SIGKILL');
  });
}

export function killGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: nothing left in the group
  }
}

/** /proc/<pid>/stat: [state, pgrp]; undefined when the process is gone. */
function procStat(pid: number): { state: string; pgrp: number } | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // "pid (comm) state ppid pgrp …": comm may contain spaces and parentheses.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state: rest[0] ?? '', pgrp: Number(rest[2]) };
  } catch {
    return undefined;
  }
}

/** Whether `pid` is a running process (a zombie, dead but not yet reaped, is not). */
export function isRunning(pid: number): boolean {
  const s = procStat(pid);
  return s !== undefined && s.state !== 'Z' && s.state !== 'X';
}

function allPids(): number[] {
  return fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n)).map(Number);
}

/** The running members of process group `pgid`. */
export function groupMembers(pgid: number): number[] {
  return allPids().filter((pid) => {
    const s = procStat(pid);
    return s !== undefined && s.pgrp === pgid && s.state !== 'Z' && s.state !== 'X';
  });
}

/** Running processes whose environment carries MPF_CLUSTER_RUN=<runId> (the topology's, and only those). */
export function processesOfRun(runId: string): number[] {
  const needle = Buffer.from(`\0${RUN_MARKER}=${runId}\0`);
  return allPids().filter((pid) => {
    if (pid === process.pid || !isRunning(pid)) return false;
    try {
      const environ = Buffer.concat([Buffer.from('\0'), fs.readFileSync(`/proc/${pid}/environ`), Buffer.from('\0')]);
      return environ.includes(needle);
    } catch {
      return false;
    }
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits until no member of the group runs; SIGKILLs the group after `timeoutMs`. */
export async function waitGroupGone(pgid: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (groupMembers(pgid).length > 0) {
    if (Date.now() > deadline) {
      killGroup(pgid, 'SIGKILL');
      await sleep(100);
      if (Date.now() > deadline + 5_000) return;
      continue;
    }
    await sleep(50);
  }
}

export interface SpawnOptions {
  env: NodeJS.ProcessEnv;
  cwd?: string;
  logFile: string;
  runId: string;
  /** Run as this user (PostgreSQL refuses to run as root). */
  uid?: number;
  gid?: number;
}

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export class Child {
  readonly pid: number;
  readonly exited: Promise<ExitInfo>;
  exit: ExitInfo | undefined;
  private readonly proc: ChildProcess;
  /** Where this run's output starts in the log file (a retried child appends to the same file). */
  private readonly logStart: number;
  /** Set when we stop it (an exit then is expected, not a crash). */
  stopping = false;

  constructor(
    readonly name: string,
    readonly command: string,
    readonly args: string[],
    readonly opts: SpawnOptions,
  ) {
    hookExit();
    const log = fs.openSync(opts.logFile, 'a', 0o600);
    this.logStart = fs.fstatSync(log).size;
    try {
      this.proc = spawn(command, args, {
        cwd: opts.cwd,
        env: { ...opts.env, [RUN_MARKER]: opts.runId },
        stdio: ['ignore', log, log],
        detached: true, // setsid(): its own session and process group
        ...(opts.uid !== undefined ? { uid: opts.uid } : {}),
        ...(opts.gid !== undefined ? { gid: opts.gid } : {}),
      });
    } finally {
      fs.closeSync(log);
    }
    if (this.proc.pid === undefined) {
      // spawn failed (ENOENT…): the 'error' event says why; keep the shape of an exited child.
      this.pid = -1;
      this.exited = new Promise((resolve) =>
        this.proc.once('error', (e) => {
          fs.appendFileSync(opts.logFile, `spawn failed: ${e.message}\n`);
          this.exit = { code: 127, signal: null };
          resolve(this.exit);
        }),
      );
      return;
    }
    this.pid = this.proc.pid;
    live.add(this);
    this.exited = new Promise((resolve) =>
      this.proc.once('exit', (code, signal) => {
        this.exit = { code, signal };
        live.delete(this);
        resolve(this.exit);
      }),
    );
  }

  get running(): boolean {
    return this.exit === undefined;
  }

  log(): string {
    try {
      return fs.readFileSync(this.opts.logFile).subarray(this.logStart).toString('utf8');
    } catch {
      return '';
    }
  }

  /** The log's last lines, for error messages. */
  tail(lines = 25): string {
    return this.log().trim().split('\n').slice(-lines).join('\n');
  }

  /**
   * Resolves with the first match of `re` in the child's log; rejects when the child exits first
   * or after `timeoutMs`.
   */
  async waitForLog(re: RegExp, timeoutMs: number): Promise<RegExpMatchArray> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const m = this.log().match(re);
      if (m) return m;
      if (!this.running) throw new ChildExitedError(this);
      if (Date.now() > deadline) throw new Error(`${this.name} (pid ${this.pid}) not ready after ${timeoutMs} ms:\n${this.tail()}`);
      await sleep(50);
    }
  }

  /** Polls `probe` until it returns true; rejects when the child exits first or after `timeoutMs`. */
  async waitUntil(probe: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let last: unknown;
    for (;;) {
      if (!this.running) throw new ChildExitedError(this);
      try {
        if (await probe()) return;
      } catch (e) {
        last = e;
      }
      if (!this.running) throw new ChildExitedError(this);
      if (Date.now() > deadline) {
        throw new Error(`${this.name} (pid ${this.pid}) not ${what} after ${timeoutMs} ms${last ? ` (${(last as Error).message})` : ''}:\n${this.tail()}`);
      }
      await sleep(100);
    }
  }

  /**
   * Stops the child: `signal` to the process itself (graceful), then waits for its whole process
   * group; whatever is still running after `timeoutMs` is killed with SIGKILL.
   */
  async stop(signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 10_000): Promise<void> {
    this.stopping = true;
    if (this.pid < 0) return;
    if (this.running) {
      try {
        process.kill(this.pid, signal);
      } catch {
        // already gone
      }
      const timer = setTimeout(() => killGroup(this.pid, 'SIGKILL'), timeoutMs);
      await this.exited;
      clearTimeout(timer);
    }
    // The leader is gone; its group may not be (e.g. backends of a killed postmaster).
    killGroup(this.pid, 'SIGTERM');
    await waitGroupGone(this.pid, 3_000);
  }

  /** SIGKILL to the whole group, as a crash would; resolves when nothing of it runs. */
  async kill(): Promise<void> {
    this.stopping = true;
    if (this.pid < 0) return;
    killGroup(this.pid, 'SIGKILL');
    if (this.running) await this.exited;
    await waitGroupGone(this.pid, 5_000);
  }
}

export class ChildExitedError extends Error {
  override name = 'ChildExitedError';
  constructor(readonly child: Child) {
    super(`${child.name} exited (${child.exit?.signal ?? `code ${String(child.exit?.code)}`}) before it was ready:\n${child.tail()}`);
  }
}

/** Runs a one-shot command to completion; resolves with its exit code. */
export async function runToEnd(name: string, command: string, args: string[], opts: SpawnOptions, timeoutMs = 120_000): Promise<{ code: number; output: string }> {
  const child = new Child(name, command, args, opts);
  const timer = setTimeout(() => killGroup(child.pid, 'SIGKILL'), timeoutMs);
  const exit = await child.exited;
  clearTimeout(timer);
  return { code: exit.code ?? 1, output: child.log() };
}
