/**
 * mpf on an API key: with only MPF_GATEWAY_URL and an API key (MPF_API_KEY or --api-key-file) —
 * no Temporal address, no payload keys — the client commands go through the gateway and obey the
 * key's role: a backend key starts, reads and lists; a read_only key lists and is refused a start
 * with 403 naming where the key came from, and nothing starts. Two keys in the environment are
 * refused before anything is sent; while the gateway asks it to wait (a paused provider's 503 and
 * Retry-After), mpf says so on stderr.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { KeyringSource, newKey } from '../../src/auth/keyring';
import { SIM_PIN, uniqueRef } from '../helpers/fixtures';
import { type GatewayHarness, startGatewayStack } from '../helpers/gateway';
import { gatewayCaller } from '../helpers/http';
import { runMpf, spawnMpf } from '../helpers/processes';
import { eventually } from '../helpers/stack';

const backend = newKey({ id: 'cli-backend', role: 'backend' });
const reader = newKey({ id: 'cli-reader', role: 'read_only' });
const operator = newKey({ id: 'cli-operator', role: 'operator', label: 'on call' });
/** Shaped like a person's access token (a compact JWS), signed by no identity provider. */
const PERSON_TOKEN = [{ alg: 'ES256' }, { sub: 'operator' }].map((p) => Buffer.from(JSON.stringify(p)).toString('base64url')).concat('bm8tc2lnbmF0dXJlLWF0LWFsbA').join('.');

describe('mpf through the gateway with an API key, without Temporal', () => {
  let h: GatewayHarness;
  let tmp: string;
  before(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mpf-cli-gw-'));
    h = await startGatewayStack({ gateway: { keyring: new KeyringSource({ json: JSON.stringify([backend.entry, reader.entry, operator.entry]) }) } });
  });
  after(async () => {
    await h?.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  /** Only PATH, HOME and the gateway's address: nothing of Temporal or the payload keys. */
  const env = (key?: string): NodeJS.ProcessEnv => ({ PATH: process.env.PATH, HOME: process.env.HOME, MPF_GATEWAY_URL: h.gw.url, ...(key ? { MPF_API_KEY: key } : {}) });
  const startArgs = (txn: string) => ['swap', 'start', '--user-ref', 'cli-user', '--from', 'USD', '--to', 'NGN', '--amount', '10', '--txn-ref', txn, '--json'];

  test('a backend key starts a swap, shows it, lists it, and its PIN goes through with the pin_token', async () => {
    const txn = uniqueRef('cli-gw');
    const started = await runMpf(startArgs(txn), env(backend.key));
    assert.equal(started.code, 0, started.stderr);
    const body = JSON.parse(started.stdout) as { swap: { swap_id: string; state: string }; pin_token: string; pin_url: string };
    assert.equal(body.swap.swap_id, `swap-${txn}`);
    assert.equal(body.swap.state, 'awaiting_pin');

    const status = await runMpf(['swap', 'status', `swap-${txn}`], env(backend.key));
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, new RegExp(`^swap swap-${txn}: awaiting_pin$`, 'm'));

    await eventually(async () => {
      const list = await runMpf(['swap', 'list', '--json'], env(backend.key));
      assert.equal(list.code, 0, list.stderr);
      return (JSON.parse(list.stdout) as { items: Array<{ flow_id: string }> }).items.some((i) => i.flow_id === `swap-${txn}`);
    }, 20_000, 'the swap in the list');
    const found = await runMpf(['swap', 'list', '--txn-ref', txn, '--user-ref', 'cli-user', '--json'], env(backend.key));
    assert.equal(found.code, 0, found.stderr);
    const items = (JSON.parse(found.stdout) as { items: Array<{ flow_id: string; amount?: number; currency?: string; customer_ref?: string }> }).items;
    assert.deepEqual(items.map((i) => [i.flow_id, i.amount, i.currency, i.customer_ref]), [[`swap-${txn}`, 10, 'USD', 'cli-user']]);

    const tokenFile = path.join(tmp, `${txn}.token`);
    fs.writeFileSync(tokenFile, body.pin_token, { mode: 0o600 });
    const pin = await runMpf(['swap', 'pin', `swap-${txn}`, '--pin-token-file', tokenFile], env(backend.key), { input: `${SIM_PIN}\n` });
    assert.equal(pin.code, 0, pin.stderr);
    assert.equal(pin.stdout.trim(), 'confirmed');
    assert.equal((await h.stack.control.ledger({ ref: txn, endpoint: 'swap.confirm' })).requests.length, 1);
  });

  test('a read_only key (from --api-key-file) lists, and is refused a start with 403: nothing starts', async () => {
    const keyFile = path.join(tmp, 'reader.key');
    fs.writeFileSync(keyFile, reader.key, { mode: 0o600 });
    const list = await runMpf(['--api-key-file', keyFile, 'swap', 'list'], env());
    assert.equal(list.code, 0, list.stderr);
    const txn = uniqueRef('cli-ro');
    const refused = await runMpf(['--api-key-file', keyFile, ...startArgs(txn)], env());
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /403 forbidden/);
    assert.ok(refused.stderr.trimEnd().endsWith(`(sent --api-key-file ${keyFile})`), `names where the key came from: ${refused.stderr}`);
    assert.ok(!refused.stderr.includes(reader.key), 'the key is not echoed');
    assert.equal((await h.stack.control.ledger({ ref: txn, endpoint: 'swap.init' })).requests.length, 0, 'nothing reached the provider');

    const fromFile = await runMpf(startArgs(txn), { ...env(), MPF_API_KEY_FILE: keyFile });
    assert.equal(fromFile.code, 1);
    assert.ok(fromFile.stderr.trimEnd().endsWith(`(sent MPF_API_KEY_FILE=${keyFile})`), `names MPF_API_KEY_FILE and its path: ${fromFile.stderr}`);
    assert.ok(!fromFile.stderr.includes(reader.key), 'the key is not echoed');
  });

  test("the backend routes take the API key and do not look at a person's token beside it; MPF_API_KEY beside MPF_API_KEY_FILE is refused, exit 2, naming both, before anything is sent", async () => {
    const list = await runMpf(['swap', 'list'], { ...env(backend.key), MPF_ACCESS_TOKEN: PERSON_TOKEN });
    assert.equal(list.code, 0, list.stderr);
    const keyFile = path.join(tmp, 'backend.key');
    fs.writeFileSync(keyFile, backend.key, { mode: 0o600 });
    const txn = uniqueRef('cli-two-keys');
    const two = await runMpf(startArgs(txn), { ...env(reader.key), MPF_API_KEY_FILE: keyFile });
    assert.equal(two.code, 2, two.stderr);
    assert.equal(two.stderr.trim(), `mpf: MPF_API_KEY and MPF_API_KEY_FILE=${keyFile} are both set, and mpf takes one; nothing was sent (unset one of them)`);
    assert.equal((await h.stack.control.ledger({ ref: txn, endpoint: 'swap.init' })).requests.length, 0, 'nothing reached the provider');
    // The command line's key wins over both.
    const flag = await runMpf(['--api-key-file', keyFile, ...startArgs(txn)], { ...env(reader.key), MPF_API_KEY_FILE: keyFile, MPF_ACCESS_TOKEN: PERSON_TOKEN });
    assert.equal(flag.code, 0, flag.stderr);
    // A person's token is for the operator routes: asked for on a backend route, refused, exit 2.
    const asPerson = await runMpf(['--as', 'person', 'swap', 'list'], { ...env(backend.key), MPF_ACCESS_TOKEN: PERSON_TOKEN });
    assert.equal(asPerson.code, 2, asPerson.stderr);
    assert.match(asPerson.stderr, /^mpf: --as person: this command's gateway routes take an API key only/);
  });

  test('while it waits to retry, mpf says so on stderr, one line per retry: the status, the code and reason, and the wait the Retry-After asks for', async () => {
    const as = (key: string) => gatewayCaller(h.gw.url, key);
    const paused = await as(operator.key).api('POST', '/v1/admin/provider/pause', { reason: 'drill for the CLI' });
    assert.equal(paused.status, 200, paused.text);
    const txn = uniqueRef('cli-retry');
    const child = spawnMpf(startArgs(txn), env(backend.key));
    try {
      const [line] = await child.waitFor(/^mpf: .*retry 1 of at most 3$/m, 60_000);
      const origin = new URL(h.gw.url).origin.replace(/\./g, '\\.');
      assert.match(
        line,
        new RegExp(`^mpf: the gateway at ${origin} answered 503 provider_unavailable to POST /v1/swaps \\(no swap is started: money-moving calls are paused by key cli-operator \\(on call\\) since \\S+: drill for the CLI\\); waiting 30 s \\(Retry-After: 30\\), then retry 1 of at most 3$`),
      );
      assert.equal(child.child.exitCode, null, 'said while it waits, before it ends');
    } finally {
      assert.equal((await as(operator.key).api('POST', '/v1/admin/provider/resume')).status, 200);
    }
    // Resumed: the retry (same Idempotency-Key) starts the swap.
    await new Promise<void>((resolve) => (child.child.exitCode !== null ? resolve() : child.child.once('exit', () => resolve())));
    assert.equal(child.child.exitCode, 0, child.output());
    assert.equal((JSON.parse(child.output().slice(child.output().indexOf('{'))) as { swap: { state: string } }).swap.state, 'awaiting_pin');
    assert.ok(!child.output().includes(backend.key), 'the key is not echoed');
    assert.equal(child.output().split('\n').filter((l) => l.includes('retry ')).length, 1, 'one line per retry');
  });

  test('without a key it says which variable is missing, and without a pin_token it refuses the PIN', async () => {
    const noKey = await runMpf(['swap', 'list'], env());
    assert.notEqual(noKey.code, 0);
    assert.match(noKey.stderr, /MPF_API_KEY: is required with MPF_GATEWAY_URL/);
    const noToken = await runMpf(['swap', 'pin', 'swap-anything'], env(backend.key), { input: `${SIM_PIN}\n` });
    assert.notEqual(noToken.code, 0);
    assert.match(noToken.stderr, /--pin-token-file: is required/);
  });

  test('reconcile list goes to the operator route: a backend key is refused with 403 naming the role', async () => {
    const r = await runMpf(['reconcile', 'list'], env(backend.key));
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /403 forbidden/);
    assert.match(r.stderr, /operator/);
  });

  test('categories come through the gateway too', async () => {
    const r = await runMpf(['categories', '--json'], env(reader.key));
    assert.equal(r.code, 0, r.stderr);
    assert.ok((JSON.parse(r.stdout) as { categories: unknown[] }).categories.length > 0);
  });
  test("events list and show work with a read_only key, which is refused a redelivery with 403", async () => {
    const txn = uniqueRef('cli-ev');
    assert.equal((await runMpf(startArgs(txn), env(backend.key))).code, 0);
    const eventId = `evt_swap-${txn}_1`;
    const list = await runMpf(['events', 'list', '--flow', `swap-${txn}`, '--json'], env(reader.key));
    assert.equal(list.code, 0, list.stderr);
    assert.deepEqual((JSON.parse(list.stdout) as { items: Array<{ id: string; type: string }> }).items.map((e) => [e.id, e.type]), [[eventId, 'swap.awaiting_pin']]);
    const show = await runMpf(['events', 'show', eventId], env(reader.key));
    assert.equal(show.code, 0, show.stderr);
    assert.match(show.stdout, new RegExp(`^${eventId}  swap.awaiting_pin`, 'm'));
    const refused = await runMpf(['events', 'redeliver', eventId], env(reader.key));
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /403/);
    // A backend key may redeliver; this stack has no endpoint, so there is nothing to send to.
    const none = await runMpf(['events', 'redeliver', eventId], env(backend.key));
    assert.notEqual(none.code, 0);
    assert.match(none.stderr, /409 not_deliverable/);
  });
});
