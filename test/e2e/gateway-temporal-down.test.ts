/**
 * The gateway while its Temporal server is down: a dev server of the test's own is stopped under
 * a running gateway, and every route that needs Temporal answers 503 temporal_unavailable with
 * Retry-After within a few seconds instead of a 500 after half a minute.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startDevServer, type DevServer } from '../../src/temporal/dev-server';
import { SIM_PIN, swapBody, uniqueRef } from '../helpers/fixtures';
import { type GatewayHarness, type http, startGatewayStack } from '../helpers/gateway';
import { eventually } from '../helpers/stack';

describe('the gateway while Temporal is down', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mpf-down-'));
  const dbFile = path.join(dir, 'temporal.db');
  let server: DevServer;
  let port: number;
  let h: GatewayHarness;
  let swapId: string;
  let pinToken: string;

  before(async () => {
    server = await startDevServer({ dbFile, unref: true });
    port = Number(server.address.split(':').pop());
    // The SDK's gRPC retry interceptor goes on retrying a call the client cancelled (the gateway
    // answered 503) until the call's deadline: a short PIN deadline keeps the retries of the
    // PIN's update (the pin_token is checked without Temporal) inside this test, not after it
    // closed the connection.
    h = await startGatewayStack({ temporal: { address: server.address, namespace: server.namespace }, client: { pinAnswerTimeoutMs: 6_000 } });
    const started = await h.api('POST', '/v1/swaps', swapBody(uniqueRef('down')));
    assert.equal(started.status, 201, started.text);
    swapId = started.json.swap_id;
    pinToken = started.json.pin_token;
    await h.stack.stopWorker();
    await server.stop();
  });
  after(async () => {
    await h?.stop().catch(() => undefined);
    await server?.stop().catch(() => undefined);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('answers 503 temporal_unavailable with Retry-After within a few seconds on every route that needs it', async () => {
    const calls: Array<[string, () => ReturnType<typeof http>]> = [
      ['state', () => h.api('GET', `/v1/swaps/${swapId}`)],
      ['start', () => h.api('POST', '/v1/swaps', swapBody(uniqueRef('down-start')))],
      ['pin', () => h.call('POST', `/v1/swaps/${swapId}/pin`, { body: { wallet_pin: SIM_PIN }, headers: { authorization: `Bearer ${pinToken}` } })],
      ['notification', () => h.call('POST', `/v1/notifications/swap/${swapId}/${'t'.repeat(43)}`, { body: { status: 'successful' } })],
    ];
    for (const [name, call] of calls) {
      const started = Date.now();
      const res = await call();
      const took = Date.now() - started;
      assert.equal(res.status, 503, `${name}: ${res.text}`);
      assert.equal(res.json.error, 'temporal_unavailable', name);
      assert.ok(res.headers['retry-after'], `${name}: Retry-After`);
      assert.ok(took < 8_000, `${name} answered in ${took} ms`);
    }
  });

  test('answers from Temporal again once the server is back', async () => {
    server = await startDevServer({ dbFile, port, unref: true });
    const back = await eventually(async () => {
      const r = await h.api('GET', `/v1/swaps/${swapId}`);
      return r.json?.error !== 'temporal_unavailable' && r;
    }, 60_000, 'Temporal to answer again');
    // No worker runs in this stack any more: the swap's last state, with 503 worker_unavailable.
    assert.equal(back.status, 503, back.text);
    assert.equal(back.json.error, 'worker_unavailable');
    assert.equal(back.json.last_known_state, 'awaiting_pin');
  });
});
