/**
 * Budgets every gateway sees, kept in Temporal: the wrong-PIN budget per user (two gateways that
 * share nothing but Temporal; it fails closed, and survives a rotation of the payload keys) and
 * the cap of live Idempotency-Key records per API key.
 */
import { spawn } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client, Connection } from '@temporalio/client';
import { clientDataConverter } from '../../src/codec/data-converter';
import { generateDevKeys } from '../../src/codec/keys';
import { LEGACY_KEY_ID } from '../../src/auth/keyring';
import { MpfClient } from '../../src/starter/client/mpf-client';
import { type RunningGateway, startGateway } from '../../src/starter/gateway/main';
import { DEFAULT_PIN_BUDGET } from '../../src/starter/client/pin-budget';
import { pinBudgetCountsQuery } from '../../src/workflows/pin-budget';
import { SIM_PIN, swapBody, uniqueRef } from '../helpers/fixtures';
import { API_KEY, type GatewayHarness, gatewayCaller, http, startGatewayStack } from '../helpers/gateway';
import { eventually } from '../helpers/stack';
import { getTestTemporal } from '../helpers/temporal';

const WRONG_PIN = '111333';

type StartedSwap = { swap_id: string; txn_ref: string; pin_token: string };

/** A swap of `user` started through the harness's gateway. */
async function startSwapOf(h: GatewayHarness, user: string): Promise<StartedSwap> {
  const r = await h.api('POST', '/v1/swaps', swapBody(uniqueRef('budget'), { user_ref: user }));
  assert.equal(r.status, 201, r.text);
  return r.json as StartedSwap;
}

/**
 * Eleven wrong PINs, three per swap (each swap's own cap), the gateways taking turns: each answer's
 * outcome, or `<status> <error>`; a 429 carries Retry-After.
 */
async function elevenWrongPinsInTurns(swaps: StartedSwap[], gateways: [string, string]): Promise<string[]> {
  const outcomes: string[] = [];
  let turn = 0;
  for (const s of swaps) {
    for (let k = 0; k < 3 && outcomes.length < 11; k++) {
      const r = await pin(gateways[turn++ % 2]!, s);
      outcomes.push(r.status === 200 ? r.json.outcome : `${r.status} ${r.json?.error}`);
      if (r.status === 429) assert.match(String(r.headers['retry-after']), /^\d+$/);
    }
  }
  return outcomes;
}

/** A PIN (by default a wrong one) for the swap through the gateway at `gw`, authorised by its pin_token. */
const pin = (gw: string, s: Pick<StartedSwap, 'swap_id' | 'pin_token'>, walletPin = WRONG_PIN) =>
  http('POST', `${gw}/v1/swaps/${s.swap_id}/pin`, { body: { wallet_pin: walletPin }, headers: { authorization: `Bearer ${s.pin_token}` } });

/** The updates of `name` the budget's run accepted (its history). */
async function acceptedUpdates(h: GatewayHarness, workflowId: string, runId: string, name: 'take' | 'settle'): Promise<number> {
  const history = await h.stack.client.workflow.getHandle(workflowId, runId).fetchHistory();
  return (history.events ?? []).filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === name).length;
}

/** What the user's budget counts now (its latest run): slots held (in flight or reserved) and wrong PINs. */
async function budgetCounts(h: GatewayHarness, user: string): Promise<{ held: number; wrong: number; runId: string }> {
  const handle = h.stack.client.workflow.getHandle(h.stack.mpf.sharedPinBudget(DEFAULT_PIN_BUDGET).workflowId(user));
  const [counts, d] = await Promise.all([handle.query(pinBudgetCountsQuery), handle.describe()]);
  return { ...counts, runId: d.runId };
}

/** A swap of `user` started through the first gateway, once its slot is reserved: the budget's id and run, and the swap. */
async function startWithReservedSlot(h: GatewayHarness, user: string) {
  const budgetId = h.stack.mpf.sharedPinBudget(DEFAULT_PIN_BUDGET).workflowId(user);
  const s = await startSwapOf(h, user);
  const { runId } = await eventually(async () => {
    const c = await budgetCounts(h, user);
    return c.held === 1 && c;
  }, 20_000, 'the slot reserved as the swap started');
  return { budgetId, s, runId };
}

describe('the wrong-PIN budget per user, across two gateways', () => {
  let h: GatewayHarness;
  let gw2: RunningGateway;
  let gwStart: RunningGateway;

  before(async () => {
    h = await startGatewayStack();
    // A second gateway: its own client and app, no memory shared with the first; one Temporal.
    const mpf2 = new MpfClient({ client: h.stack.client, taskQueue: h.stack.taskQueue, keys: h.stack.keys, publicUrl: h.gw.url });
    gw2 = await startGateway({ mpf: mpf2, apiKey: API_KEY, port: 0, publicUrl: h.gw.url });
    // A third, as before reservations: it starts the budget beside the swap and reserves nothing.
    const mpf3 = new MpfClient({ client: h.stack.client, taskQueue: h.stack.taskQueue, keys: h.stack.keys, publicUrl: h.gw.url });
    gwStart = await startGateway({ mpf: mpf3, apiKey: API_KEY, port: 0, publicUrl: h.gw.url, pinSlotAhead: 'start' });
  });
  after(async () => {
    await gwStart?.close();
    await gw2?.close();
    await h?.stop();
  });

  const startSwap = (user: string) => startSwapOf(h, user);
  const confirms = async (swaps: Array<{ txn_ref: string }>) => {
    let n = 0;
    for (const s of swaps) n += (await h.stack.control.ledger({ ref: s.txn_ref, endpoint: 'swap.confirm' })).requests.length;
    return n;
  };

  test("a swap started through a gateway with pinSlotAhead 'start' starts its user's budget beside it, and the PIN's slot is taken in that run, not in one started while the user waits", async () => {
    const user = uniqueRef('prepared');
    const budgetId = h.stack.mpf.sharedPinBudget(DEFAULT_PIN_BUDGET).workflowId(user);
    const started = await http('POST', `${gwStart.url}/v1/swaps`, { body: swapBody(uniqueRef('budget'), { user_ref: user }), headers: { 'x-api-key': API_KEY } });
    assert.equal(started.status, 201, started.text);
    const s = started.json as StartedSwap;
    const prepared = await eventually(async () => {
      const d = await h.stack.client.workflow.getHandle(budgetId).describe();
      assert.equal(d.status.name, 'RUNNING');
      return d.runId;
    });
    const r = await http('POST', `${gw2.url}/v1/swaps/${s.swap_id}/pin`, { body: { wallet_pin: SIM_PIN }, headers: { authorization: `Bearer ${s.pin_token}` } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.outcome, 'confirmed');
    const history = await h.stack.client.workflow.getHandle(budgetId, prepared).fetchHistory();
    const takes = (history.events ?? []).filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === 'take');
    assert.equal(takes.length, 1, 'the PIN took its slot in the run started beside the swap');
  });

  test('a swap started through a gateway has its slot reserved as it starts, and its PIN through that gateway makes no take of its own', async () => {
    const user = uniqueRef('reserved');
    const { budgetId, s, runId } = await startWithReservedSlot(h, user);
    assert.equal(await acceptedUpdates(h, budgetId, runId, 'take'), 1, 'one take: the reservation');
    const r = await pin(h.gw.url, { ...s }, SIM_PIN);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.outcome, 'confirmed');
    // The PIN's slot (the reservation) is given back once the PIN confirmed.
    await eventually(async () => (await acceptedUpdates(h, budgetId, runId, 'settle')) === 1, 20_000, "the reservation's settle");
    assert.equal(await acceptedUpdates(h, budgetId, runId, 'take'), 1, 'the PIN made no take of its own');
  });

  test('a PIN through another gateway than the one that started the swap takes a slot as before', async () => {
    const user = uniqueRef('elsewhere');
    const { budgetId, s, runId } = await startWithReservedSlot(h, user);
    const r = await pin(gw2.url, s, SIM_PIN);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.outcome, 'confirmed');
    assert.equal(await acceptedUpdates(h, budgetId, runId, 'take'), 2, "the reservation on the first gateway, and the PIN's own take on the second");
  });

  test('a user with more swaps open than half the budget can still enter a PIN on each: reservations stop at half, the rest take', async () => {
    const user = uniqueRef('many-open');
    const swaps = [];
    for (let i = 0; i < 7; i++) swaps.push(await startSwap(user));
    await eventually(async () => (await budgetCounts(h, user)).held === 5, 20_000, 'five slots reserved (half the budget of 10), not seven');
    for (const s of swaps) {
      const r = await pin(h.gw.url, s, SIM_PIN);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.outcome, 'confirmed');
    }
  });

  test('a swap whose start the provider refused leaves no slot held', async () => {
    const user = uniqueRef('refused-start');
    const budgetId = h.stack.mpf.sharedPinBudget(DEFAULT_PIN_BUDGET).workflowId(user);
    await h.stack.control.setFaults({ rules: [{ endpoint: 'swap.init', kind: 'html_error', status: 400, times: 1 }] });
    const r = await h.api('POST', '/v1/swaps', swapBody(uniqueRef('budget'), { user_ref: user }));
    assert.equal(r.status, 502, r.text);
    // The reservation reached the budget (one take), and was given back (one settle): nothing is held.
    const runId = (await h.stack.client.workflow.getHandle(budgetId).describe()).runId;
    await eventually(async () => (await acceptedUpdates(h, budgetId, runId, 'settle')) === 1, 20_000, 'the reservation given back');
    assert.equal(await acceptedUpdates(h, budgetId, runId, 'take'), 1);
    const c = await budgetCounts(h, user);
    assert.deepEqual([c.held, c.wrong], [0, 0], 'no slot held');
  });

  test('a gateway that stops gives back the slots it reserved for PINs that did not come, and its background calls settle first', async () => {
    const user = uniqueRef('stopping');
    const mpf4 = new MpfClient({ client: h.stack.client, taskQueue: h.stack.taskQueue, keys: h.stack.keys, publicUrl: h.gw.url });
    const gw4 = await startGateway({ mpf: mpf4, apiKey: API_KEY, port: 0, publicUrl: h.gw.url });
    let closed = false;
    try {
      const r = await gatewayCaller(gw4.url, API_KEY).api('POST', '/v1/swaps', swapBody(uniqueRef('budget'), { user_ref: user }));
      assert.equal(r.status, 201, r.text);
      await eventually(async () => (await budgetCounts(h, user)).held === 1, 20_000, 'the slot reserved as the swap started');
      await gw4.close();
      closed = true;
      // The give-back was sent and settled before close() returned: no wait for the 7-minute hold.
      assert.deepEqual(await budgetCounts(h, user).then(({ held, wrong }) => ({ held, wrong })), { held: 0, wrong: 0 });
    } finally {
      if (!closed) await gw4.close();
    }
  });

  test('after a wrong PIN the next PIN of the same swap uses a new reservation, and both count', async () => {
    const user = uniqueRef('retry');
    const { budgetId, s, runId } = await startWithReservedSlot(h, user);
    const wrong = await pin(h.gw.url, s);
    assert.equal(wrong.json.outcome, 'pin_rejected', wrong.text);
    // The wrong PIN is kept, and the swap's next slot reserved in the background.
    await eventually(async () => {
      const c = await budgetCounts(h, user);
      return c.wrong === 1 && c.held === 1;
    }, 20_000, 'one wrong PIN kept and the next slot reserved');
    assert.equal(await acceptedUpdates(h, budgetId, runId, 'take'), 2, 'the reservation at the start, and the one after the wrong PIN');
    const second = await pin(h.gw.url, s);
    assert.equal(second.json.outcome, 'pin_rejected', second.text);
    await eventually(async () => (await budgetCounts(h, user)).wrong === 2, 20_000, 'both wrong PINs counted');
    // The second PIN used the reservation: the takes are the three reservations (the start's, one after each wrong PIN).
    await eventually(async () => (await acceptedUpdates(h, budgetId, runId, 'take')) === 3, 20_000, 'the third reservation');
    const third = await pin(h.gw.url, s, SIM_PIN);
    assert.equal(third.json.outcome, 'confirmed', third.text);
    await eventually(async () => (await acceptedUpdates(h, budgetId, runId, 'settle')) === 3, 20_000, 'three settles');
    assert.equal(await acceptedUpdates(h, budgetId, runId, 'take'), 3, 'no PIN made a take of its own');
  });

  test('wrong PINs taking turns on two gateways stop at 10 per user; the 11th is 429 with Retry-After', async () => {
    const user = uniqueRef('user-turns');
    const swaps = [];
    for (let i = 0; i < 4; i++) swaps.push(await startSwap(user));
    const outcomes = await elevenWrongPinsInTurns(swaps, [h.gw.url, gw2.url]);
    assert.deepEqual(outcomes.slice(0, 10), Array(10).fill('pin_rejected'));
    assert.equal(outcomes[10], '429 rate_limited');
    assert.equal(await confirms(swaps), 10, 'ten wrong PINs reached the provider, not more');
    // The budget is per user: another user's PIN still goes through on either gateway.
    const other = await startSwap(uniqueRef('user-other'));
    assert.equal((await pin(gw2.url, other)).json.outcome, 'pin_rejected');
  });

  test('twelve wrong PINs at once for one user over two gateways, 20 rounds on a busy machine, never let more than 10 reach the provider', { timeout: 600_000 }, async (t) => {
    // A process burning a core beside the stack: the budget's answers slow down, as on a loaded
    // machine. Whatever it cannot answer in time is refused (503), never let through uncounted.
    const burner = spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });
    try {
      const tally = { rejected: 0, limited: 0, unavailable: 0 };
      for (let round = 0; round < 20; round++) {
        const user = uniqueRef(`user-burst-${round}`);
        const swaps = await Promise.all(Array.from({ length: 12 }, () => startSwap(user)));
        const answers = await Promise.all(swaps.map((s, i) => pin(i % 2 ? gw2.url : h.gw.url, s)));
        let rejected = 0;
        for (const [i, r] of answers.entries()) {
          const sent = (await h.stack.control.ledger({ ref: swaps[i]!.txn_ref, endpoint: 'swap.confirm' })).requests.length;
          if (r.status === 200) {
            assert.equal(r.json.outcome, 'pin_rejected', r.text);
            assert.equal(sent, 1, 'an answered PIN reached the provider once');
            rejected++;
            continue;
          }
          assert.ok(
            (r.status === 429 && r.json.error === 'rate_limited') || (r.status === 503 && r.json.error === 'pin_budget_unavailable'),
            `round ${round}: ${r.status} ${r.text}`,
          );
          assert.match(String(r.headers['retry-after']), /^\d+$/, 'Retry-After on every refusal');
          assert.equal(sent, 0, 'a refused PIN reached nothing');
          tally[r.status === 429 ? 'limited' : 'unavailable']++;
        }
        assert.ok(rejected <= 10, `round ${round}: ${rejected} wrong PINs answered`);
        assert.ok((await confirms(swaps)) <= 10, `round ${round}: at most ten reached the provider`);
        tally.rejected += rejected;
      }
      t.diagnostic(`20 rounds of 12: ${tally.rejected} wrong PINs answered, ${tally.limited} refused 429, ${tally.unavailable} refused 503`);
    } finally {
      burner.kill('SIGKILL');
    }
  });

  test('a PIN whose budget cannot answer in time is refused 503 pin_budget_unavailable with Retry-After; nothing reaches the swap', async () => {
    // A budget that never answers in time (1 ms) stands for one swamped, or with no worker to answer.
    const mpf3 = new MpfClient({ client: h.stack.client, taskQueue: h.stack.taskQueue, keys: h.stack.keys, publicUrl: h.gw.url });
    const gw3 = await startGateway({ mpf: mpf3, apiKey: API_KEY, port: 0, publicUrl: h.gw.url, userPinBudget: { max: 10, timeWindowMs: 15 * 60_000, answerTimeoutMs: 1 } });
    try {
      const user = uniqueRef('user-busy');
      const swaps = [];
      for (let i = 0; i < 3; i++) swaps.push(await startSwap(user));
      // A swap started through that gateway: its reservation was never granted, so its PIN takes, and fails closed too.
      const own = await http('POST', `${gw3.url}/v1/swaps`, { body: swapBody(uniqueRef('budget'), { user_ref: user }), headers: { 'x-api-key': API_KEY } });
      assert.equal(own.status, 201, own.text);
      swaps.push(own.json as StartedSwap);
      for (const s of swaps) {
        const r = await pin(gw3.url, s);
        assert.equal(r.status, 503, r.text);
        assert.equal(r.json.error, 'pin_budget_unavailable');
        assert.match(String(r.json.message), /the PIN was not sent/);
        assert.equal(r.headers['retry-after'], '5');
      }
      assert.equal(await confirms(swaps), 0, 'no PIN reached the provider');
      const view = await h.api('GET', `/v1/swaps/${swaps[0]!.swap_id}`);
      assert.equal(view.json.state, 'awaiting_pin');
      assert.equal(view.json.pin_attempts_left, 3, 'no attempt spent');
      // Through a gateway whose budget answers, the same PIN goes on.
      // Retried on a 503 as a client does (Retry-After): the budget may still be working through
      // the takes the 1 ms gateway gave up on.
      let after = await pin(h.gw.url, swaps[0]!);
      for (let i = 0; i < 3 && after.status === 503; i++) {
        await new Promise((r) => setTimeout(r, 2_000));
        after = await pin(h.gw.url, swaps[0]!);
      }
      assert.equal(after.json.outcome, 'pin_rejected', `${after.status} ${after.text}`);
    } finally {
      await gw3.close();
    }
  });
});

describe('the wrong-PIN budget through a rotation of the payload keys', () => {
  // A rotation as docs/operations/key-rotation.md runs it: first every process knows the new key
  // (old key still active), then gateways restart one by one with the new key first.
  const oldKey = generateDevKeys('old');
  const newKey = generateDevKeys('new');
  let h: GatewayHarness;
  let rotated: RunningGateway;
  let rotatedConnection: Connection;

  before(async () => {
    h = await startGatewayStack({ keys: `${oldKey},${newKey}` });
    const temporal = await getTestTemporal();
    rotatedConnection = await Connection.connect({ address: temporal.address });
    const keys = `${newKey},${oldKey}`;
    const client = new Client({ connection: rotatedConnection, namespace: temporal.namespace, dataConverter: clientDataConverter(keys) });
    const mpf = new MpfClient({ client, taskQueue: h.stack.taskQueue, keys, publicUrl: h.gw.url });
    rotated = await startGateway({ mpf, apiKey: API_KEY, port: 0, publicUrl: h.gw.url });
  });
  after(async () => {
    await rotated?.close();
    await rotatedConnection?.close();
    await h?.stop();
  });

  const startSwap = (user: string) => startSwapOf(h, user);

  test('a user who spent the budget before the new key became active is still refused after it', async () => {
    const user = uniqueRef('user-rotated');
    for (let i = 0; i < 4; i++) {
      const s = await startSwap(user);
      for (let k = 0; k < (i < 3 ? 3 : 1); k++) assert.equal((await pin(h.gw.url, s)).json.outcome, 'pin_rejected');
    }
    const after = await pin(rotated.url, await startSwap(user));
    assert.equal(after.status, 429, after.text);
    assert.match(String(after.headers['retry-after']), /^\d+$/);
  });

  test('two gateways mid-rotation, one with the old key active and one with the new, count into one budget', async () => {
    const user = uniqueRef('user-mid-rotation');
    const swaps = [];
    for (let i = 0; i < 4; i++) swaps.push(await startSwap(user));
    const outcomes = await elevenWrongPinsInTurns(swaps, [h.gw.url, rotated.url]);
    assert.deepEqual(outcomes.slice(0, 10), Array(10).fill('pin_rejected'));
    assert.equal(outcomes[10], '429 rate_limited');
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
