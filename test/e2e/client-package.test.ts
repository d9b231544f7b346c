/**
 * The light client package, @merchant-payment-flows/client (packages/client, built from
 * src/http-client), the way a merchant's service gets it: `npm pack` (its prepack builds it), the
 * tarball unpacked into a fresh project with the dependencies it declares copied from this
 * checkout's node_modules (nothing from a registry), its manifest checked to be publishable,
 * node_modules measured against the size its README states, then `tsc` with skipLibCheck false on
 * a file that uses it. Then against a real gateway (Temporal dev server,
 * simulator, worker) behind a loopback proxy that answers 503 with Retry-After or drops the
 * connection (before the gateway saw the request, or after it answered): each logical start,
 * create and PIN through the client does its work at the provider once and answers it.
 */
import { before, after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { createMpfClient, MpfApiError, MpfTemporalUnavailableError, type RetryInfo } from '../../src/http-client';
import { generateSecret, signatureHeaders } from '../../src/merchant-events/signing';
import { API_KEY, gatewayHarnessForSuite } from '../helpers/gateway';
import { linkBody, SIM_PIN, swapBody, uniqueRef } from '../helpers/fixtures';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '..', '..');
const PACKAGE_DIR = path.join(ROOT, 'packages', 'client');
const NAME = '@merchant-payment-flows/client';
/**
 * What the package's README (and docs/integrating.md) say it adds to a service's node_modules:
 * "adds N KiB to `node_modules`", N the bytes of every file the package and its dependencies put
 * there (as `npm install` lays them out; directories and disk blocks not counted), in KiB rounded
 * to the nearest 10. The measurement must round to the figure they state.
 */
const INSTALLED_SIZE = /adds (\d+) KiB to `node_modules`/;
const statedInstalledKiB = (file: string): number => {
  const m = INSTALLED_SIZE.exec(fs.readFileSync(path.join(ROOT, file), 'utf8').replace(/\s+/g, ' '));
  assert.ok(m, `${file} states the installed size ("adds N KiB to \`node_modules\`")`);
  return Number(m[1]);
};
const roundedKiB = (bytes: number): number => Math.round(bytes / 1024 / 10) * 10;

/** What the consumer checks at compile time (wrong types must not compile) and runs against the gateway. */
const CHECK_TS = `
import { createMpfClient, createGatewayClient, verifyEvent, MpfApiError, MpfDuplicateError, MpfSignatureVerificationError,
  type MerchantEvent, type MerchantEventOf, type StartedSwap, type SwapStartRequest } from '${NAME}';

const mpf = createMpfClient({ baseUrl: process.env.GATEWAY_URL ?? 'http://127.0.0.1:9', apiKey: process.env.GATEWAY_API_KEY, maxRetries: 2, deadlineMs: 60_000 });
const gw = createGatewayClient({ baseUrl: 'http://127.0.0.1:9', retry: true });
const body = (txn_ref: string): SwapStartRequest => ({ user_ref: 'consumer', from_currency: 'USD', to_currency: 'NGN', amount: 10, txn_ref });
// @ts-expect-error amount is a number
const wrong: SwapStartRequest = { ...body('t'), amount: '10' };
void wrong;
export async function viaHttp(): Promise<void> {
  // @ts-expect-error the gateway has no such path
  await gw.GET('/v1/nowhere');
}

/** What a receiver does with a delivery: typed by its type. */
export function onEvent(raw: string, headers: Record<string, string>, secret: string): string {
  const event: MerchantEvent = verifyEvent(raw, headers, secret);
  switch (event.type) {
    case 'swap.confirmed': {
      const state: 'confirmed' = event.data.state;
      return state + ' ' + event.data.txn_ref;
    }
    case 'payment_link.paid':
      return event.data.link_id;
    // @ts-expect-error no such event type
    case 'swap.refunded':
      return 'never';
    default:
      return event.type;
  }
}
export type Paid = MerchantEventOf<'payment_link.paid'>;

async function main(): Promise<void> {
  const ref = process.argv[2]!;
  const started: StartedSwap = await mpf.startSwap(body(ref));
  let duplicate = '';
  try {
    await mpf.startSwap(body(ref));
  } catch (err) {
    if (err instanceof MpfDuplicateError) duplicate = err.swap?.swap_id + ' ' + err.status + ' ' + (err instanceof MpfApiError);
  }
  const view = await mpf.getSwap(started.swap_id);
  const delivery = JSON.parse(process.env.EVENT_DELIVERY!) as { body: string; headers: Record<string, string>; secret: string };
  let forged = '';
  try {
    onEvent(delivery.body, delivery.headers, 'whsec_' + Buffer.alloc(32).toString('base64'));
  } catch (err) {
    if (err instanceof MpfSignatureVerificationError) forged = err.reason;
  }
  console.log(JSON.stringify({ started: started.swap_id, state: view.state, duplicate, event: onEvent(delivery.body, delivery.headers, delivery.secret), forged }));
}
if (process.env.GATEWAY_URL) main().catch((err) => { console.error(err); process.exit(1); });
`;

let tmp: string;
let consumer: string | undefined;

before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mpf-client-package-'));
});
after(() => {
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** Bytes of the files under `dir` (symbolic links not followed). */
function sizeOf(dir: string): number {
  let total = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) total += sizeOf(p);
    else total += fs.lstatSync(p).size;
  }
  return total;
}

/** Copies `name` and, recursively, its dependencies from this checkout's node_modules, as `npm install` lays them out (flat). */
function installFromCheckout(name: string, into: string, done = new Set<string>()): void {
  if (done.has(name)) return;
  done.add(name);
  const from = path.join(ROOT, 'node_modules', name);
  fs.cpSync(fs.realpathSync(from), path.join(into, name), { recursive: true, dereference: true });
  const manifest = JSON.parse(fs.readFileSync(path.join(from, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> };
  for (const dep of Object.keys(manifest.dependencies ?? {})) installFromCheckout(dep, into, done);
}

const node = (args: string[], cwd: string, env: NodeJS.ProcessEnv = {}) =>
  run(process.execPath, args, { cwd, env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env }, timeout: 120_000, maxBuffer: 8 * 1024 * 1024 });

describe('the light client package, packed and installed into a fresh project', () => {
  test('packs publishable, with its declarations, licence and changelog and no Temporal, adds to node_modules the KiB its README states, and type-checks with skipLibCheck false', { timeout: 600_000 }, async (t) => {
    const packed = await run('npm', ['pack', '--json', '--pack-destination', tmp], { cwd: PACKAGE_DIR, timeout: 420_000, maxBuffer: 8 * 1024 * 1024 });
    const [{ filename, files }] = JSON.parse(packed.stdout) as Array<{ filename: string; files: Array<{ path: string }> }>;
    const paths = files.map((f) => f.path);
    for (const f of ['package.json', 'README.md', 'CHANGELOG.md', 'LICENSE', 'dist/index.js', 'dist/index.d.ts', 'dist/gateway-api.d.ts', 'dist/events.d.ts', 'dist/errors.d.ts']) assert.ok(paths.includes(f), `the tarball has ${f}`);
    assert.deepEqual(paths.filter((p) => !/^(package\.json|README\.md|CHANGELOG\.md|LICENSE|dist\/[\w-]+\.(js|d\.ts))$/.test(p)), [], 'nothing but the build, the manifest, the README, the changelog and the licence');

    consumer = path.join(tmp, 'consumer');
    const modules = path.join(consumer, 'node_modules');
    const installed = path.join(modules, ...NAME.split('/'));
    fs.mkdirSync(installed, { recursive: true });
    await run('tar', ['-xzf', path.join(tmp, filename), '-C', installed, '--strip-components=1']);
    const manifest = JSON.parse(fs.readFileSync(path.join(installed, 'package.json'), 'utf8')) as {
      version: string;
      private?: boolean;
      license: string;
      publishConfig?: { access?: string };
      dependencies: Record<string, string>;
      devDependencies?: unknown;
      peerDependencies?: unknown;
    };
    // Publishable: not private, a licence (its text shipped, the repository's own), a version the
    // changelog describes, and public access (a scoped package is otherwise published restricted).
    assert.equal(manifest.private, undefined, 'not private');
    assert.equal(manifest.license, 'Apache-2.0');
    assert.equal(fs.readFileSync(path.join(installed, 'LICENSE'), 'utf8'), fs.readFileSync(path.join(ROOT, 'LICENSE'), 'utf8'), 'the licence text is the repository\'s');
    assert.match(fs.readFileSync(path.join(installed, 'LICENSE'), 'utf8'), /Apache License\s+Version 2\.0/);
    assert.match(manifest.version, /^\d+\.\d+\.\d+$/);
    assert.ok(fs.readFileSync(path.join(installed, 'CHANGELOG.md'), 'utf8').includes(`\n## ${manifest.version}\n`), `the changelog has a section for ${manifest.version}`);
    assert.equal(manifest.publishConfig?.access, 'public');
    assert.deepEqual(Object.keys(manifest.dependencies), ['openapi-fetch'], 'openapi-fetch is its one dependency');
    assert.equal(manifest.peerDependencies, undefined);
    for (const dep of Object.keys(manifest.dependencies)) installFromCheckout(dep, modules);
    fs.writeFileSync(path.join(consumer, 'package.json'), JSON.stringify({ name: 'merchant-service', private: true, dependencies: { [NAME]: `file:../${filename}` } }, null, 2));

    const bytes = sizeOf(modules);
    const listed = fs.readdirSync(modules).flatMap((d) => (d.startsWith('@') ? fs.readdirSync(path.join(modules, d)).map((s) => `${d}/${s}`) : [d]));
    t.diagnostic(`node_modules: ${bytes} bytes (${(bytes / 1024).toFixed(1)} KiB) in ${listed.length} packages (${listed.join(', ')}); tarball ${(fs.statSync(path.join(tmp, filename)).size / 1024).toFixed(0)} KiB`);
    assert.ok(!listed.some((p) => p.startsWith('@temporalio/')), `no Temporal package: ${listed.join(', ')}`);
    for (const f of fs.readdirSync(path.join(installed, 'dist'))) {
      assert.doesNotMatch(fs.readFileSync(path.join(installed, 'dist', f), 'utf8'), /@temporalio|require\("\.\.\//, `dist/${f} loads nothing outside the package`);
    }

    // The service's own dev dependency for Node's types (what any TypeScript service on Node has), linked after the measurement.
    for (const dep of ['@types/node', 'undici-types']) {
      const to = path.join(modules, dep);
      fs.mkdirSync(path.dirname(to), { recursive: true });
      fs.symlinkSync(path.join(ROOT, 'node_modules', dep), to, 'dir');
    }
    fs.writeFileSync(
      path.join(consumer, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { target: 'ES2022', module: 'node16', moduleResolution: 'node16', lib: ['ES2022'], types: ['node'], strict: true, skipLibCheck: false, rootDir: 'src', outDir: 'dist' },
        include: ['src/*.ts'],
      }),
    );
    fs.mkdirSync(path.join(consumer, 'src'));
    fs.writeFileSync(path.join(consumer, 'src', 'check.ts'), CHECK_TS);
    const tsc = await run(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', '.', '--skipLibCheck', 'false'], { cwd: consumer, timeout: 300_000 }).catch(
      (err: { stdout?: string; stderr?: string }) => assert.fail(`tsc --skipLibCheck false in the consumer failed:\n${err.stdout}${err.stderr}`),
    );
    assert.equal(tsc.stdout.trim(), '');

    // Loaded by name, as CommonJS and as an ES module.
    const esm = await node(['--input-type=module', '-e', `const m = await import('${NAME}'); console.log([typeof m.createMpfClient, typeof m.verifyEvent, typeof m.MpfPendingError, typeof m.createGatewayClient].join(' '))`], consumer);
    assert.equal(esm.stdout.trim(), 'function function function function');

    // Last, so that a drift leaves the consumer's checks above (and the tests that use it) run.
    for (const page of ['packages/client/README.md', 'docs/integrating.md']) {
      assert.equal(statedInstalledKiB(page), roundedKiB(bytes), `${page}: installed, the package adds ${(bytes / 1024).toFixed(1)} KiB: write "adds ${roundedKiB(bytes)} KiB to \`node_modules\`"`);
    }
  });
});

type Fault = '503' | 'drop-before' | 'drop-early' | 'drop-after';

/**
 * A loopback proxy in front of the gateway. For each request it takes the next fault queued under
 * the request's txn_ref / txn_merchant_ref (or its path), else passes it on:
 *   503          answered by the proxy: 503 temporal_unavailable, Retry-After 1 (the gateway never sees it)
 *   drop-before  the connection is destroyed before the gateway sees the request
 *   drop-early   the request goes to the gateway and the connection is destroyed at once (the gateway goes on)
 *   drop-after   the request goes to the gateway; the connection is destroyed once it answered (the answer is lost)
 */
async function startFaultyProxy(target: string) {
  const faults = new Map<string, Fault[]>();
  const seen: Array<{ ref: string; key: string | undefined; fault: Fault | 'pass' }> = [];
  const upstream = new URL(target);
  const server = http.createServer((req, res) => {
    res.on('error', () => undefined);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      let ref = req.url ?? '';
      try {
        const json = JSON.parse(body.toString()) as { txn_ref?: string; txn_merchant_ref?: string };
        ref = json.txn_ref ?? json.txn_merchant_ref ?? ref;
      } catch {
        // not JSON: keyed by its path
      }
      const fault = faults.get(ref)?.shift() ?? 'pass';
      seen.push({ ref, key: req.headers['idempotency-key'] as string | undefined, fault });
      if (fault === '503') {
        res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' });
        res.end(JSON.stringify({ error: 'temporal_unavailable', message: 'injected by the test proxy' }));
        return;
      }
      if (fault === 'drop-before') return void req.socket.destroy();
      const up = http.request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: { ...req.headers, host: upstream.host } }, (answer) => {
        const parts: Buffer[] = [];
        answer.on('data', (c: Buffer) => parts.push(c));
        answer.on('end', () => {
          if (fault !== 'pass') return void req.socket.destroy();
          res.writeHead(answer.statusCode!, answer.headers);
          res.end(Buffer.concat(parts));
        });
      });
      up.on('error', () => req.socket.destroy());
      up.end(body);
      if (fault === 'drop-early') req.socket.destroy();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    faults,
    seen,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

describe('the client against a real gateway behind a proxy that answers 503 and drops connections', () => {
  const h = gatewayHarnessForSuite();
  let proxy: Awaited<ReturnType<typeof startFaultyProxy>>;
  const retries: RetryInfo[] = [];
  const client = (opts: { maxRetries?: number } = {}) =>
    createMpfClient({ baseUrl: proxy.url, apiKey: API_KEY, initialDelayMs: 200, maxDelayMs: 1_000, onRetry: (i) => retries.push(i), ...opts });
  const ledger = async (ref: string, endpoint: string) => (await h.stack.control.ledger({ ref, endpoint })).requests.length;

  before(async () => {
    proxy = await startFaultyProxy(h.gw.url);
  });
  after(async () => {
    await proxy?.close();
  });

  test('each logical start, create and PIN through 503s and dropped connections answers its work, done once at the provider', { timeout: 240_000 }, async () => {
    const mpf = client();
    const swaps = [uniqueRef('retry-swap-a'), uniqueRef('retry-swap-b'), uniqueRef('retry-swap-c')];
    const link = uniqueRef('retry-link');
    proxy.faults.set(swaps[0]!, ['503', 'drop-after', 'drop-before']);
    proxy.faults.set(swaps[1]!, ['drop-early', 'drop-after']);
    proxy.faults.set(swaps[2]!, ['drop-after', '503', 'drop-after']);
    proxy.faults.set(link, ['drop-after', '503']);
    const [started, created] = await Promise.all([Promise.all(swaps.map((ref) => mpf.startSwap(swapBody(ref)))), mpf.createLink(linkBody(link))]);

    for (const [i, ref] of swaps.entries()) {
      const s = started[i]!;
      assert.equal(s.swap_id, `swap-${ref}`);
      assert.equal(s.state, 'awaiting_pin');
      assert.ok(s.pin_token, 'the answer of the start itself, with its pin_token (not a duplicate refusal)');
      assert.equal(await ledger(ref, 'swap.init'), 1, `${ref}: one initialisation at the provider`);
      const calls = proxy.seen.filter((c) => c.ref === ref);
      assert.ok(calls.length >= 3, `${ref}: retried (${calls.map((c) => c.fault).join(', ')})`);
      assert.equal(new Set(calls.map((c) => c.key)).size, 1, `${ref}: one Idempotency-Key on every attempt`);
    }
    assert.equal(created.link_id, `paylink-${link}`);
    assert.equal(await ledger(link, 'link.create'), 1, 'one link created at the provider');
    assert.ok(retries.some((r) => r.status === 503) && retries.some((r) => r.code === 'UND_ERR_SOCKET'), JSON.stringify(retries.map((r) => r.status ?? r.code)));

    // The PIN: its answer lost once; the retry answers the outcome, and the provider confirmed once.
    const swap = started[0]!;
    proxy.faults.set(`/v1/swaps/${swap.swap_id}/pin`, ['drop-after']);
    const outcome = await mpf.submitPin(swap.swap_id, swap.pin_token, SIM_PIN);
    assert.equal(outcome.outcome, 'confirmed');
    assert.equal(await ledger(swaps[0]!, 'swap.confirm'), 1, 'one confirmation at the provider');
    assert.equal((await mpf.getSwap(swap.swap_id)).state, 'confirmed');
  });

  test('a start whose retries run out throws the typed error with its key; called again with that key it answers the same swap', { timeout: 120_000 }, async () => {
    const ref = uniqueRef('retry-later');
    proxy.faults.set(ref, ['drop-after', '503', '503']);
    const err = await client({ maxRetries: 2 }).startSwap(swapBody(ref)).then(() => undefined, (e: unknown) => e);
    assert.ok(err instanceof MpfTemporalUnavailableError, String(err));
    assert.ok(err instanceof MpfApiError);
    assert.equal(err.status, 503);
    assert.equal(err.retryAfterSeconds, 1);
    assert.ok(err.idempotencyKey);
    assert.equal(await ledger(ref, 'swap.init'), 1, 'the first attempt started it');

    const again = await client().startSwap(swapBody(ref), { idempotencyKey: err.idempotencyKey });
    assert.equal(again.swap_id, `swap-${ref}`);
    assert.ok(again.pin_token);
    assert.equal(await ledger(ref, 'swap.init'), 1, 'and nothing was initialised again');
    assert.deepEqual([...new Set(proxy.seen.filter((c) => c.ref === ref).map((c) => c.key))], [err.idempotencyKey]);
  });

  test('the installed package, compiled in the consumer, starts and reads a swap through the gateway and verifies a signed event', { timeout: 120_000 }, async () => {
    assert.ok(consumer, 'the consumer project was built by the packaging test');
    const secret = generateSecret();
    const event = { id: 'evt_swap-x_2', type: 'swap.confirmed', timestamp: new Date().toISOString(), data: { object: 'swap', swap_id: 'swap-x', state: 'confirmed', previous_state: 'confirming', txn_ref: 'x', user_ref: 'u', from_currency: 'USD', to_currency: 'NGN', amount: 1, pin_attempts_used: 1, pin_attempts_left: 2 } };
    const body = JSON.stringify(event);
    const delivery = { body, headers: signatureHeaders([secret], event.id, new Date(), body), secret };
    const ref = uniqueRef('consumer');
    const r = await node(['dist/check.js', ref], consumer, { GATEWAY_URL: h.gw.url, GATEWAY_API_KEY: API_KEY, EVENT_DELIVERY: JSON.stringify(delivery) });
    assert.deepEqual(JSON.parse(r.stdout), { started: `swap-${ref}`, state: 'awaiting_pin', duplicate: `swap-${ref} 409 true`, event: 'confirmed x', forged: 'no_matching_signature' });
    assert.equal(await ledger(ref, 'swap.init'), 1);
  });
});
