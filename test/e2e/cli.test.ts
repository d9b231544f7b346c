/**
 * The `mpf` command line as a user runs it: `node bin/mpf.cjs …` as real processes, against the
 * test's real Temporal server, a simulator started with `mpf simulator` and a worker started with
 * `mpf worker`. Every process started here is stopped in after().
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { PassThrough } from 'node:stream';
import { Client, Connection, WorkflowNotFoundError } from '@temporalio/client';
import { request } from 'undici';
import { defaultPayloadConverter } from '@temporalio/common';
import { AesGcmCodec } from '../../src/codec/aes-gcm-codec';
import { payloadFromJson, payloadToJson } from '../../src/codec/codec-server';
import { generateDevKeys } from '../../src/codec/keys';
import { ProviderClient } from '../../src/provider/client';
import { SIMULATOR_DEFAULT_CREDENTIALS as EMBEDDED_SIMULATOR_CREDENTIALS } from '../../src/simulator/options';
import { createControlClient } from '../../src/simulator/control-client';
import { readPin } from '../../src/starter/cli/pin-input';
import { providerLinkBody, providerSwapBody, SIM_PIN } from '../helpers/fixtures';
import { type MpfRun, runMpf } from '../helpers/processes';
import { getTestTemporal, uniqueTaskQueue } from '../helpers/temporal';

const ROOT = path.join(__dirname, '..', '..');
const MPF = path.join(ROOT, 'bin', 'mpf.cjs');
const LISTENING = /^listening on http:\/\/127\.0\.0\.1:(\d+)$/;

/** Only what a process needs, so variables of the developer's shell cannot leak into a test. */
function baseEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const keep = ['PATH', 'HOME', 'TMPDIR', 'LANG', 'TEMPORAL_CLI_PATH'];
  return { ...Object.fromEntries(keep.filter((k) => process.env[k]).map((k) => [k, process.env[k]])), ...extra };
}

/** Runs `mpf args…` to completion (stdin: `input`, or nothing). */
const mpf = (args: string[], env: NodeJS.ProcessEnv, input?: string, timeoutMs = 60_000): Promise<MpfRun> =>
  runMpf(args, env, { input, timeoutMs });

interface Server {
  child: ChildProcess;
  /** stdout lines so far (the first is the ready line). */
  lines: string[];
  stderr: () => string;
  stop(): Promise<void>;
}

/** Starts a long-running `mpf` subcommand and waits until a stdout line matches `ready`. */
function startServer(args: string[], env: NodeJS.ProcessEnv, ready: RegExp, timeoutMs = 90_000): Promise<Server> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MPF, ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const lines: string[] = [];
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    const stop = async (): Promise<void> => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(t);
    };
    const timer = setTimeout(() => {
      void stop();
      reject(new Error(`mpf ${args.join(' ')} printed no ready line in ${timeoutMs} ms\nstdout:\n${lines.join('\n')}\nstderr:\n${stderr}`));
    }, timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`mpf ${args.join(' ')} exited (${code}) before it was ready\nstdout:\n${lines.join('\n')}\nstderr:\n${stderr}`));
    });
    createInterface({ input: child.stdout! }).on('line', (line) => {
      lines.push(line);
      if (ready.test(line)) {
        clearTimeout(timer);
        resolve({ child, lines, stderr: () => stderr, stop });
      }
    });
  });
}

function portOf(line: string | undefined): number {
  const m = LISTENING.exec(line ?? '');
  assert.ok(m, `not a listening line: ${JSON.stringify(line)}`);
  return Number(m[1]);
}

// The Temporal server (started by this file only when run on its own) outlives every suite.
after(async () => {
  await (await getTestTemporal()).shutdown();
});

describe('mpf itself', () => {
  test('prints its version with --version, with nothing configured and no Temporal', async () => {
    const version = (JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8')) as { version: string }).version;
    for (const flag of ['--version', '-V']) {
      const r = await mpf([flag], { PATH: process.env.PATH });
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout.trim(), version);
    }
  });
});

describe('mpf simulator', () => {
  let sim: Server;
  before(async () => {
    sim = await startServer(['simulator', '--port', '0'], baseEnv(), LISTENING);
  });
  after(() => sim?.stop());

  test('prints exactly "listening on http://127.0.0.1:PORT" as its first line once it answers', async () => {
    const port = portOf(sim.lines[0]);
    assert.ok(port > 0);
    const res = await request(`http://127.0.0.1:${port}/api/v1/utility/categories`, { headers: { 'x-merchant-ref': 'sim-merchant' } });
    assert.equal(res.statusCode, 200);
    const body = (await res.body.json()) as { status: string; data: { data: Array<{ code: string; name: string }> } };
    assert.equal(body.status, 'success');
    assert.equal(body.data.data.length, 77);
    assert.ok(body.data.data.every((c) => typeof c.code === 'string'));
  });

  test('refuses the category list without x-merchant-ref', async () => {
    const res = await request(`http://127.0.0.1:${portOf(sim.lines[0])}/api/v1/utility/categories`);
    assert.ok(res.statusCode >= 400 && res.statusCode < 500, String(res.statusCode));
    await res.body.dump();
  });

  test('takes its window, checkout address and credentials from flags and MPS_* variables', async () => {
    const custom = await startServer(
      ['simulator', '--port', '0', '--checkout-port', '0', '--expires-in', '7', '--seed', '42', '--checkout-public-url', 'http://localhost:8091'],
      baseEnv({ MPS_SECRET_KEY: 'cli-secret-key', MPS_ACCESS_TOKEN: 'cli-access-token', MPS_MERCHANT_REF: 'cli-merchant' }),
      /^checkout on /,
    );
    try {
      const baseUrl = `http://127.0.0.1:${portOf(custom.lines[0])}`;
      assert.match(custom.lines[1] ?? '', /^checkout on http:\/\/127\.0\.0\.1:\d+$/);
      const good = new ProviderClient({ baseUrl, secretKey: 'cli-secret-key', accessToken: 'cli-access-token', merchantRef: 'cli-merchant' });
      const stale = new ProviderClient({ baseUrl, ...EMBEDDED_SIMULATOR_CREDENTIALS });
      try {
        const init = await good.initSwap(providerSwapBody('flags-1'));
        assert.equal(init.expires_in_seconds, 7);
        const link = await good.createHostedLink(providerLinkBody('flags-l1'));
        assert.ok(link.pay_link.startsWith('http://localhost:8091/pay?'), link.pay_link);
        await assert.rejects(stale.initSwap(providerSwapBody('flags-2')));
      } finally {
        await good.close();
        await stale.close();
      }
    } finally {
      await custom.stop();
    }
  });

  test('refuses a port that is not a number, naming --port, and starts nothing', async () => {
    const r = await mpf(['simulator', '--port', 'eighty'], baseEnv());
    assert.equal(r.code, 1);
    assert.match(r.stderr, /--port/);
    assert.equal(r.stdout, '');
  });
});

describe('mpf client commands against a worker process', () => {
  let temporalAddress: string;
  let namespace: string;
  let sim: Server;
  let simUrl: string;
  let worker: Server;
  let client: Client;
  let connection: Connection;
  let env: NodeJS.ProcessEnv;
  const keys = generateDevKeys();
  const taskQueue = uniqueTaskQueue('mpf-cli');
  const runId = `${process.pid}-${Date.now().toString(36)}`;

  before(async () => {
    const temporal = await getTestTemporal();
    temporalAddress = temporal.address;
    namespace = temporal.namespace;
    sim = await startServer(['simulator', '--port', '0'], baseEnv(), LISTENING);
    simUrl = `http://127.0.0.1:${portOf(sim.lines[0])}`;
    env = baseEnv({
      TEMPORAL_ADDRESS: temporalAddress,
      TEMPORAL_NAMESPACE: namespace,
      TEMPORAL_TASK_QUEUE: taskQueue,
      PAYLOAD_ENCRYPTION_KEYS: keys,
      MPS_BASE_URL: simUrl,
      MPS_SECRET_KEY: 'sim-secret-key',
      MPS_ACCESS_TOKEN: 'sim-access-token',
      MPS_MERCHANT_REF: 'sim-merchant',
      GATEWAY_PUBLIC_URL: 'http://127.0.0.1:9/gateway-not-running',
      // No gateway receives the provider's notifications here: a confirmed swap closes at once
      // instead of waiting for one (the default waits 60 s).
      SWAP_NOTIFICATION_WAIT_SECONDS: '0',
    });
    worker = await startServer(['worker'], env, /worker: polling task queue /, 120_000);
    connection = await Connection.connect({ address: temporalAddress });
    client = new Client({ connection, namespace });
  });

  after(async () => {
    await worker?.stop();
    await sim?.stop();
    await connection?.close();
  });

  const exists = async (workflowId: string): Promise<boolean> => {
    try {
      await client.workflow.getHandle(workflowId).describe();
      return true;
    } catch (e) {
      if (e instanceof WorkflowNotFoundError) return false;
      throw e;
    }
  };

  test('lists the 77 categories as a tree with --tree --json, through the worker', async () => {
    const r = await mpf(['categories', '--tree', '--json'], env);
    assert.equal(r.code, 0, r.stderr);
    const { tree } = JSON.parse(r.stdout) as { tree: { parents: Array<{ code: string; children: Array<{ code: string }> }>; orphans: unknown[] } };
    const count = tree.parents.reduce((n, p) => n + 1 + p.children.length, 0) + tree.orphans.length;
    assert.equal(count, 77);
    const childrenOf = (code: string): string[] => tree.parents.find((p) => p.code === code)?.children.map((c) => c.code) ?? [];
    assert.deepEqual(childrenOf('4.0'), ['4.1', '4.2', '4.3', '4.4', '4.5', '4.6']);
    assert.deepEqual(childrenOf('10.0'), ['10.1', '10.2']);
    assert.ok(childrenOf('13.0').includes('13.1') && childrenOf('13.0').includes('13.11'));
    assert.deepEqual(tree.orphans, []);
  });

  test('prints the categories readably without --json', async () => {
    const r = await mpf(['categories', '--tree'], env);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trimEnd().split('\n');
    assert.match(lines.find((l) => l.startsWith('4.0')) ?? '', /^4\.0\s+Mobile Data$/);
    assert.ok(lines.some((l) => /^ {2}4\.1\s+Daily Bundles$/.test(l)), r.stdout);
    const flat = await mpf(['categories'], env);
    assert.equal(flat.stdout.trimEnd().split('\n').length, 77);
  });

  test('refuses a swap amount that is not a number, naming --amount, and starts nothing', async () => {
    const txnRef = `cli-bad-${runId}`;
    const r = await mpf(['swap', 'start', '--user-ref', 'u1', '--from', 'USD', '--to', 'NGN', '--amount', 'ten', '--txn-ref', txnRef], env);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /--amount/);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    assert.equal(await exists(`swap-${txnRef}`), false);
  });

  test('refuses a swap amount the contract rejects, naming --amount and amount, and starts nothing', async () => {
    for (const [i, amount] of ['0', '1.234'].entries()) {
      const txnRef = `cli-bad-${i}-${runId}`;
      const r = await mpf(['swap', 'start', '--user-ref', 'u1', '--from', 'USD', '--to', 'NGN', '--amount', amount, '--txn-ref', txnRef], env);
      assert.equal(r.code, 1);
      assert.match(r.stderr, /^mpf: invalid --amount \(amount: must /);
      assert.equal(await exists(`swap-${txnRef}`), false);
    }
  });

  test('starts a swap, takes the PIN from stdin (never argv), and ends confirmed', async () => {
    const txnRef = `cli-ok-${runId}`;
    const started = await mpf(['swap', 'start', '--user-ref', 'u1', '--from', 'USD', '--to', 'NGN', '--amount', '100', '--txn-ref', txnRef], env);
    assert.equal(started.code, 0, started.stderr);
    assert.match(started.stdout, new RegExp(`^swap swap-${txnRef}: awaiting_pin$`, 'm'));
    assert.match(started.stdout, /rate\s+1 USD = 1500\.25 NGN/);
    assert.match(started.stdout, /converted\s+150,025 NGN/);
    assert.match(started.stdout, /expires_at\s+\d{4}-\d\d-\d\dT.* \(in /);
    assert.match(started.stdout, new RegExp(`pin_url\\s+http://127\\.0\\.0\\.1:9/gateway-not-running/pin/swap-${txnRef}#token=[A-Za-z0-9_-]{64}`));

    const wrong = await mpf(['swap', 'pin', `swap-${txnRef}`], env, '9999\n');
    assert.equal(wrong.code, 1);
    assert.match(wrong.stdout, /^PIN rejected: 2 attempts left \(state awaiting_pin\)$/m);

    const pin = await mpf(['swap', 'pin', `swap-${txnRef}`, '--json'], env, `${SIM_PIN}\n`);
    assert.equal(pin.code, 0, pin.stderr);
    assert.deepEqual(JSON.parse(pin.stdout), { outcome: 'confirmed', state: 'confirmed' });
    for (const out of [wrong.stdout, wrong.stderr, pin.stdout, pin.stderr]) assert.ok(!out.includes(SIM_PIN) && !out.includes('9999'), out);

    const status = await mpf(['swap', 'status', `swap-${txnRef}`], env);
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, new RegExp(`^swap swap-${txnRef}: confirmed$`, 'm'));
    assert.match(status.stdout, /pin attempts\s+2 used, 1 left/);

    // Once the swap closed, a PIN is refused naming the swap's final state (not "no swap").
    // (raw describe: this client has no codec for the encrypted memo)
    const running = async () =>
      (await client.workflowService.describeWorkflowExecution({ namespace: client.options.namespace, execution: { workflowId: `swap-${txnRef}` } }))
        .workflowExecutionInfo?.status === 1; // WORKFLOW_EXECUTION_STATUS_RUNNING
    for (let i = 0; i < 100 && (await running()); i++) await new Promise((r) => setTimeout(r, 100));
    const late = await mpf(['swap', 'pin', `swap-${txnRef}`], env, `${SIM_PIN}\n`);
    assert.equal(late.code, 1);
    assert.equal(late.stderr, `mpf: the swap swap-${txnRef} is closed (confirmed) and takes no PIN\n`);

    const ledger = await createControlClient(simUrl).ledger({ ref: txnRef });
    assert.equal(ledger.requests.filter((r) => r.endpoint === 'swap.init').length, 1);
  });

  test('refuses an empty PIN on stdin without touching the swap', async () => {
    const r = await mpf(['swap', 'pin', 'swap-whatever'], env, '\n');
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^mpf: no PIN given/);
  });

  test('cancels a swap awaiting its PIN', async () => {
    const txnRef = `cli-cancel-${runId}`;
    const started = await mpf(['swap', 'start', '--user-ref', 'u1', '--from', 'EUR', '--to', 'NGN', '--amount', '10', '--txn-ref', txnRef, '--json'], env);
    assert.equal(started.code, 0, started.stderr);
    const body = JSON.parse(started.stdout) as { swap: { swap_id: string; state: string }; pin_token: string; pin_url: string };
    assert.equal(body.swap.state, 'awaiting_pin');
    assert.ok(body.pin_url.endsWith(`#token=${body.pin_token}`));
    const cancelled = await mpf(['swap', 'cancel', body.swap.swap_id, '--json'], env);
    assert.equal(cancelled.code, 0, cancelled.stderr);
    assert.equal((JSON.parse(cancelled.stdout) as { state: string }).state, 'cancelled');
    const again = await mpf(['swap', 'cancel', body.swap.swap_id], env);
    assert.equal(again.code, 1);
    assert.equal(again.stderr, `mpf: swap ${body.swap.swap_id} is cancelled: only a swap awaiting its PIN can be cancelled\n`);
  });

  test('gives up with one clear line when no worker answers in time, naming the task queue', async () => {
    const txnRef = `cli-noworker-${runId}`;
    const queue = uniqueTaskQueue('mpf-cli-unpolled');
    const r = await mpf(['swap', 'start', '--user-ref', 'u1', '--from', 'USD', '--to', 'NGN', '--amount', '5', '--txn-ref', txnRef, '--wait', '2'], { ...env, TEMPORAL_TASK_QUEUE: queue });
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, new RegExp(`^mpf: no answer within 2 s: is \`mpf worker\` polling task queue ${queue} on ${temporalAddress.replace(/\./g, '\\.')} .*mpf swap status swap-${txnRef}`));
    assert.equal(r.stderr.trim().split('\n').length, 1);
    await client.workflow.getHandle(`swap-${txnRef}`).terminate('test cleanup: no worker polls its queue');
  });

  test('waits as long as --wait says, beyond the client\'s own 30 s bound on a start', async () => {
    const txnRef = `cli-longwait-${runId}`;
    const queue = uniqueTaskQueue('mpf-cli-unpolled');
    const started = Date.now();
    const r = await mpf(['swap', 'start', '--user-ref', 'u1', '--from', 'USD', '--to', 'NGN', '--amount', '5', '--txn-ref', txnRef, '--wait', '32'], { ...env, TEMPORAL_TASK_QUEUE: queue });
    assert.equal(r.code, 1);
    assert.match(r.stderr, new RegExp(`^mpf: no answer within 32 s: is \`mpf worker\` polling task queue ${queue}`));
    assert.ok(Date.now() - started >= 32_000, 'it did not give up before --wait');
    await client.workflow.getHandle(`swap-${txnRef}`).terminate('test cleanup: no worker polls its queue');
  });

  test('creates a payment link and shows its status', async () => {
    const ref = `cli-link-${runId}`;
    const args = ['link', 'create', '--user-ref', 'u1', '--txn-merchant-ref', ref, '--amount', '2500', '--full-name', 'Ada Lovelace', '--email', 'ada@example.com', '--phone', '+2348000000000', '--redirect-url', 'http://127.0.0.1:9/thanks'];
    const created = await mpf(args, env);
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.stdout, new RegExp(`^payment link paylink-${ref}: awaiting_payment$`, 'm'));
    assert.match(created.stdout, /pay_link\s+http:\/\/127\.0\.0\.1:\d+\/pay\?/);
    assert.match(created.stdout, /amount\s+2,500 NGN/);

    const status = await mpf(['link', 'status', `paylink-${ref}`, '--json'], env);
    assert.equal(status.code, 0, status.stderr);
    const view = JSON.parse(status.stdout) as { state: string; pay_link: string; payment_ref: string };
    assert.equal(view.state, 'awaiting_payment');
    assert.ok(view.pay_link.includes(view.payment_ref));

    const again = await mpf(args, env);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /already exists: paylink-/);
    const ledger = await createControlClient(simUrl).ledger({ ref });
    assert.equal(ledger.requests.filter((r) => r.endpoint === 'link.create').length, 1);
  });

  test('refuses a bad e-mail naming --email, and starts nothing', async () => {
    const ref = `cli-badlink-${runId}`;
    const r = await mpf(['link', 'create', '--user-ref', 'u1', '--txn-merchant-ref', ref, '--amount', '10', '--full-name', 'A', '--email', 'not-an-email', '--phone', '+2348000000000', '--redirect-url', 'http://127.0.0.1:9/'], env);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^mpf: invalid --email \(email: /);
    assert.equal(await exists(`paylink-${ref}`), false);
  });

  test('says in one line that a swap does not exist', async () => {
    const r = await mpf(['swap', 'status', `swap-missing-${runId}`], env);
    assert.equal(r.code, 1);
    assert.equal(r.stderr, `mpf: no swap swap-missing-${runId}\n`);
  });

  test('names PAYLOAD_ENCRYPTION_KEYS when a client command has no keys', async () => {
    const { PAYLOAD_ENCRYPTION_KEYS: _omit, ...noKeys } = env;
    const r = await mpf(['swap', 'status', 'swap-x'], noKeys);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^mpf: PAYLOAD_ENCRYPTION_KEYS: is required/);
  });
});

describe('mpf gateway', () => {
  let gw: Server | undefined;
  const gatewayKeys = generateDevKeys('cli');
  const CODEC_TOKEN = 'cli-test-codec-token-0123456789';
  after(() => gw?.stop());

  test('prints exactly "listening on http://127.0.0.1:PORT" and answers there', async () => {
    const temporal = await getTestTemporal();
    gw = await startServer(
      ['gateway', '--port', '0'],
      baseEnv({
        TEMPORAL_ADDRESS: temporal.address,
        TEMPORAL_NAMESPACE: temporal.namespace,
        GATEWAY_API_KEY: 'cli-test-gateway-api-key-0123456789',
        PAYLOAD_ENCRYPTION_KEYS: gatewayKeys,
        CODEC_AUTH_TOKEN: CODEC_TOKEN,
      }),
      LISTENING,
    );
    assert.equal(gw.lines.length, 1);
    const port = portOf(gw.lines[0]);
    const health = await request(`http://127.0.0.1:${port}/healthz`);
    assert.equal(health.statusCode, 200);
    await health.body.dump();
    const unauth = await request(`http://127.0.0.1:${port}/v1/categories`);
    assert.equal(unauth.statusCode, 401);
    await unauth.body.dump();
  });

  test('codec-web-endpoint prints the Temporal Web codec URL, which decodes on that gateway without the Bearer token', async () => {
    assert.ok(gw, 'the gateway test ran first');
    const base = `http://127.0.0.1:${portOf(gw.lines[0])}`;
    const r = await mpf(['codec-web-endpoint', '--base-url', base], baseEnv({ CODEC_AUTH_TOKEN: CODEC_TOKEN }));
    assert.equal(r.code, 0, r.stderr);
    const endpoint = r.stdout.trim();
    assert.match(endpoint, new RegExp(`^${base}/codec/web/[A-Za-z0-9_-]{43}$`));
    assert.ok(!endpoint.includes(CODEC_TOKEN));
    const [encrypted] = await new AesGcmCodec(gatewayKeys).encode([defaultPayloadConverter.toPayload('cli-codec-marker')]);
    const res = await request(`${endpoint}/decode`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ payloads: [payloadToJson(encrypted!)] }),
    });
    assert.equal(res.statusCode, 200);
    const body = (await res.body.json()) as { payloads: Parameters<typeof payloadFromJson>[0][] };
    assert.equal(defaultPayloadConverter.fromPayload(payloadFromJson(body.payloads[0]!)), 'cli-codec-marker');

    const off = await mpf(['codec-web-endpoint'], baseEnv({}));
    assert.equal(off.code, 1);
    assert.match(off.stderr, /^mpf: CODEC_AUTH_TOKEN \(or CODEC_AUTH_TOKEN_FILE\) is not set/);
  });
});

describe('the PIN prompt', () => {
  test('reads the PIN from a terminal in raw mode without echoing it, honouring backspace', async () => {
    const input = Object.assign(new PassThrough(), { isTTY: true, rawModes: [] as boolean[] });
    (input as unknown as { setRawMode(m: boolean): void }).setRawMode = (m: boolean) => void input.rawModes.push(m);
    const output = new PassThrough();
    let shown = '';
    output.on('data', (d: Buffer) => (shown += d.toString()));
    const pending = readPin('wallet PIN: ', input, output);
    input.write('12');
    input.write('9\u007f34\r');
    assert.equal(await pending, '1234');
    assert.deepEqual(input.rawModes, [true, false]);
    assert.equal(shown, 'wallet PIN: \n');
  });

  test('gives up on Ctrl-C at the prompt', async () => {
    const input = Object.assign(new PassThrough(), { isTTY: true, setRawMode: () => undefined });
    const pending = readPin('wallet PIN: ', input, new PassThrough());
    input.write('12\u0003');
    await assert.rejects(pending, /cancelled/);
  });
});
