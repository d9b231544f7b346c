/**
 * merchant-payment-flows as a package, the way a merchant's backend gets it: `npm run build`'s
 * configuration (tsconfig.build.json, declarations included) into a copy of the package, `npm pack`,
 * the tarball unpacked into a tiny TypeScript project in a temp directory as `npm install` would (its
 * declared dependencies linked from this checkout's node_modules: the test installs nothing from a
 * registry), then `tsc` on that project: it imports `merchant-payment-flows` and
 * `merchant-payment-flows/http` by name, including the README's examples (examples/*.ts). The
 * compiled examples then run against the stack: the test's Temporal server, the simulator, a worker
 * and a gateway.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { startGateway, type RunningGateway } from '../../src/starter/gateway/main';
import { SIM_PIN, uniqueRef } from '../helpers/fixtures';
import { startStack, type Stack } from '../helpers/stack';
import { getTestTemporal } from '../helpers/temporal';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '..', '..');
const API_KEY = 'package-consumer-api-key-0123456789';
const ROOT_PACKAGE = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };

/** What the consumer checks at compile time (a wrong type must not compile) and at run time. */
const CHECK_TS = `
import { MpfClient, InputError, DuplicateFlowError, LimitExceededError, ProviderUnavailableError, PinBudgetExhaustedError, parseOrThrow, SwapStartBody, SWAP_WORKFLOW_TYPE, swapWorkflowId,
  type SwapStartRequest, type LinkCreateRequest, type SwapView, type SwapWorkflow, type StartedSwap } from 'merchant-payment-flows';
import { createGatewayClient, type paths, type StartedSwap as HttpStartedSwap } from 'merchant-payment-flows/http';

const good: SwapStartRequest = { user_ref: 'u', from_currency: 'USD', to_currency: 'NGN', amount: 10, txn_ref: 't-1' };
// @ts-expect-error amount is a number
const wrongType: SwapStartRequest = { ...good, amount: '10' };
// @ts-expect-error txn_ref is required
const missing: SwapStartRequest = { user_ref: 'u', from_currency: 'USD', to_currency: 'NGN', amount: 10 };
const link: LinkCreateRequest = { user_ref: 'u', txn_merchant_ref: 'r', amount: 1, full_name: 'A', email: 'a@b.co', phone: '1', redirect_url: 'https://x.test/r' };
// The workflow reference carries the workflow's own types.
type SwapResult = Awaited<ReturnType<SwapWorkflow>>;
const state: SwapResult['state'] = 'confirmed';
export async function start(mpf: MpfClient): Promise<SwapView> {
  const started: StartedSwap = await mpf.startSwap(good);
  // @ts-expect-error startSwap takes a SwapStartRequest, not anything
  await mpf.startSwap({ nonsense: true });
  return started.swap;
}
const gateway = createGatewayClient({ baseUrl: 'http://127.0.0.1:9', apiKey: 'k' });
export async function viaHttp(): Promise<HttpStartedSwap | undefined> {
  // @ts-expect-error the gateway has no such path
  await gateway.GET('/v1/nowhere');
  return (await gateway.POST('/v1/swaps', { body: good })).data;
}
type StartPath = paths['/v1/swaps']['post'];
export type { StartPath };
void [wrongType, missing, link, state];

let refused = '';
try {
  parseOrThrow(SwapStartBody, { ...good, amount: -1 });
} catch (err) {
  if (err instanceof InputError) refused = err.message;
}
console.log(JSON.stringify({ client: typeof MpfClient, duplicate: typeof DuplicateFlowError, refusals: [typeof LimitExceededError, typeof ProviderUnavailableError, typeof PinBudgetExhaustedError].join(), type: SWAP_WORKFLOW_TYPE, id: swapWorkflowId('t-1'), refused, http: typeof gateway.POST }));
`;

let tmp: string;
let consumer: string;
let stack: Stack | undefined;
let gateway: RunningGateway | undefined;

before(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mpf-consumer-'));
});

after(async () => {
  await gateway?.close();
  await stack?.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
  await (await getTestTemporal()).shutdown();
});

const node = (args: string[], cwd: string, env: NodeJS.ProcessEnv = {}) =>
  run(process.execPath, args, { cwd, env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env }, timeout: 120_000, maxBuffer: 8 * 1024 * 1024 });

describe('the package, consumed by name from its npm pack tarball', () => {
  test('builds with declarations, packs, and a TypeScript project outside src/ type-checks against it', { timeout: 480_000 }, async () => {
    // The package as `npm run build` makes it, in a copy (this checkout's dist/ is left alone).
    const pkg = path.join(tmp, 'pkg');
    fs.mkdirSync(pkg);
    for (const f of ['package.json', 'README.md', 'bin', 'docs']) fs.cpSync(path.join(ROOT, f), path.join(pkg, f), { recursive: true });
    await run(path.join(ROOT, 'node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.build.json', '--outDir', path.join(pkg, 'dist')], { cwd: ROOT, timeout: 300_000 });
    for (const f of ['index.d.ts', 'index.js', 'http-client/index.d.ts', 'http-client/gateway-api.d.ts', 'starter/client/mpf-client.d.ts']) {
      assert.ok(fs.existsSync(path.join(pkg, 'dist', f)), `the build emits dist/${f}`);
    }
    const packed = await run('npm', ['pack', '--json', '--pack-destination', tmp], { cwd: pkg, timeout: 120_000, maxBuffer: 8 * 1024 * 1024 });
    const [{ filename, files }] = JSON.parse(packed.stdout) as Array<{ filename: string; files: Array<{ path: string }> }>;
    assert.ok(files.some((f) => f.path === 'dist/index.d.ts'), 'the tarball has the declarations');
    assert.ok(!files.some((f) => /^(src|tools|test)\//.test(f.path)), 'the tarball has no sources, tools or tests');

    // The consumer: the tarball where `npm install` puts it; the package's declared dependencies beside it.
    consumer = path.join(tmp, 'consumer');
    const installed = path.join(consumer, 'node_modules', 'merchant-payment-flows');
    fs.mkdirSync(installed, { recursive: true });
    await run('tar', ['-xzf', path.join(tmp, filename), '-C', installed, '--strip-components=1']);
    for (const dep of [...Object.keys(ROOT_PACKAGE.dependencies), '@types/node']) {
      const to = path.join(consumer, 'node_modules', dep);
      fs.mkdirSync(path.dirname(to), { recursive: true });
      fs.symlinkSync(path.join(ROOT, 'node_modules', dep), to, 'dir');
    }
    fs.writeFileSync(
      path.join(consumer, 'package.json'),
      JSON.stringify({ name: 'merchant-backend', private: true, dependencies: { 'merchant-payment-flows': `file:../${filename}` } }, null, 2),
    );
    fs.writeFileSync(
      path.join(consumer, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { target: 'ES2022', module: 'node16', moduleResolution: 'node16', lib: ['ES2022'], types: ['node'], strict: true, skipLibCheck: true, rootDir: 'src', outDir: 'dist' },
        include: ['src/*.ts'],
      }),
    );
    fs.mkdirSync(path.join(consumer, 'src'));
    fs.writeFileSync(path.join(consumer, 'src', 'check.ts'), CHECK_TS);
    for (const example of ['backend-service.ts', 'gateway-service.ts']) fs.copyFileSync(path.join(ROOT, 'examples', example), path.join(consumer, 'src', example));

    const tsc = await run(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', '.'], { cwd: consumer, timeout: 180_000 }).catch(
      (err: { stdout?: string; stderr?: string }) => assert.fail(`tsc in the consumer failed:\n${err.stdout}${err.stderr}`),
    );
    assert.equal(tsc.stdout.trim(), '');

    // At run time: required by name (CommonJS), imported by name (ES module), and its `mpf` bin runs from dist/.
    const cjs = await node(['dist/check.js'], consumer);
    const seen = JSON.parse(cjs.stdout) as Record<string, string>;
    assert.deepEqual(
      { ...seen, refused: undefined },
      { client: 'function', duplicate: 'function', refusals: 'function,function,function', type: 'swapWorkflow', id: 'swap-t-1', refused: undefined, http: 'function' },
    );
    assert.match(seen.refused!, /^amount: /);
    const esm = await node(['--input-type=module', '-e', "const m = await import('merchant-payment-flows'); const h = await import('merchant-payment-flows/http'); console.log(typeof m.mpfClientFromEnv, typeof h.createGatewayClient)"], consumer);
    assert.equal(esm.stdout.trim(), 'function function');
    const help = await node([path.join(installed, 'bin', 'mpf.cjs'), '--help'], consumer);
    assert.match(help.stdout, /Usage: mpf/);
  });

  test("the README's backend example, compiled against the package, runs against the stack", { timeout: 180_000 }, async () => {
    assert.ok(consumer, 'the consumer project was built by the test before');
    stack = await startStack();
    gateway = await startGateway({ mpf: stack.mpf, apiKey: API_KEY, port: 0 });
    const env = {
      TEMPORAL_ADDRESS: stack.address,
      TEMPORAL_NAMESPACE: stack.namespace,
      TEMPORAL_TASK_QUEUE: stack.taskQueue,
      PAYLOAD_ENCRYPTION_KEYS: stack.keys,
      GATEWAY_PUBLIC_URL: gateway.url,
      EXAMPLE_WALLET_PIN: SIM_PIN,
    };
    const ref = uniqueRef('example');
    const r = await node(['dist/backend-service.js', ref], consumer, env);
    const out = r.stdout;
    assert.match(out, new RegExp(`swap swap-${ref}: awaiting_pin; 25 USD -> \\d+(\\.\\d+)? NGN`));
    assert.match(out, new RegExp(`PIN page: ${gateway.url.replace(/\./g, '\\.')}/pin/swap-${ref}#token=…`));
    assert.match(out, /PIN outcome: confirmed/);
    assert.match(out, new RegExp(`swap swap-${ref} is confirmed`));
    assert.match(out, new RegExp(`a second start of ${ref} is refused`));
    assert.match(out, /refused: amount: /);
    assert.match(out, new RegExp(`payment link paylink-${ref}-invoice: awaiting_payment; the customer pays at http://127\\.0\\.0\\.1:\\d+/pay\\?`));
    assert.doesNotMatch(`${out}${r.stderr}`, new RegExp(`\\b${SIM_PIN}\\b`), 'the PIN is never printed');
    // One initialisation and one confirmation at the provider, whatever the retries.
    const ledger = await stack.control.ledger({ ref });
    const effects = ledger.effects.map((e) => e.kind);
    assert.equal(effects.filter((k) => k === 'swap.initialized').length, 1, JSON.stringify(effects));
    assert.equal(effects.filter((k) => k === 'swap.confirmed').length, 1, JSON.stringify(effects));
    await stack.mpf.cancelLink(`paylink-${ref}-invoice`, 'test over');
  });

  test('the HTTP-only example, compiled against the package, runs against the gateway', { timeout: 120_000 }, async () => {
    assert.ok(stack && gateway, 'the stack was started by the test before');
    const ref = uniqueRef('http-example');
    const r = await node(['dist/gateway-service.js', ref], consumer, { GATEWAY_URL: gateway.url, GATEWAY_API_KEY: API_KEY, EXAMPLE_WALLET_PIN: SIM_PIN });
    assert.match(r.stdout, new RegExp(`swap swap-${ref}: awaiting_pin`));
    assert.match(r.stdout, /PIN outcome: confirmed/);
    assert.match(r.stdout, new RegExp(`swap swap-${ref} is confirmed`));
    assert.match(r.stdout, new RegExp(`a second start of ${ref}: HTTP 409 duplicate`));
  });
});
