/**
 * Lifecycle of a real Temporal CLI dev server (`temporal server start-dev`), shared by tests, the
 * demo and benchmarks: free ports, SQLite with WAL and synchronous=OFF, our search attributes
 * registered, Web UI on or off, and a clean shutdown with no orphan process.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { CUSTOM_SEARCH_ATTRIBUTES } from '../workflows/search-attributes';
import { freePort } from './ports';
import { provisionTemporalCli } from './provision';

export interface DevServerOptions {
  /** Web UI on (demo) or off (tests). Default off. */
  ui?: boolean;
  /** The frontend (gRPC) port; default a free one. A restart on the same dbFile passes the old one. */
  port?: number;
  /** Persistent SQLite file (demo); default a fresh temp file removed on stop. */
  dbFile?: string;
  namespace?: string;
  /**
   * How long the namespace keeps a closed flow (its history, and the merchant events in its memo),
   * in hours; default DEV_SERVER_RETENTION_HOURS, as the production topology's (start-dev's own is a day).
   */
  retentionHours?: number;
  /**
   * Register our search attributes at start (default true). false: a plain `temporal server
   * start-dev`, as a user's own server would be (the worker must register them itself).
   */
  searchAttributes?: boolean;
  /** The Web UI's port when it must be known in advance (a codec server's CORS); default a free one. */
  uiPort?: number;
  /** Codec endpoint handed to the Web UI. */
  uiCodecEndpoint?: string;
  /** Where the server's own log goes; default a temp file. */
  logFile?: string;
  readyTimeoutMs?: number;
  /** The server's dynamic config (`--dynamic-config-value KEY=JSON`), e.g. { 'system.enableActivityEagerExecution': true }. */
  dynamicConfig?: Record<string, string | number | boolean>;
  /**
   * Don't let the server keep this process alive (a test file run on its own exits when its tests
   * end; the server is then killed by the exit hook).
   */
  unref?: boolean;
  /**
   * Run the server in a process group of its own: a terminal's Ctrl-C, sent to the whole foreground
   * group, then reaches only the caller, which stops the server in its own order (the demo cancels
   * its flows through the server first, and its worker stops while the server still answers).
   */
  ownProcessGroup?: boolean;
}

/** 30 days, as tools/cluster/topology.ts's NAMESPACE_RETENTION: a demo's closed flows and their events stay that long. */
export const DEV_SERVER_RETENTION_HOURS = 720;

export interface DevServer {
  address: string;
  namespace: string;
  uiUrl?: string;
  pid: number;
  binary: string;
  logFile: string;
  /** Its Prometheus metrics (`--metrics-port`), e.g. the requests it served by operation. */
  metricsUrl: string;
  stop(): Promise<void>;
  /** SIGKILL, as a crash would (tests of durability); the database file is kept. */
  kill(): Promise<void>;
}

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

/**
 * What Worker Deployment Versioning needs of the dev server beyond its defaults (versioning itself is
 * on by default in Temporal 1.29): every test's task queue joins the one version of this release
 * (past the default of 100 task queues per version, a new queue is refused and its flows never
 * start), and a drained version says so within seconds instead of the default 3 minutes.
 */
export const DEV_SERVER_VERSIONING_CONFIG: Record<string, string | number> = {
  'matching.maxTaskQueuesInDeploymentVersion': 100_000,
  'matching.maxDeployments': 10_000,
  'matching.wv.VersionDrainageStatusVisibilityGracePeriod': '2s',
  'matching.wv.VersionDrainageStatusRefreshInterval': '2s',
};

/** The server could not bind a port it was given (another process took it after freePort()). */
class PortTakenError extends Error {}

const START_ATTEMPTS = 3;

export async function startDevServer(opts: DevServerOptions = {}): Promise<DevServer> {
  const binary = provisionTemporalCli();
  // freePort() closes the port before the server binds it, so on a busy machine another process
  // can take it in between: the server then exits with "address already in use". Ports we chose
  // are chosen again; a port the caller fixed is retried as it is.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(binary, opts);
    } catch (e) {
      if (!(e instanceof PortTakenError) || attempt >= START_ATTEMPTS) throw e;
    }
  }
}

async function startOnce(binary: string, opts: DevServerOptions): Promise<DevServer> {
  const namespace = opts.namespace ?? 'default';
  const [port, httpPort, metricsPort] = [opts.port ?? (await freePort()), await freePort(), await freePort()];
  const uiPort = opts.ui ? (opts.uiPort ?? (await freePort())) : undefined;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mpf-temporal-'));
  const dbFile = opts.dbFile ?? path.join(tmp, 'temporal.db');
  fs.mkdirSync(path.dirname(dbFile), { recursive: true });
  const logFile = opts.logFile ?? path.join(tmp, 'server.log');
  const args = [
    'server', 'start-dev',
    '--ip', '127.0.0.1',
    '--port', String(port),
    '--http-port', String(httpPort),
    '--metrics-port', String(metricsPort),
    '--db-filename', dbFile,
    '--sqlite-pragma', 'journal_mode=WAL',
    '--sqlite-pragma', 'synchronous=OFF',
    '--log-level', 'warn',
    ...(namespace !== 'default' ? ['--namespace', namespace] : []),
    ...Object.entries(opts.searchAttributes === false ? {} : CUSTOM_SEARCH_ATTRIBUTES).flatMap(([k, t]) => ['--search-attribute', `${k}=${t}`]),
    ...(uiPort ? ['--ui-port', String(uiPort)] : ['--headless']),
    ...(uiPort && opts.uiCodecEndpoint ? ['--ui-codec-endpoint', opts.uiCodecEndpoint] : []),
    ...Object.entries({ ...DEV_SERVER_VERSIONING_CONFIG, ...opts.dynamicConfig }).flatMap(([k, v]) => ['--dynamic-config-value', `${k}=${JSON.stringify(v)}`]),
  ];
  const log = fs.openSync(logFile, 'a');
  const child = spawn(binary, args, { stdio: ['ignore', log, log], detached: opts.ownProcessGroup ?? false });
  fs.closeSync(log);
  live.add(child);
  if (opts.unref) child.unref();
  let exited: number | null | undefined;
  const exitedPromise = new Promise<void>((resolve) =>
    child.once('exit', (code, signal) => {
      exited = code ?? (signal ? -1 : 0);
      live.delete(child);
      resolve();
    }),
  );
  const address = `127.0.0.1:${port}`;

  const stop = async (): Promise<void> => {
    if (exited !== undefined) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exitedPromise;
    clearTimeout(timer);
    if (!opts.dbFile) fs.rmSync(tmp, { recursive: true, force: true });
  };

  const deadline = Date.now() + (opts.readyTimeoutMs ?? 60_000);
  for (;;) {
    if (exited !== undefined) {
      const log = readLog(logFile);
      if (!opts.dbFile) fs.rmSync(tmp, { recursive: true, force: true });
      const message = `temporal server start-dev exited (${exited}) before it was ready:\n${errorLines(log)}${tail(log)}`;
      throw /address already in use/.test(log) ? new PortTakenError(message) : new Error(message);
    }
    try {
      // lazy + close in finally: a Connection.connect() that fails returns nothing to close, and
      // its channel keeps retrying until collected.
      const conn = Connection.lazy({ address, connectTimeout: 1_000 });
      try {
        await conn.ensureConnected();
        await conn.workflowService.describeNamespace({ namespace });
        await conn.workflowService.updateNamespace({
          namespace,
          config: { workflowExecutionRetentionTtl: msToTs((opts.retentionHours ?? DEV_SERVER_RETENTION_HOURS) * 3_600_000) },
        });
        break;
      } finally {
        await conn.close();
      }
    } catch (e) {
      if (Date.now() > deadline) {
        await stop();
        throw new Error(`Temporal dev server not ready after ${opts.readyTimeoutMs ?? 60_000} ms: ${(e as Error).message}\n${tail(readLog(logFile))}`, { cause: e });
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  return {
    address,
    namespace,
    uiUrl: uiPort ? `http://127.0.0.1:${uiPort}` : undefined,
    pid: child.pid!,
    binary,
    logFile,
    metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`,
    stop,
    async kill() {
      if (exited !== undefined) return;
      child.kill('SIGKILL');
      await exitedPromise;
    },
  };
}

function readLog(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return '(no server log)';
  }
}

/** The server's ERROR lines (the cause of a panic is there, above the goroutine dump). */
function errorLines(log: string, max = 5): string {
  const lines = log.split('\n').filter((l) => /level=ERROR/.test(l)).slice(0, max);
  return lines.length ? `${lines.join('\n')}\n...\n` : '';
}

function tail(log: string, lines = 30): string {
  return log.trim().split('\n').slice(-lines).join('\n');
}
