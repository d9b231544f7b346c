/**
 * Telling the simulator from the live provider by what answers, never by an address (compose's
 * worker reaches its `simulator` service this way; src/simulator/forwarder.ts, identity.ts):
 * the worker's MPS_BASE_URL stays loopback, a forwarder there passes on only answers that carry the
 * simulator's mark, MPS_LIVE=1 with a simulator setting is refused, and the simulator refuses a
 * provider call from the network that did not come through a forwarder (a worker that dialled it
 * by name had to say MPS_LIVE=1). Real processes and sockets, all on loopback.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { ConfigError, loadEnv } from '../../src/config/env';
import { PROVIDER_PATHS } from '../../src/contract/provider';
import { startSimulator, type RunningSimulator } from '../../src/simulator';
import { buildProviderApp } from '../../src/simulator/server';
import { FaultEngine } from '../../src/simulator/faults';
import { FORWARDED_REQUEST_HEADER, NOT_FORWARDED_MESSAGE, SIMULATOR_ANSWER_HEADER } from '../../src/simulator/identity';
import { startForwarder } from '../../src/simulator/forwarder';
import { Ledger } from '../../src/simulator/ledger';
import { Lifecycle } from '../../src/simulator/lifecycle';
import { Notifier } from '../../src/simulator/notifier';
import { resolveConfig } from '../../src/simulator/options';
import { SimState } from '../../src/simulator/state';
import { freePort } from '../../src/temporal/ports';
import { linkToPaid, swapToConfirmed } from '../helpers/field';
import { uniqueRef } from '../helpers/fixtures';
import { type MpfProcess, mpfAppEnv, runMpf, spawnMpf } from '../helpers/processes';
import { SIM_CREDENTIALS } from '../helpers/provider';
import { getTestTemporal } from '../helpers/temporal';

const ROOT = path.join(__dirname, '..', '..');
const FORWARDER = ['-r', 'tsx/cjs', 'src/simulator/forwarder.ts'];
const API_KEY = 'forwarder-test-api-key-0123456789';
const creds = { MPS_SECRET_KEY: SIM_CREDENTIALS.secretKey, MPS_ACCESS_TOKEN: SIM_CREDENTIALS.accessToken, MPS_MERCHANT_REF: SIM_CREDENTIALS.merchantRef };

/** Only what a user's shell (or a container) would have, plus `extra`. */
const userEnv = (extra: Record<string, string>): NodeJS.ProcessEnv => ({ PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: 'warn', ...extra });

/** The forwarder wrapping `command`, as compose's worker entrypoint runs it (there from dist/). */
function spawnForwarded(command: string[], env: NodeJS.ProcessEnv) {
  const child = spawn(process.execPath, [...FORWARDER, ...command], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => out, exited };
}

/** A plain HTTP server on loopback that records what it is asked; `answer` decides each answer. */
async function recorder(answer: (n: number, req: http.IncomingMessage, res: http.ServerResponse) => void) {
  const seen: Array<{ method: string; url: string; headers: http.IncomingHttpHeaders }> = [];
  const server = http.createServer((req, res) => {
    seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    req.resume();
    req.on('end', () => answer(seen.length, req, res));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, seen, close: () => new Promise<void>((r) => server.close(() => r())) };
}

const json = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
};

describe('the configuration of a simulator reached through the forwarder', () => {
  const compose = { MPS_BASE_URL: 'http://127.0.0.1:8090', MPS_SIMULATOR_UPSTREAM: 'http://simulator:8090' };
  const refusal = (env: Record<string, string>): string => {
    try {
      loadEnv(env);
    } catch (e) {
      assert.ok(e instanceof ConfigError);
      return e.message;
    }
    return assert.fail(`accepted ${JSON.stringify(env)}`);
  };

  test("accepts compose's worker setting (a loopback MPS_BASE_URL, the simulator by service name) without MPS_LIVE", () => {
    const env = loadEnv(compose);
    assert.equal(env.MPS_LIVE, false);
    assert.equal(env.MPS_SIMULATOR_UPSTREAM, 'http://simulator:8090');
  });

  test('refuses MPS_LIVE=1 beside a simulator setting, naming MPS_LIVE', () => {
    for (const on of ['1', 'true']) assert.match(refusal({ ...compose, MPS_LIVE: on }), /MPS_LIVE: is 1 \(the live provider, real money\) but MPS_SIMULATOR_UPSTREAM names a simulator/);
  });

  test('refuses it unless MPS_BASE_URL is the plain-HTTP loopback address the forwarder listens on, or with a path', () => {
    assert.match(refusal({ MPS_SIMULATOR_UPSTREAM: 'http://simulator:8090' }), /MPS_SIMULATOR_UPSTREAM: needs MPS_BASE_URL to be the plain-HTTP loopback address/);
    assert.match(refusal({ ...compose, MPS_BASE_URL: 'https://127.0.0.1:8090' }), /MPS_SIMULATOR_UPSTREAM: needs MPS_BASE_URL/);
    // A non-loopback MPS_BASE_URL is refused by both rules: no MPS_LIVE, and not where a forwarder listens.
    const both = refusal({ ...compose, MPS_BASE_URL: 'http://simulator:8090' });
    assert.match(both, /MPS_SIMULATOR_UPSTREAM: needs MPS_BASE_URL/);
    assert.match(both, /MPS_BASE_URL: is not a loopback address; set MPS_LIVE=1/);
    assert.match(refusal({ ...compose, MPS_SIMULATOR_UPSTREAM: 'http://simulator:8090/api' }), /MPS_SIMULATOR_UPSTREAM: must be an origin/);
  });

  test('mpf worker with MPS_LIVE=1 and a simulator setting exits non-zero naming MPS_LIVE, before it dials anything', async () => {
    const r = await runMpf(['worker'], userEnv({ ...compose, ...creds, MPS_LIVE: '1', NODE_ENV: 'production', PAYLOAD_ENCRYPTION_KEYS: 'k1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=', TEMPORAL_ADDRESS: '127.0.0.1:9' }));
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /MPS_LIVE: is 1 \(the live provider, real money\) but MPS_SIMULATOR_UPSTREAM names a simulator/);
    assert.doesNotMatch(r.stdout + r.stderr, /polling task queue|cannot connect to Temporal/);
  });
});

describe('the simulator marks every answer and answers provider calls from the network only through a forwarder', () => {
  /** The provider app of a fresh simulator, for requests from any peer address (fastify's inject). */
  function providerApp() {
    const config = resolveConfig({});
    const ledger = new Ledger();
    const faults = new FaultEngine(config.seed);
    const notifier = new Notifier(config, ledger, faults);
    const ctx = { config, ledger, faults, notifier, state: new SimState(config, ledger, notifier), life: new Lifecycle(), checkoutBase: 'http://127.0.0.1:1' };
    return { app: buildProviderApp(ctx, false), ledger, close: () => notifier.close() };
  }
  const categories = { method: 'GET' as const, url: PROVIDER_PATHS.categories, headers: { 'x-merchant-ref': SIM_CREDENTIALS.merchantRef } };

  test('a provider call from a non-loopback peer without the forwarder mark is refused (421, naming MPS_LIVE), and nothing is recorded', async () => {
    const { app, ledger, close } = providerApp();
    try {
      const refused = await app.inject({ ...categories, remoteAddress: '172.18.0.7' });
      assert.equal(refused.statusCode, 421);
      assert.equal(refused.json().message, NOT_FORWARDED_MESSAGE);
      assert.match(NOT_FORWARDED_MESSAGE, /MPS_LIVE=1/);
      assert.equal(refused.headers[SIMULATOR_ANSWER_HEADER], 'no-money-moves');
      const swap = await app.inject({ method: 'POST', url: PROVIDER_PATHS.swapInit, remoteAddress: '10.0.0.9', headers: { authorization: `Bearer ${SIM_CREDENTIALS.secretKey}` }, payload: {} });
      assert.equal(swap.statusCode, 421);
      assert.equal(ledger.query({}).requests.length, 0, 'a refused call reaches no endpoint');
      // Through a forwarder, or from loopback, the same call is answered.
      assert.equal((await app.inject({ ...categories, remoteAddress: '172.18.0.7', headers: { ...categories.headers, [FORWARDED_REQUEST_HEADER]: '1' } })).statusCode, 200);
      for (const peer of ['127.0.0.1', '::1', '::ffff:127.0.0.1']) assert.equal((await app.inject({ ...categories, remoteAddress: peer })).statusCode, 200, peer);
    } finally {
      await app.close();
      await close();
    }
  });

  test('every answer carries the mark: success, refusal, unknown route, control API', async () => {
    const sim = await startSimulator({ port: 0, checkoutPort: 0 });
    try {
      for (const [url, init] of [
        [PROVIDER_PATHS.categories, { headers: { 'x-merchant-ref': SIM_CREDENTIALS.merchantRef } }],
        [PROVIDER_PATHS.swapInit, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }],
        ['/nowhere', {}],
        ['/_sim/ledger', {}],
      ] as Array<[string, RequestInit]>) {
        const res = await fetch(`${sim.baseUrl}${url}`, init);
        await res.arrayBuffer();
        assert.equal(res.headers.get(SIMULATOR_ANSWER_HEADER), 'no-money-moves', `${url} answered ${res.status} without the mark`);
      }
    } finally {
      await sim.close();
    }
  });
});

describe('the forwarder', () => {
  test('refuses to run its command when what answers upstream lacks the mark (a stand-in for the live provider): one GET / without credentials, nothing else', async () => {
    const live = await recorder((_n, _req, res) => json(res, 404, { message: 'Not Found' }));
    const marker = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'mpf-fwd-')), 'ran');
    try {
      const port = await freePort();
      const run = spawnForwarded(['node', '-e', `require('fs').writeFileSync(${JSON.stringify(marker)}, 'ran')`], userEnv({ MPS_BASE_URL: `http://127.0.0.1:${port}`, MPS_SIMULATOR_UPSTREAM: live.url, ...creds }));
      assert.equal(await run.exited, 1, run.output());
      assert.match(run.output(), /answered HTTP 404 without the simulator's mark \(x-mpf-simulator\): it may be the live provider/);
      assert.equal(fs.existsSync(marker), false, 'the command ran');
      assert.deepEqual(live.seen.map((r) => `${r.method} ${r.url}`), ['GET /']);
      for (const h of ['authorization', 'x-merchant-ref']) assert.equal(live.seen[0]?.headers[h], undefined, h);
      await assert.rejects(fetch(`http://127.0.0.1:${port}/`), 'nothing listens on MPS_BASE_URL');
    } finally {
      await live.close();
      fs.rmSync(path.dirname(marker), { recursive: true, force: true });
    }
  });

  test('an answer without the mark in the middle of a run is answered 502 and stops the forwarder and its command (exit 1)', async () => {
    // Answers as the simulator twice (the check, the first call), then as something else.
    const upstream = await recorder((n, _req, res) => json(res, 200, { status: 'success', n }, n <= 2 ? { [SIMULATOR_ANSWER_HEADER]: 'no-money-moves' } : {}));
    try {
      const port = await freePort();
      const base = `http://127.0.0.1:${port}`;
      // Like a worker, the command drains on SIGTERM (here: half a second) rather than dying at once.
      const script = `process.on('SIGTERM', () => setTimeout(() => process.exit(0), 500)); (async () => { for (const i of [1, 2]) { const r = await fetch('${base}/x/' + i); console.log('call', i, r.status, await r.text()); } setInterval(() => {}, 1000); })()`;
      const run = spawnForwarded(['node', '-e', script], userEnv({ MPS_BASE_URL: base, MPS_SIMULATOR_UPSTREAM: upstream.url }));
      assert.equal(await run.exited, 1, run.output());
      assert.match(run.output(), /call 1 200 \{"status":"success","n":2\}/);
      assert.match(run.output(), /call 2 502 .*forwarder: .*without the simulator's mark/);
      assert.match(run.output(), /forwarder: .*without the simulator's mark.*; stopping node -e/);
      assert.deepEqual(upstream.seen.map((r) => r.url), ['/', '/x/1', '/x/2']);
      for (const r of upstream.seen) assert.equal(r.headers[FORWARDED_REQUEST_HEADER], '1', 'every request carries the forwarder mark');
    } finally {
      await upstream.close();
    }
  });

  test('a simulator that cannot be reached: 502 "nothing was forwarded", then connections are refused (nothing sent), then it forwards again once the simulator is back', async () => {
    const simPort = await freePort();
    let sim: RunningSimulator | undefined = await startSimulator({ port: simPort, checkoutPort: 0 });
    const port = await freePort();
    const lines: string[] = [];
    const fwd = await startForwarder({ host: '127.0.0.1', port, upstream: sim.baseUrl, log: (l) => lines.push(l), retryMs: 100 });
    const call = () => fetch(`http://127.0.0.1:${port}${PROVIDER_PATHS.categories}`, { headers: { 'x-merchant-ref': SIM_CREDENTIALS.merchantRef } });
    try {
      assert.equal((await call()).status, 200);
      await sim.close();
      sim = undefined;
      const down = await call();
      assert.equal(down.status, 502);
      assert.match(await down.text(), /cannot be reached \(ECONNREFUSED\); nothing was forwarded/);
      const refused = await call().then(() => undefined, (e: Error & { cause?: { code?: string } }) => e.cause?.code);
      assert.equal(refused, 'ECONNREFUSED', 'the next connection is refused: the provider client retries it as "nothing sent"');
      sim = await startSimulator({ port: simPort, checkoutPort: 0 });
      let back: Response | undefined;
      for (let i = 0; i < 100 && !back; i++) {
        back = await call().catch(() => undefined);
        if (!back) await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal(back?.status, 200);
      assert.ok(lines.some((l) => /answers again; listening on/.test(l)), lines.join('\n'));
    } finally {
      await fwd.close();
      await sim?.close();
    }
  });
});

describe('a worker as compose runs it: NODE_ENV=production, a loopback MPS_BASE_URL, the simulator as another process behind the forwarder, no MPS_LIVE', () => {
  const procs: Array<{ kill(signal?: NodeJS.Signals): Promise<void> }> = [];
  let simulatorUrl = '';
  let gatewayUrl = '';
  let worker: ReturnType<typeof spawnForwarded>;

  before(async () => {
    const temporal = await getTestTemporal();
    const sim = spawnMpf(['simulator', '--port', '0'], userEnv({}));
    procs.push(sim);
    simulatorUrl = (await sim.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+)/))[1]!;
    const env = { ...mpfAppEnv({ temporal, taskQueue: uniqueRef('forwarded'), simulatorUrl, apiKey: API_KEY }), LOG_LEVEL: 'info' };
    const forwardedAt = `http://127.0.0.1:${await freePort()}`;
    worker = spawnForwarded(['node', 'bin/mpf.cjs', 'worker'], userEnv({ ...env, NODE_ENV: 'production', MPS_BASE_URL: forwardedAt, MPS_SIMULATOR_UPSTREAM: simulatorUrl }));
    procs.push({
      kill: async (signal = 'SIGTERM') => {
        if (worker.child.exitCode === null) worker.child.kill(signal);
        await worker.exited;
      },
    });
    const gateway: MpfProcess = spawnMpf(['gateway', '--port', '0'], userEnv(env));
    procs.push(gateway);
    gatewayUrl = (await gateway.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+)/))[1]!;
    const deadline = Date.now() + 120_000;
    while (!/worker: polling task queue/.test(worker.output())) {
      assert.ok(Date.now() < deadline && worker.child.exitCode === null, `the worker did not start:\n${worker.output()}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  });

  after(async () => {
    await Promise.all(procs.map((p) => p.kill('SIGTERM')));
  });

  test('a swap confirms and a link is paid through mpf gateway; the simulator saw every call through the forwarder', async () => {
    assert.match(worker.output(), /forwarder: http:\/\/127\.0\.0\.1:\d+ -> the provider simulator at http:\/\/127\.0\.0\.1:\d+; it answered as the simulator/);
    assert.match(worker.output(), /provider at http:\/\/127\.0\.0\.1:\d+/);
    const target = { gatewayUrl, apiKey: API_KEY, simulatorUrl };
    const swapRef = uniqueRef('fwd-swap');
    await swapToConfirmed(target, swapRef);
    await linkToPaid(target, uniqueRef('fwd-link'));
    const ledger = (await (await fetch(`${simulatorUrl}/_sim/ledger?ref=${swapRef}`)).json()) as { requests: Array<{ headers: Record<string, string> }> };
    assert.ok(ledger.requests.length >= 2);
    for (const r of ledger.requests) assert.equal(r.headers[FORWARDED_REQUEST_HEADER], '1', 'the call came through the forwarder');
  });

  test('SIGTERM reaches the worker through the forwarder: it drains and both exit 0', async () => {
    worker.child.kill('SIGTERM');
    assert.equal(await worker.exited, 0, worker.output());
  });
});
