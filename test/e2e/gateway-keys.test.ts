/**
 * Who may do what, on a real `mpf gateway` process started from environment variables, with its
 * keyring in GATEWAY_API_KEYS_FILE: roles (deny by default), expiry, a rotation done by editing
 * the file while requests keep coming, and a malformed keyring refused at start-up.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type KeyEntry, newKey, type Role } from '../../src/auth/keyring';
import { generateDevKeys } from '../../src/codec/keys';
import { swapBody, uniqueRef } from '../helpers/fixtures';
import { gatewayCaller } from '../helpers/gateway';
import { type MpfProcess, runMpf, spawnMpf } from '../helpers/processes';
import { getTestTemporal } from '../helpers/temporal';

const made = (id: string, role: Role, extra: Partial<KeyEntry> = {}) => {
  const { key, entry } = newKey({ id, role, ...(extra.label ? { label: extra.label } : {}) });
  return { key, entry: { ...entry, ...extra } };
};

const backendA = made('backend-a', 'backend');
const backendB = made('backend-b', 'backend');
const reader = made('dashboards', 'read_only');
const operator = made('ops-ada', 'operator', { label: 'Ada (operator)' });
const expired = made('backend-old', 'backend', { expires_at: '2020-01-01T00:00:00Z' });

let tmp: string;
let keysFile: string;
let gateway: MpfProcess | undefined;
let url: string;

/** Replaces the keyring file at once (a new file renamed over the old), as an operator's tooling would. */
function writeKeyring(entries: KeyEntry[]): void {
  const next = `${keysFile}.next`;
  fs.writeFileSync(next, JSON.stringify(entries, null, 2));
  fs.renameSync(next, keysFile);
}

function baseEnv(temporalAddress: string): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    LOG_LEVEL: 'warn',
    TEMPORAL_ADDRESS: temporalAddress,
    TEMPORAL_TASK_QUEUE: `keys-${process.pid}`,
    PAYLOAD_ENCRYPTION_KEYS: generateDevKeys(),
  };
}

const call = (method: string, p: string, key: string | undefined, body?: unknown) => gatewayCaller(url, key).api(method, p, body);

before(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mpf-keys-'));
  keysFile = path.join(tmp, 'keyring.json');
  writeKeyring([backendA.entry, backendB.entry, reader.entry, operator.entry, expired.entry]);
  const temporal = await getTestTemporal();
  gateway = spawnMpf(['gateway', '--port', '0'], { ...baseEnv(temporal.address), GATEWAY_API_KEYS_FILE: keysFile });
  [, url] = (await gateway.waitFor(/listening on (http:\/\/\S+)/, 60_000)) as unknown as [string, string];
});

after(async () => {
  await gateway?.kill('SIGTERM');
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe('the gateway with a keyring file', () => {
  test('two backend keys live at once both read and list', async () => {
    for (const k of [backendA, backendB]) {
      const r = await call('GET', '/v1/swaps?limit=1', k.key);
      assert.equal(r.status, 200, `${k.entry.id}: ${JSON.stringify(r.json)}`);
    }
  });

  test('a backend key gets 403 on every /v1/admin route, naming the role needed, and the flow is untouched', async () => {
    const list = await call('GET', '/v1/admin/reconciliations', backendA.key);
    assert.equal(list.status, 403);
    assert.equal(list.json.error, 'forbidden');
    assert.match(String(list.json.message), /role operator/);
    const resolve = await call('POST', '/v1/admin/flows/swap-nothing/resolve', backendA.key, { outcome: 'confirmed', provider_reference: 'X1', note: 'checked' });
    assert.equal(resolve.status, 403);
    assert.match(String(resolve.json.message), /role operator/);
    assert.equal((await call('GET', '/v1/admin/reconciliations', operator.key)).status, 200, 'the operator key may');
  });

  test('a read_only key lists and reads, and every POST gets 403 before anything starts', async () => {
    assert.equal((await call('GET', '/v1/swaps?limit=1', reader.key)).status, 200);
    assert.equal((await call('GET', '/v1/payment-links?limit=1', reader.key)).status, 200);
    const ref = uniqueRef('readonly');
    for (const [p, body] of [
      ['/v1/swaps', swapBody(ref)],
      ['/v1/swaps/swap-x/cancel', {}],
      ['/v1/payment-links/paylink-x/cancel', {}],
      ['/v1/admin/flows/swap-x/resolve', {}],
    ] as const) {
      const r = await call('POST', p, reader.key, body);
      assert.equal(r.status, 403, `${p}: ${JSON.stringify(r.json)}`);
      assert.match(String(r.json.message), /key dashboards has role read_only/);
    }
    const view = await call('GET', `/v1/swaps/swap-${ref}`, reader.key);
    assert.equal(view.status, 404, 'the refused start started nothing');
  });

  test('an expired key gets 401 key_expired, an unknown one 401, with the same body shape and never the key', async () => {
    const old = await call('GET', '/v1/swaps?limit=1', expired.key);
    assert.equal(old.status, 401);
    assert.equal(old.json.error, 'key_expired');
    assert.match(String(old.json.message), /backend-old/);
    const unknown = await call('GET', '/v1/swaps?limit=1', 'mpfk_not-a-key-of-this-gateway-0123456789');
    assert.equal(unknown.status, 401);
    assert.equal(unknown.json.error, 'unauthorized');
    const none = await call('GET', '/v1/swaps?limit=1', undefined);
    assert.equal(none.status, 401);
    for (const r of [old, unknown, none]) {
      assert.deepEqual(Object.keys(r.json).sort().filter((k) => k !== 'request_id'), ['error', 'message']);
      assert.ok(!JSON.stringify(r.json).includes(expired.key) && !JSON.stringify(r.json).includes('not-a-key'), 'a key was echoed');
    }
  });

  test('a rotation by editing the keyring file fails no request of a continuous stream', { timeout: 90_000 }, async () => {
    const successor = made('backend-a-2', 'backend');
    let current = backendA.key;
    let sent = 0;
    const failures: string[] = [];
    let stop = false;
    const stream = (async () => {
      while (!stop) {
        const r = await call('GET', '/v1/swaps?limit=1', current);
        sent++;
        if (r.status !== 200) failures.push(`${r.status} ${JSON.stringify(r.json)}`);
      }
    })();
    const waitUntil = async (ok: () => Promise<boolean>) => {
      const deadline = Date.now() + 20_000;
      while (!(await ok())) {
        assert.ok(Date.now() < deadline, 'the gateway did not pick up the keyring edit within 20 s');
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    // 1. add the successor; 2. move the caller once the successor works; 3. retire the old key.
    writeKeyring([backendA.entry, successor.entry, backendB.entry, reader.entry, operator.entry, expired.entry]);
    await waitUntil(async () => (await call('GET', '/v1/swaps?limit=1', successor.key)).status === 200);
    current = successor.key;
    await new Promise((r) => setTimeout(r, 500));
    writeKeyring([successor.entry, backendB.entry, reader.entry, operator.entry, expired.entry]);
    await waitUntil(async () => (await call('GET', '/v1/swaps?limit=1', backendA.key)).status === 401);
    await new Promise((r) => setTimeout(r, 500));
    stop = true;
    await stream;
    console.log(`rotation: ${sent} requests sent without pause, ${failures.length} failed`);
    assert.ok(sent > 10, `only ${sent} requests were sent`);
    assert.deepEqual(failures, []);
  });

  test('a malformed keyring stops the gateway at start-up naming the entry, never the secret', async () => {
    const temporal = await getTestTemporal();
    const bad = path.join(tmp, 'bad.json');
    for (const [entries, why] of [
      [[{ ...backendA.entry, role: 'admin' }], /entry backend-a: role must be one of read_only, backend, operator/],
      [[backendA.entry, { ...backendB.entry, id: 'backend-a' }], /entry backend-a: the id is used by another entry/],
      [[{ id: 'leaky', role: 'backend', key: backendA.key }], /entry leaky: holds a key in plaintext/],
    ] as const) {
      fs.writeFileSync(bad, JSON.stringify(entries));
      const r = await runMpf(['gateway', '--port', '0'], { ...baseEnv(temporal.address), GATEWAY_API_KEYS_FILE: bad }, { timeoutMs: 30_000 });
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, why);
      assert.ok(!r.stderr.includes(backendA.key) && !r.stdout.includes(backendA.key), 'the key was echoed');
    }
    const short = await runMpf(['gateway', '--port', '0'], { ...baseEnv(temporal.address), GATEWAY_API_KEY: 'short' }, { timeoutMs: 30_000 });
    assert.notEqual(short.code, 0);
    assert.match(short.stderr, /GATEWAY_API_KEY: must be at least 16 characters/);
  });
});

describe('mpf keys on the keyring file of a running gateway', () => {
  const keys = (args: string[]) => runMpf(['keys', ...args, '--keyring', keysFile], { PATH: process.env.PATH, HOME: process.env.HOME }, { timeoutMs: 30_000 });
  const status = async (key: string) => (await call('GET', '/v1/swaps?limit=1', key)).status;
  const until = async (key: string, want: number) => {
    const deadline = Date.now() + 10_000;
    while ((await status(key)) !== want) {
      if (Date.now() > deadline) assert.fail(`the key did not answer ${want} within 10 s`);
      await new Promise((r) => setTimeout(r, 200));
    }
  };

  test('new adds a key the gateway takes within seconds, its key written to a 0600 file and never printed', async () => {
    const keyFile = path.join(tmp, 'reports.key');
    const r = await keys(['new', '--role', 'read_only', '--id', 'reports', '--label', 'nightly reports', '--key-file', keyFile]);
    assert.equal(r.code, 0, r.stderr);
    const key = fs.readFileSync(keyFile, 'utf8').trim();
    assert.equal(fs.statSync(keyFile).mode & 0o777, 0o600);
    assert.ok(!r.stdout.includes(key), 'the key is not printed');
    assert.equal(fs.statSync(keysFile).mode & 0o777, 0o600, 'the keyring stays 0600');
    await until(key, 200);
    assert.equal((await call('POST', '/v1/swaps', key, swapBody(uniqueRef('ro')))).status, 403, 'read_only cannot start');
  });

  test('list shows every key with its role and never a key or its digest', async () => {
    const r = await keys(['list', '--json']);
    assert.equal(r.code, 0, r.stderr);
    const listed = JSON.parse(r.stdout) as Array<{ id: string; role: string; sha256?: string }>;
    assert.ok(listed.some((e) => e.id === 'reports' && e.role === 'read_only'));
    assert.ok(listed.every((e) => e.sha256 === undefined));
    const text = await keys(['list']);
    assert.match(text.stdout, /^reports\s+read_only\s+no expiry\s+nightly reports$/m);
    assert.ok(!/[0-9a-f]{64}/.test(text.stdout + r.stdout), 'no digest');
  });

  test('rotate makes a new key of the same role; the old one stops at the end of its overlap', async () => {
    const oldFile = path.join(tmp, 'rot-old.key');
    assert.equal((await keys(['new', '--role', 'backend', '--id', 'rot-old', '--key-file', oldFile])).code, 0);
    const oldKey = fs.readFileSync(oldFile, 'utf8').trim();
    await until(oldKey, 200);
    const newFile = path.join(tmp, 'rot-new.key');
    const r = await keys(['rotate', 'rot-old', '--new-id', 'rot-new', '--overlap', '0', '--key-file', newFile]);
    assert.equal(r.code, 0, r.stderr);
    const newKeyText = fs.readFileSync(newFile, 'utf8').trim();
    await until(newKeyText, 200);
    await until(oldKey, 401);
    assert.equal((await call('GET', '/v1/swaps?limit=1', oldKey)).json.error, 'key_expired');
    const listed = JSON.parse((await keys(['list', '--json'])).stdout) as Array<{ id: string; role: string }>;
    assert.equal(listed.find((e) => e.id === 'rot-new')?.role, 'backend');
  });

  test('revoke removes a key: the gateway refuses it within seconds; an unknown id is an error naming it', async () => {
    const keyFile = path.join(tmp, 'gone.key');
    assert.equal((await keys(['new', '--role', 'backend', '--id', 'gone', '--key-file', keyFile])).code, 0);
    const key = fs.readFileSync(keyFile, 'utf8').trim();
    await until(key, 200);
    const r = await keys(['revoke', 'gone']);
    assert.equal(r.code, 0, r.stderr);
    await until(key, 401);
    const again = await keys(['revoke', 'gone']);
    assert.notEqual(again.code, 0);
    assert.match(again.stderr, /no key with id gone/);
  });
});
