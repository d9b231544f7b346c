/**
 * API keys as an API (`/v1/api_keys`) on a real gateway, worker and Temporal, and on a second
 * `mpf gateway` process that shares nothing with the first but Temporal: a created key is shown
 * once and works on both, a revoke reaches the second within the documented bound, a rotation's
 * old key works for its overlap and then not, expiry is honoured, operators only, and a gateway
 * that cannot read the record refuses its keys (503) while the keyring's keep working.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { KeyringSource, newKey } from '../../src/auth/keyring';
import { apiKeysWorkflowId, MAX_API_KEYS } from '../../src/contract/api-keys';
import { DEFAULT_API_KEYS_STALE_MS } from '../../src/starter/client/api-keys';
import { startGateway } from '../../src/starter/gateway/main';
import { gatewayCaller, type GatewayHarness, startGatewayStack } from '../helpers/gateway';
import { type MpfProcess, runMpf, spawnMpf } from '../helpers/processes';
import { eventually, workerProcessEnv } from '../helpers/stack';

const operator = newKey({ id: 'keys-api-operator', role: 'operator', label: 'Ada (operator)' });
const backend = newKey({ id: 'keys-api-backend', role: 'backend' });
const reader = newKey({ id: 'keys-api-reader', role: 'read_only' });
const fileKeys = JSON.stringify([operator.entry, backend.entry, reader.entry]);

describe('API keys as an API', () => {
  let h: GatewayHarness;
  let second: MpfProcess | undefined;
  let secondUrl: string;
  const on = (url: string, key: string) => gatewayCaller(url, key);
  const ops = (method: string, path: string, body?: unknown) => on(h.gw.url, operator.key).api(method, path, body);
  const create = async (body: unknown): Promise<{ id: string; key: string; [k: string]: unknown }> => {
    const r = await ops('POST', '/v1/api_keys', body);
    assert.equal(r.status, 201, r.text);
    return r.json;
  };
  /** The status a GET of the swaps list answers with this key on the gateway at `url`. */
  const statusWith = async (url: string, key: string): Promise<number> => (await on(url, key).api('GET', '/v1/swaps?limit=1')).status;

  before(async () => {
    h = await startGatewayStack({ gateway: { keyring: new KeyringSource({ json: fileKeys }) } });
    second = spawnMpf(['gateway', '--port', '0'], { PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: 'warn', ...workerProcessEnv(h.stack), GATEWAY_API_KEYS: fileKeys });
    [, secondUrl] = (await second.waitFor(/listening on (http:\/\/\S+)/, 120_000)) as unknown as [string, string];
  });
  after(async () => {
    await second?.kill('SIGTERM');
    await h?.stop();
  });

  test('a created key is shown once and works on every gateway; lists, logs and the record never show it', async () => {
    const made = await create({ role: 'backend', label: 'checkout service' });
    assert.match(made.id, /^ak_[0-9a-f]{24}$/);
    assert.match(made.key, /^mpfa_/);
    assert.equal(made.role, 'backend');
    assert.equal(made.created_by, 'key keys-api-operator (Ada (operator))');
    assert.equal(await statusWith(h.gw.url, made.key), 200, 'at once on the gateway that made it');
    await eventually(async () => (await statusWith(secondUrl, made.key)) === 200, DEFAULT_API_KEYS_STALE_MS, 'the key on the second gateway');
    const started = await on(h.gw.url, made.key).api('POST', '/v1/swaps', { nonsense: true });
    assert.equal(started.status, 400, 'a backend key may start (and is told what is wrong with the body)');
    const list = await ops('GET', '/v1/api_keys');
    assert.equal(list.status, 200, list.text);
    const listed = (list.json.data as Array<Record<string, unknown>>).find((k) => k.id === made.id);
    assert.deepEqual(Object.keys(listed ?? {}).sort(), ['created_at', 'created_by', 'id', 'label', 'role']);
    assert.ok(!list.text.includes(made.key) && !list.text.includes('sha256'), 'no key and no digest in the list');
    assert.ok(!h.logs.join('\n').includes(made.key) && !second!.output().includes(made.key), 'not in either gateway log');
    const history = await h.stack.client.workflowService.getWorkflowExecutionHistory({ namespace: h.stack.namespace, execution: { workflowId: apiKeysWorkflowId(h.stack.taskQueue) } });
    const raw = JSON.stringify(history.history, (_k, v: unknown) => (v instanceof Uint8Array ? Buffer.from(v).toString('latin1') : v));
    assert.ok(!raw.includes(made.key) && !raw.includes(made.key.slice('mpfa_'.length)), 'the record never holds the key');
    assert.ok(!raw.includes('checkout service'), 'the record holds its payloads encrypted');
  });

  test('a revoked key is refused at once by the gateway that revoked it and within the bound by the other; revoking it again changes nothing', async () => {
    const made = await create({ role: 'read_only' });
    await eventually(async () => (await statusWith(secondUrl, made.key)) === 200, DEFAULT_API_KEYS_STALE_MS, 'the key on the second gateway');
    const revoked = await ops('POST', `/v1/api_keys/${made.id}/revoke`);
    assert.equal(revoked.status, 200, revoked.text);
    assert.ok(revoked.json.revoked_at);
    assert.equal(revoked.json.revoked_by, 'key keys-api-operator (Ada (operator))');
    assert.equal(await statusWith(h.gw.url, made.key), 401);
    await eventually(async () => (await statusWith(secondUrl, made.key)) === 401, DEFAULT_API_KEYS_STALE_MS, 'the revoke on the second gateway');
    const again = await ops('POST', `/v1/api_keys/${made.id}/revoke`);
    assert.equal(again.status, 200, again.text);
    assert.equal(again.json.revoked_at, revoked.json.revoked_at);
    assert.equal((await ops('POST', `/v1/api_keys/ak_${'0'.repeat(24)}/revoke`)).status, 404);
    assert.equal(await statusWith(h.gw.url, `mpfa_${'x'.repeat(43)}`), 401, 'a key of the API\'s shape it never made');
    const bad = await ops('POST', '/v1/api_keys/not-a-key/revoke');
    assert.equal(bad.status, 400, bad.text);
    assert.equal(bad.json.field, 'key_id');
  });

  test("a rotation's successor works at once and the old key only for its overlap, then is refused as expired", async () => {
    const old = await create({ role: 'backend', label: 'batch' });
    const rotated = await ops('POST', `/v1/api_keys/${old.id}/rotate`, { overlap_seconds: 3 });
    assert.equal(rotated.status, 201, rotated.text);
    assert.match(rotated.json.key as string, /^mpfa_/);
    assert.equal(rotated.json.role, 'backend');
    assert.equal(rotated.json.label, 'batch');
    const listed = ((await ops('GET', '/v1/api_keys')).json.data as Array<Record<string, string>>).find((k) => k.id === old.id);
    assert.equal(listed?.rotated_to, rotated.json.id);
    assert.ok(listed?.expires_at);
    assert.equal(await statusWith(h.gw.url, rotated.json.key as string), 200);
    await eventually(async () => (await statusWith(h.gw.url, old.key)) === 401, 20_000, 'the end of the overlap');
    const refused = await on(h.gw.url, old.key).api('GET', '/v1/swaps?limit=1');
    assert.equal(refused.json.error, 'key_expired');
    assert.equal(await statusWith(h.gw.url, rotated.json.key as string), 200);
    const twice = await ops('POST', `/v1/api_keys/${old.id}/rotate`, {});
    assert.equal(twice.status, 409, twice.text);
    const long = await ops('POST', `/v1/api_keys/${rotated.json.id}/rotate`, { overlap_seconds: 8 * 86_400 });
    assert.equal(long.status, 400, long.text);
    assert.equal(long.json.field, 'overlap_seconds');
  });

  test('a key with expires_at works until then and is refused after; bad input is refused naming the field', async () => {
    const made = await create({ role: 'read_only', expires_at: new Date(Date.now() + 4_000).toISOString() });
    assert.equal(await statusWith(h.gw.url, made.key), 200);
    await eventually(async () => (await statusWith(h.gw.url, made.key)) === 401, 20_000, 'the expiry');
    assert.equal((await on(h.gw.url, made.key).api('GET', '/v1/swaps?limit=1')).json.error, 'key_expired');
    for (const [body, field] of [
      [{ role: 'root' }, 'role'],
      [{ role: 'backend', expires_at: '2020-01-01T00:00:00Z' }, 'expires_at'],
      [{ role: 'backend', expires_at: 'tomorrow' }, 'expires_at'],
      [{ role: 'backend', label: 'two\nlines' }, 'label'],
    ] as const) {
      const r = await ops('POST', '/v1/api_keys', body);
      assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
      assert.equal(r.json.field, field, r.text);
    }
    const chosen = await ops('POST', '/v1/api_keys', { role: 'backend', key: 'mpfa_mine-0123456789abcdef' });
    assert.equal(chosen.status, 400, 'a key is never chosen by the caller');
    assert.match(chosen.json.message as string, /"key"/);
  });

  test('only operators manage keys: a backend or read-only key, from the file or the API, is refused 403', async () => {
    const madeBackend = await create({ role: 'backend' });
    for (const key of [backend.key, reader.key, madeBackend.key]) {
      for (const [method, path] of [
        ['GET', '/v1/api_keys'],
        ['POST', '/v1/api_keys'],
        ['POST', `/v1/api_keys/${madeBackend.id}/revoke`],
        ['POST', `/v1/api_keys/${madeBackend.id}/rotate`],
      ] as const) {
        const r = await on(h.gw.url, key).api(method, path, method === 'POST' ? { role: 'operator' } : undefined);
        assert.equal(r.status, 403, `${method} ${path}: ${r.text}`);
      }
    }
    const madeOperator = await create({ role: 'operator' });
    const byIt = await on(h.gw.url, madeOperator.key).api('POST', '/v1/api_keys', { role: 'read_only' });
    assert.equal(byIt.status, 201, byIt.text);
    assert.equal(byIt.json.created_by, `key ${madeOperator.id}`);
  });

  test('mpf keys create, list, rotate and revoke go through the gateway; the key is printed by create and rotate only', async () => {
    const env = { PATH: process.env.PATH, HOME: process.env.HOME, MPF_GATEWAY_URL: h.gw.url, MPF_API_KEY: operator.key };
    const mpf = async (args: string[]) => {
      const r = await runMpf(['keys', ...args], env, { timeoutMs: 60_000 });
      assert.equal(r.code, 0, `mpf keys ${args.join(' ')}: ${r.stderr}`);
      return r.stdout;
    };
    const created = await mpf(['create', '--role', 'read_only', '--label', 'from the cli']);
    const [, id] = /^(ak_[0-9a-f]{24})\s/m.exec(created) ?? [];
    const [, key] = /^key:\s+(mpfa_\S+)$/m.exec(created) ?? [];
    assert.ok(id && key, created);
    assert.equal(await statusWith(h.gw.url, key!), 200);
    const list = await mpf(['list']);
    assert.match(list, new RegExp(`^${id}\\s+read_only`, 'm'));
    assert.ok(!list.includes('mpfa_'));
    const rotated = await mpf(['rotate', id!, '--overlap-seconds', '0']);
    assert.match(rotated, /^key:\s+mpfa_/m);
    assert.equal(await statusWith(h.gw.url, key!), 401);
    const [, newId] = /^(ak_[0-9a-f]{24})\s/m.exec(rotated) ?? [];
    assert.match(await mpf(['revoke', newId!]), /revoked/);
    assert.ok(!(await mpf(['list', '--json'])).includes('mpfa_'));
  });

  test(`a deployment holds at most ${MAX_API_KEYS} live keys: one more is 409, and a revoke makes room`, async () => {
    const live = ((await ops('GET', '/v1/api_keys')).json.data as Array<{ revoked_at?: string; expires_at?: string }>).filter(
      (k) => !k.revoked_at && (!k.expires_at || Date.parse(k.expires_at) > Date.now()),
    ).length;
    let last = '';
    for (let i = live; i < MAX_API_KEYS; i++) last = (await create({ role: 'read_only' })).id;
    const over = await ops('POST', '/v1/api_keys', { role: 'read_only' });
    assert.equal(over.status, 409, over.text);
    assert.match(over.json.message as string, new RegExp(`at most ${MAX_API_KEYS}`));
    assert.equal((await ops('POST', `/v1/api_keys/${last}/revoke`)).status, 200);
    const room = await create({ role: 'read_only' });
    assert.equal((await ops('POST', `/v1/api_keys/${room.id}/revoke`)).status, 200, 'room again for the next test');
  });

  test('a gateway that cannot read the record refuses its keys 503 once its reading is stale, while the keyring file keeps working', async () => {
    const made = await create({ role: 'read_only' });
    const quick = await startGateway({ mpf: h.stack.mpf, keyring: new KeyringSource({ json: fileKeys }), port: 0, apiKeys: { refreshMs: 500, staleMs: 2_000 } });
    try {
      await eventually(async () => (await statusWith(quick.url, made.key)) === 200, 20_000, 'the key on the quick gateway');
      await h.stack.stopWorker();
      const refused = await eventually(async () => {
        const r = await on(quick.url, made.key).api('GET', '/v1/swaps?limit=1');
        return r.status === 503 ? r : undefined;
      }, 30_000, 'the stale reading refused');
      assert.equal(refused.json.error, 'api_keys_unavailable', refused.text);
      assert.ok(refused.headers['retry-after']);
      assert.equal(await statusWith(quick.url, reader.key), 200, "the keyring file's key still works");
      assert.equal(await statusWith(quick.url, 'mpfk_not-a-key-of-this-gateway-0123456789'), 401, 'a key not of the API\'s shape is still refused as unknown');
      await h.stack.startWorker();
      await eventually(async () => (await statusWith(quick.url, made.key)) === 200, 30_000, 'the key again once the record answers');
    } finally {
      await h.stack.startWorker();
      await quick.close();
    }
  });
});
