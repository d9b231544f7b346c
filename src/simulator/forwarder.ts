/**
 * How a worker reaches a provider simulator that runs as a service of its own (compose's
 * `simulator`) without MPS_LIVE, and without an address deciding anything:
 *
 *   node dist/simulator/forwarder.js node bin/mpf.cjs worker
 *
 * with MPS_SIMULATOR_UPSTREAM (the simulator, e.g. http://simulator:8090) and MPS_BASE_URL (a
 * loopback address of the worker's own container, e.g. http://127.0.0.1:8090) asks what answers at
 * the upstream (GET /, no credential: nothing can move), and only when the answer carries the
 * simulator's mark (identity.ts) listens on MPS_BASE_URL and runs the command; it stops with it.
 * Each request is passed on with the forwarder's own mark (the simulator answers provider calls
 * from the network only with it), and each answer is passed back only when it carries the
 * simulator's mark. One that does not (what answers may be the live provider, where every call
 * moves real money) is answered 502 and stops the forwarder and the command: a loopback address
 * never leads a worker without MPS_LIVE to the live provider through here.
 *
 * A simulator that cannot be reached is not a failure of the request: nothing was sent, so the
 * forwarder stops listening (the worker's next connection is refused, which its provider client
 * retries as "nothing sent") and listens again once the simulator answers. A connection the
 * simulator drops without an answer (its reset and hang faults) is dropped the same way here.
 * Hand-written on undici and node:http (about a hundred lines): a general proxy library would add
 * a dependency and still not check the mark on every answer.
 */
import { spawn } from 'node:child_process';
import http from 'node:http';
import { constants as osConstants } from 'node:os';
import { pipeline } from 'node:stream/promises';
import { Agent, request, type Dispatcher } from 'undici';
import { ConfigError, loadEnv } from '../config/env';
import { networkCodeOf, NOTHING_SENT_CODES } from '../contract/network-codes';
import { FORWARDED_REQUEST_HEADER, SIMULATOR_ANSWER_HEADER } from './identity';

/** Headers of one connection only: never passed on. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'host']);

const passable = (headers: Record<string, string | string[] | undefined>): Record<string, string | string[]> =>
  Object.fromEntries(Object.entries(headers).filter((e): e is [string, string | string[]] => e[1] !== undefined && !HOP_BY_HOP.has(e[0].toLowerCase())));

export type Probe = { kind: 'simulator' } | { kind: 'not-simulator'; status: number } | { kind: 'unreachable'; code: string };

/** What answers at `origin`: GET / with no credential (nothing can move, at the live provider either). */
export async function probeUpstream(origin: string, dispatcher?: Dispatcher): Promise<Probe> {
  try {
    const res = await request(`${origin}/`, { method: 'GET', headers: { [FORWARDED_REQUEST_HEADER]: '1' }, headersTimeout: 5_000, bodyTimeout: 5_000, ...(dispatcher ? { dispatcher } : {}) });
    await res.body.dump();
    return res.headers[SIMULATOR_ANSWER_HEADER] !== undefined ? { kind: 'simulator' } : { kind: 'not-simulator', status: res.statusCode };
  } catch (e) {
    return { kind: 'unreachable', code: networkCodeOf(e) ?? 'UNKNOWN' };
  }
}

export class NotTheSimulatorError extends Error {
  override name = 'NotTheSimulatorError';
}

export const notTheSimulator = (origin: string, status: number): string =>
  `${origin} answered HTTP ${status} without the simulator's mark (${SIMULATOR_ANSWER_HEADER}): it may be the live provider, where every call moves real money; ` +
  'nothing is forwarded to it (going live is MPS_BASE_URL = the provider, MPS_LIVE=1, and no MPS_SIMULATOR_UPSTREAM)';

export interface ForwarderOptions {
  host: string;
  port: number;
  /** The simulator's origin (scheme, host, port). */
  upstream: string;
  log?: (line: string) => void;
  /** How often an unreachable simulator is asked again (default 1 s). */
  retryMs?: number;
}

export interface RunningForwarder {
  url: string;
  /** Resolves with the reason once an answer without the simulator's mark stopped the forwarder. */
  tripped: Promise<string>;
  close(): Promise<void>;
}

const answer = (res: http.ServerResponse, status: number, message: string): void => {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', connection: 'close' });
  res.end(JSON.stringify({ status: 'error', message: `forwarder: ${message}` }));
};

/** The forwarder (see the module's comment); listening once this resolves. */
export async function startForwarder(o: ForwarderOptions): Promise<RunningForwarder> {
  const origin = new URL(o.upstream).origin;
  const log = o.log ?? (() => undefined);
  const agent = new Agent({ keepAliveTimeout: 10_000, headersTimeout: 120_000, bodyTimeout: 120_000, connect: { timeout: 5_000 } });
  const servers = new Set<http.Server>();
  let listening: http.Server | undefined;
  let closed = false;
  let trip: (why: string) => void = () => undefined;
  const tripped = new Promise<string>((resolve) => (trip = resolve));

  const stopListening = (): void => {
    listening?.close();
    listening?.closeIdleConnections();
    listening = undefined;
  };
  const stop = (why: string): void => {
    if (closed) return;
    closed = true;
    stopListening();
    for (const s of servers) setImmediate(() => s.closeAllConnections());
    trip(why);
  };
  const listen = async (): Promise<void> => {
    const server = http.createServer((req, res) => void forward(req, res));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(o.port, o.host, () => resolve());
    });
    servers.add(server);
    server.once('close', () => servers.delete(server));
    listening = server;
  };
  /** Not listening while the simulator cannot be reached; listening again once it answers as the simulator. */
  const pause = (code: string): void => {
    if (!listening || closed) return;
    stopListening();
    log(`forwarder: the simulator at ${origin} cannot be reached (${code}); not listening until it answers again`);
    void (async () => {
      while (!closed) {
        await new Promise((r) => setTimeout(r, o.retryMs ?? 1_000));
        const p = closed ? undefined : await probeUpstream(origin, agent);
        if (p?.kind === 'not-simulator') return stop(notTheSimulator(origin, p.status));
        if (p?.kind === 'simulator' && !closed && (await listen().then(() => true, () => false))) {
          return log(`forwarder: the simulator at ${origin} answers again; listening on ${o.host}:${o.port}`);
        }
      }
    })();
  };

  const forward = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const gaveUp = new AbortController();
    res.once('close', () => {
      if (!res.writableFinished) gaveUp.abort();
    });
    let up: Dispatcher.ResponseData;
    try {
      up = await request(`${origin}${req.url ?? '/'}`, {
        method: (req.method ?? 'GET') as Dispatcher.HttpMethod,
        headers: { ...passable(req.headers), [FORWARDED_REQUEST_HEADER]: '1' },
        body: req.method === 'GET' || req.method === 'HEAD' ? null : req,
        dispatcher: agent,
        signal: gaveUp.signal,
      });
    } catch (e) {
      if (gaveUp.signal.aborted) return;
      const code = networkCodeOf(e) ?? 'UNKNOWN';
      if (!NOTHING_SENT_CODES.has(code)) return void req.socket.destroy(); // no answer from the simulator: none from here
      pause(code);
      return answer(res, 502, `the provider simulator at ${origin} cannot be reached (${code}); nothing was forwarded`);
    }
    if (up.headers[SIMULATOR_ANSWER_HEADER] === undefined) {
      up.body.dump().catch(() => undefined);
      res.once('finish', () => stop(notTheSimulator(origin, up.statusCode)));
      return answer(res, 502, notTheSimulator(origin, up.statusCode));
    }
    res.writeHead(up.statusCode, passable(up.headers));
    await pipeline(up.body, res).catch(() => req.socket.destroy());
  };

  await listen();
  return {
    url: `http://${o.host.includes(':') ? `[${o.host}]` : o.host}:${o.port}`,
    tripped,
    close: async () => {
      stop('closed');
      await agent.close();
    },
  };
}

/** Waits until the simulator answers as the simulator; throws at once when something else answers, and after `timeoutMs` when nothing does. */
export async function untilSimulatorAnswers(origin: string, timeoutMs: number, retryMs = 1_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const p = await probeUpstream(origin);
    if (p.kind === 'simulator') return;
    if (p.kind === 'not-simulator') throw new NotTheSimulatorError(notTheSimulator(origin, p.status));
    if (Date.now() + retryMs > deadline) throw new Error(`the simulator at ${origin} did not answer in ${Math.round(timeoutMs / 1000)} s (${p.code})`);
    await new Promise((r) => setTimeout(r, retryMs));
  }
}

/** How long the wrapper waits for the simulator to answer before it gives up (compose restarts it). */
const SIMULATOR_WAIT_MS = 120_000;

/**
 * Checks the simulator, forwards MPS_BASE_URL to it and runs `command` (its `node` is this Node);
 * returns the command's exit code, or 1 when the forwarder stopped it. SIGINT and SIGTERM are
 * passed to the command, which then ends as it would on its own (a worker drains).
 */
export async function runWithForwarder(command: string[], source: NodeJS.ProcessEnv = process.env, log: (line: string) => void = (l) => process.stdout.write(`${l}\n`)): Promise<number> {
  const [program, ...args] = command;
  if (!program) throw new ConfigError('give the command to run, e.g. node bin/mpf.cjs worker');
  const env = loadEnv(source);
  if (!env.MPS_SIMULATOR_UPSTREAM || !env.MPS_BASE_URL) {
    throw new ConfigError('MPS_SIMULATOR_UPSTREAM: is not set: there is no simulator to forward to (run the command itself)');
  }
  const origin = new URL(env.MPS_SIMULATOR_UPSTREAM).origin;
  const at = new URL(env.MPS_BASE_URL);
  await untilSimulatorAnswers(origin, SIMULATOR_WAIT_MS);
  const fwd = await startForwarder({ host: at.hostname.replace(/^\[(.*)\]$/, '$1'), port: Number(at.port || 80), upstream: origin, log });
  log(`forwarder: ${at.origin} -> the provider simulator at ${origin}; it answered as the simulator (no money moves)`);
  const child = spawn(program === 'node' ? process.execPath : program, args, { stdio: 'inherit', env: source });
  const onSignal = (signal: NodeJS.Signals): void => void child.kill(signal);
  process.on('SIGINT', onSignal).on('SIGTERM', onSignal);
  const exited = new Promise<number>((resolve) => {
    child.once('error', () => resolve(1));
    child.once('exit', (code, signal) => resolve(code ?? 128 + (signal ? osConstants.signals[signal] : 0)));
  });
  const outcome = await Promise.race([exited.then((code) => ({ code })), fwd.tripped.then((why) => ({ why }))]);
  let code: number;
  if ('why' in outcome) {
    log(`forwarder: ${outcome.why}; stopping ${command.join(' ')}`);
    child.kill('SIGTERM');
    const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(killer);
    code = 1;
  } else code = outcome.code;
  process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
  await fwd.close();
  return code;
}

if (require.main === module) {
  runWithForwarder(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (e: Error) => {
      process.stderr.write(`forwarder: ${e.message}\n`);
      process.exit(1);
    },
  );
}
