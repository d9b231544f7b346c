/**
 * PostgreSQL for the native topology: Debian's server binaries, a data directory of its own, on
 * 127.0.0.1 only, with the `temporal` user and a password (scram-sha-256), as compose's postgres
 * service has. PostgreSQL refuses to run as root: when we are root (this machine, CI) initdb and
 * postgres run as the `postgres` system user that Debian's package creates, in a directory that
 * user owns.
 */
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Child, ChildExitedError } from './processes';
import type { PortBook } from './ports';
import { DATABASE } from './topology';

export interface PostgresOptions {
  binDir: string;
  stateDir: string;
  logDir: string;
  password: string;
  /** Keep an existing data directory (and its databases); otherwise start from an empty one. */
  keepData: boolean;
  runId: string;
  /** Where its port is chosen and kept (the same one again after --keep-data when free). */
  ports: PortBook;
}

export interface RunningPostgres {
  host: string;
  port: number;
  pid: number;
  /** The directory PostgreSQL owns (data/ and its socket). */
  root: string;
  dataDir: string;
  /** The user it runs as. */
  user: string;
  child: Child;
  stop(): Promise<void>;
}

export class PostgresError extends Error {
  override name = 'PostgresError';
}

interface RunAs {
  user: string;
  uid?: number;
  gid?: number;
}

/** Ourselves when we are not root; otherwise Debian's `postgres` system user. */
export function postgresRunAs(): RunAs {
  if (process.getuid?.() !== 0) return { user: os.userInfo().username };
  const r = spawnSync('getent', ['passwd', 'postgres'], { encoding: 'utf8' });
  const fields = (r.stdout ?? '').trim().split(':');
  if (r.status !== 0 || fields.length < 4) {
    throw new PostgresError("PostgreSQL must not run as root, and there is no 'postgres' user to run it as (Debian's postgresql package creates it: apt-get install -y postgresql)");
  }
  return { user: 'postgres', uid: Number(fields[2]), gid: Number(fields[3]) };
}

function asUser(runAs: RunAs): { uid?: number; gid?: number } {
  return runAs.uid === undefined ? {} : { uid: runAs.uid, gid: runAs.gid };
}

/** Can `runAs` write in `dir` (every parent traversable)? */
function reachable(dir: string, runAs: RunAs): boolean {
  if (runAs.uid === undefined) return true;
  return spawnSync('test', ['-w', dir, '-a', '-x', dir], { ...asUser(runAs) }).status === 0;
}

/**
 * <state dir>/postgres, owned by the user PostgreSQL runs as; when that user cannot reach the
 * state dir (a checkout under /root, say), a directory of its own under the system's temp dir,
 * named after the state dir so that --keep-data finds it again.
 */
export function postgresRoot(stateDir: string, runAs: RunAs): string {
  const prepare = (dir: string): boolean => {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    if (runAs.uid !== undefined) fs.chownSync(dir, runAs.uid, runAs.gid ?? runAs.uid);
    fs.chmodSync(dir, 0o700);
    return reachable(dir, runAs);
  };
  const inState = path.join(stateDir, 'postgres');
  if (prepare(inState)) return inState;
  fs.rmSync(inState, { recursive: true, force: true });
  const fallback = path.join(os.tmpdir(), `mpf-cluster-pg-${createHash('sha256').update(path.resolve(stateDir)).digest('hex').slice(0, 12)}`);
  if (prepare(fallback)) return fallback;
  throw new PostgresError(`the ${runAs.user} user can reach neither ${inState} nor ${fallback}; choose another --state-dir`);
}

function initdb(o: PostgresOptions, runAs: RunAs, root: string, dataDir: string): void {
  const pwfile = path.join(root, '.initdb-password');
  fs.writeFileSync(pwfile, `${o.password}\n`, { mode: 0o600 });
  if (runAs.uid !== undefined) fs.chownSync(pwfile, runAs.uid, runAs.gid ?? runAs.uid);
  try {
    const r = spawnSync(
      path.join(o.binDir, 'initdb'),
      ['-D', dataDir, '-U', DATABASE.user, '--auth=scram-sha-256', `--pwfile=${pwfile}`, '-E', 'UTF8', '--locale=C.UTF-8', '--no-instructions'],
      { cwd: root, env: { PATH: process.env.PATH, HOME: root, LANG: 'C.UTF-8' }, encoding: 'utf8', ...asUser(runAs) },
    );
    fs.appendFileSync(path.join(o.logDir, 'postgres-initdb.log'), `${r.stdout ?? ''}${r.stderr ?? ''}`);
    if (r.status !== 0) throw new PostgresError(`initdb failed (${r.status ?? r.signal}): ${(r.stderr || r.error?.message || '').trim()}`);
  } finally {
    fs.rmSync(pwfile, { force: true });
  }
}

/** compose's healthcheck: pg_isready -U temporal -d postgres. */
function isReady(binDir: string, port: number): boolean {
  const r = spawnSync(path.join(binDir, 'pg_isready'), ['-h', '127.0.0.1', '-p', String(port), '-U', DATABASE.user, '-d', 'postgres', '-q'], { timeout: 5_000 });
  return r.status === 0;
}

export async function startPostgres(o: PostgresOptions): Promise<RunningPostgres> {
  const runAs = postgresRunAs();
  const root = postgresRoot(o.stateDir, runAs);
  const dataDir = path.join(root, 'data');
  if (!o.keepData) fs.rmSync(dataDir, { recursive: true, force: true });
  if (!fs.existsSync(path.join(dataDir, 'PG_VERSION'))) initdb(o, runAs, root, dataDir);

  for (let attempt = 1; ; attempt++) {
    const port = await o.ports.one('postgresql', { fresh: attempt > 1 });
    const child = new Child(
      'postgresql',
      path.join(o.binDir, 'postgres'),
      ['-D', dataDir, '-c', 'listen_addresses=127.0.0.1', '-p', String(port), '-c', `unix_socket_directories=${root}`],
      { cwd: root, env: { PATH: process.env.PATH, HOME: root, LANG: 'C.UTF-8' }, logFile: path.join(o.logDir, 'postgres.log'), runId: o.runId, ...asUser(runAs) },
    );
    try {
      await child.waitUntil(async () => isReady(o.binDir, port), 60_000, 'accepting connections');
    } catch (e) {
      await child.stop('SIGINT');
      // Another process took the port between freePort() and bind: choose again.
      if (e instanceof ChildExitedError && /Address already in use|could not bind/i.test(child.log()) && attempt < 3) continue;
      throw e;
    }
    return {
      host: '127.0.0.1',
      port,
      pid: child.pid,
      root,
      dataDir,
      user: runAs.user,
      child,
      // SIGINT: PostgreSQL's "fast" shutdown (SIGTERM's "smart" one waits for every client).
      stop: () => child.stop('SIGINT', 20_000),
    };
  }
}
