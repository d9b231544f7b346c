/**
 * Budgets every gateway sees, kept in Temporal: the wrong-PIN budget per user (two gateways that
 * share nothing but Temporal) and the cap of live Idempotency-Key records per API key.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { LEGACY_KEY_ID } from '../../src/auth/keyring';
import { MpfClient } from '../../src/starter/client/mpf-client';
import { type RunningGateway, startGateway } from '../../src/starter/gateway/main';
import { swapBody, uniqueRef } from '../helpers/fixtures';
import { API_KEY, type GatewayHarness, http, startGatewayStack } from '../helpers/gateway';
import { eventually } from '../helpers/stack';

const WRONG_PIN = '111333';

describe('the wrong-PIN budget per user, across two gateways', () => {
  let h: GatewayHarness;
  let gw2: RunningGateway;

  before(async () => {
    h = await startGatewayStack();
    // A second gateway: its own client and app, no memory shared with the first; one Temporal.
    const mpf2 = new MpfClient({ client: h.stack.client, taskQueue: h.stack.taskQueue, keys: h.stack.keys, publicUrl: h.gw.url });
    gw2 = await startGateway({ mpf: mpf2, apiKey: API_KEY, port: 0, publicUrl: h.gw.url });
  });
  after(async () => {
    await gw2?.close();
    await h?.stop();
  });

  const startSwap = async (user: string) => {
    const r = await h.api('POST', '/v1/swaps', swapBody(uniqueRef('budget'), { user_ref: user }));
    assert.equal(r.status, 201, r.text);
    return r.json as { swap_id: string; txn_ref: string; pin_token: string };
  };
  const pin = (gw: string, s: { swap_id: string; pin_token: string }) =>
    http('POST', `${gw}/v1/swaps/${s.swap_id}/pin`, { body: { wallet_pin: WRONG_PIN }, headers: { authorization: `Bearer ${s.pin_token}` } });
  const confirms = async (swaps: Array<{ txn_ref: string }>) => {
    let n = 0;
    for (const s of swaps) n += (await h.stack.control.ledger({ ref: s.txn_ref, endpoint: 'swap.confirm' })).requests.length;
    return n;
  };

  test('wrong PINs taking turns on two gateways stop at 10 per user; the 11th is 429 with Retry-After', async () => {
    const user = uniqueRef('user-turns');
    const swaps = [];
    for (let i = 0; i < 4; i++) swaps.push(await startSwap(user));
    const outcomes: string[] = [];
    let turn = 0;
    for (const s of swaps) {
      for (let k = 0; k < 3 && outcomes.length < 11; k++) {
        const r = await pin(turn++ % 2 ? gw2.url : h.gw.url, s);
        outcomes.push(r.status === 200 ? r.json.outcome : `${r.status} ${r.json?.error}`);
        if (r.status === 429) assert.match(String(r.headers['retry-after']), /^\d+$/);
      }
    }
    assert.deepEqual(outcomes.slice(0, 10), Array(10).fill('pin_rejected'));
    assert.equal(outcomes[10], '429 rate_limited');
    assert.equal(await confirms(swaps), 10, 'ten wrong PINs reached the provider, not more');
    // The budget is per user: another user's PIN still goes through on either gateway.
    const other = await startSwap(uniqueRef('user-other'));
    assert.equal((await pin(gw2.url, other)).json.outcome, 'pin_rejected');
  });

  test('a burst of 12 wrong PINs over 12 swaps at once, split over both gateways, lets at most 10 reach the provider', async () => {
    const user = uniqueRef('user-burst');
    const swaps = [];
    for (let i = 0; i < 12; i++) swaps.push(await startSwap(user));
    const answers = await Promise.all(swaps.map((s, i) => pin(i % 2 ? gw2.url : h.gw.url, s)));
    const rejected = answers.filter((r) => r.status === 200 && r.json.outcome === 'pin_rejected').length;
    const limited = answers.filter((r) => r.status === 429).length;
    assert.equal(rejected + limited, 12, answers.map((r) => r.status).join(','));
    assert.ok(rejected <= 10, `${rejected} wrong PINs answered`);
    assert.ok(limited >= 2, `${limited} refused`);
    assert.ok((await confirms(swaps)) <= 10, 'at most ten reached the provider');
  });

  test("a burst of one user's PINs that its budget does not answer in time is refused 429, not let through", async () => {
    // A budget that never answers in time (1 ms) stands for one swamped by the burst. A lone PIN
    // would go on (as in an outage with no worker); PINs of the same user in flight together are
    // a burst: all but the last one standing are refused.
    const mpf3 = new MpfClient({ client: h.stack.client, taskQueue: h.stack.taskQueue, keys: h.stack.keys, publicUrl: h.gw.url });
    const gw3 = await startGateway({ mpf: mpf3, apiKey: API_KEY, port: 0, publicUrl: h.gw.url, userPinBudget: { max: 10, timeWindowMs: 15 * 60_000, answerTimeoutMs: 1 } });
    try {
      const user = uniqueRef('user-busy');
      const swaps = [];
      for (let i = 0; i < 6; i++) swaps.push(await startSwap(user));
      const answers = await Promise.all(swaps.map((s) => pin(gw3.url, s)));
      const refused = answers.filter((r) => r.status === 429);
      for (const r of refused) {
        assert.equal(r.json.error, 'rate_limited');
        assert.match(String(r.json.message), /at once/);
        assert.equal(r.headers['retry-after'], '2');
      }
      assert.ok(refused.length >= 3, `${refused.length} of 6 refused: ${answers.map((r) => r.status).join(',')}`);
      assert.equal(await confirms(swaps), 6 - refused.length, 'only the PINs not refused reached the provider');
    } finally {
      await gw3.close();
    }
  });
});

describe('live Idempotency-Key records per API key', () => {
  let h: GatewayHarness;
  before(async () => {
    h = await startGatewayStack({ client: { idempotencyMaxLivePerKey: 2 } });
  });
  after(async () => {
    await h?.stop();
  });

  const start = (key: string, txn: string) => h.call('POST', '/v1/swaps', { body: swapBody(txn), headers: { 'x-api-key': API_KEY, 'idempotency-key': key } });

  test('past the cap a new key is 429 with Retry-After and starts nothing; a retry of a live key still gets its answer', async () => {
    const a = uniqueRef('a');
    assert.equal((await start(`k-${a}`, a)).status, 201);
    const b = uniqueRef('b');
    assert.equal((await start(`k-${b}`, b)).status, 201);
    // Counted in visibility (shared by every gateway), which is a moment behind.
    await eventually(async () => (await h.stack.mpf.idempotency.countLive(LEGACY_KEY_ID)) >= 2, 15_000, 'two live records counted');
    const c = uniqueRef('c');
    const refused = await start(`k-${c}`, c);
    assert.equal(refused.status, 429, refused.text);
    assert.equal(refused.json.error, 'rate_limited');
    assert.equal(refused.json.field, 'Idempotency-Key');
    assert.match(String(refused.headers['retry-after']), /^\d+$/);
    assert.equal((await h.api('GET', `/v1/swaps/swap-${c}`)).status, 404, 'nothing started');
    const again = await start(`k-${a}`, a);
    assert.equal(again.status, 201, again.text);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    // A request without a key is not counted.
    assert.equal((await h.api('POST', '/v1/swaps', swapBody(uniqueRef('nokey')))).status, 201);
  });
});
