/**
 * Daily limits on starts, kept in Temporal (src/starter/client/limits.ts, the ledger workflow in
 * src/workflows/limit-ledger.ts): two gateways that share nothing but Temporal count against the
 * same limits; a start past a limit answers 422 limit_exceeded naming it and starts nothing (no
 * workflow, no call to the provider); replays and duplicates count once; a flow the provider
 * refused at once is given back; a ledger that cannot answer refuses the start (503).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { WorkflowNotFoundError } from '@temporalio/client';
import { ConfigError, loadEnv } from '../../src/config/env';
import { type DailyLimits, dailyLimitsFromEnv } from '../../src/config/limits-env';
import { DuplicateFlowError, LimitExceededError } from '../../src/starter/client/errors';
import { DEFAULT_LEASE_BLOCK } from '../../src/starter/client/deployment-quota';
import { deploymentLedgerId, userLedgerIds, utcDay } from '../../src/starter/client/limits';
import { MpfClient } from '../../src/starter/client/mpf-client';
import { formatCliError } from '../../src/starter/cli/errors';
import { type RunningGateway, startGateway } from '../../src/starter/gateway/main';
import { limitTotalsQuery } from '../../src/workflows/limit-ledger';
import { linkBody, swapBody, uniqueRef } from '../helpers/fixtures';
import { API_KEY, type GatewayCaller, gatewayCaller, type GatewayHarness, type HttpAnswer, startGatewayStack } from '../helpers/gateway';

const LIMITS: DailyLimits = {
  swap_count_per_user_day: 3,
  swap_amount_per_user_day: { USD: '30', NGN: '500000' },
  link_count_per_deployment_day: 3,
};

describe('daily limits across two gateways', () => {
  let h: GatewayHarness;
  let gw2: RunningGateway;
  let second: GatewayCaller;

  before(async () => {
    h = await startGatewayStack({ client: { dailyLimits: LIMITS } });
    // A second gateway: its own client and app, no memory shared with the first; one Temporal.
    const mpf2 = new MpfClient({ client: h.stack.client, taskQueue: h.stack.taskQueue, keys: h.stack.keys, publicUrl: h.gw.url, dailyLimits: LIMITS });
    gw2 = await startGateway({ mpf: mpf2, apiKey: API_KEY, port: 0, publicUrl: h.gw.url });
    second = gatewayCaller(gw2.url, API_KEY);
    // One start of a user no test uses, through each gateway: a fresh worker's first ledger and swap
    // on a loaded machine can take longer than the ledger's 5 s answer bound (503, failing closed as
    // it should: nothing started); the tests below are about what the limits decide, not about a
    // cold worker, so a warm-up refused that way is sent again (at most 4 times).
    for (const caller of [h, second]) {
      const user = uniqueRef('user-warm');
      for (let attempt = 1; ; attempt++) {
        const warm = await caller.api('POST', '/v1/swaps', swapBody(uniqueRef('warm'), { user_ref: user, amount: 1 }));
        if (warm.status === 503 && attempt < 4) continue;
        assert.equal(warm.status, 201, warm.text);
        break;
      }
    }
  });
  after(async () => {
    await gw2?.close();
    await h?.stop();
  });

  /** Each gateway in turn: the first for even turns, the second for odd ones. */
  const startSwapOn = (turn: number, body: unknown): Promise<HttpAnswer> => (turn % 2 ? second.api('POST', '/v1/swaps', body) : h.api('POST', '/v1/swaps', body));

  /** Whether Temporal knows a workflow of this id (running or closed). */
  const exists = async (workflowId: string): Promise<boolean> => {
    try {
      await h.stack.client.workflow.getHandle(workflowId).describe();
      return true;
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return false;
      throw err;
    }
  };
  /** The requests the simulator's ledger saw for a reference at an endpoint. */
  const providerCalls = async (ref: string, endpoint: 'swap.init' | 'link.create'): Promise<number> => (await h.stack.control.ledger({ ref, endpoint })).requests.length;
  /** The user's swap count today, as their ledger (under the active key) keeps it. */
  const swapCountOf = async (user: string): Promise<string | undefined> => {
    const totals = await h.stack.client.workflow.getHandle(userLedgerIds(h.stack.keys, user, utcDay(Date.now()))[0]!).query(limitTotalsQuery);
    return totals['count:swap'] ?? '0';
  };

  /** Asserts a 422 limit_exceeded naming `limit`, and that nothing of `txnRef` was started. */
  const refusedAndNothingStarted = async (r: HttpAnswer, limit: string, field: string | undefined, flowId: string, txnRef: string, endpoint: 'swap.init' | 'link.create') => {
    assert.equal(r.status, 422, r.text);
    assert.equal(r.json.error, 'limit_exceeded');
    assert.equal(r.json.limit, limit);
    assert.equal(r.json.field, field);
    assert.match(r.json.message, new RegExp(`${limit}.*nothing was started`));
    assert.match(r.json.resets_at, /^\d{4}-\d{2}-\d{2}T00:00:00\.000Z$/);
    assert.equal(await exists(flowId), false, `no workflow ${flowId} in Temporal`);
    assert.equal(await providerCalls(txnRef, endpoint), 0, 'the provider saw nothing of it');
  };

  test('a user past swap_count_per_user_day over two gateways is refused 422 naming the limit, and nothing is started', async () => {
    const user = uniqueRef('user-count');
    for (let i = 0; i < 3; i++) {
      const r = await startSwapOn(i, swapBody(uniqueRef('count'), { user_ref: user, amount: 1 }));
      assert.equal(r.status, 201, r.text);
    }
    const txn = uniqueRef('count-4th');
    await refusedAndNothingStarted(await startSwapOn(3, swapBody(txn, { user_ref: user, amount: 1 })), 'swap_count_per_user_day', 'user_ref', `swap-${txn}`, txn, 'swap.init');
    // Another user is not concerned, on either gateway.
    assert.equal((await startSwapOn(1, swapBody(uniqueRef('other'), { user_ref: uniqueRef('user-other'), amount: 1 }))).status, 201);
    // The CLI (straight to Temporal) prints the same refusal in one line, naming the option and the limit.
    const direct = await h.stack.mpf.startSwap(swapBody(uniqueRef('count-cli'), { user_ref: user, amount: 1 })).then(
      () => assert.fail('started past the limit'),
      (err: unknown) => err,
    );
    assert.ok(direct instanceof LimitExceededError);
    assert.match(formatCliError(direct), /^user_ref: this user_ref has started the 3 swaps swap_count_per_user_day allows in a UTC day; nothing was started/);
  });

  test('six starts at once for one user over two gateways: exactly three start, the others are refused 422 and start nothing', async () => {
    const user = uniqueRef('user-burst');
    const txns = Array.from({ length: 6 }, () => uniqueRef('burst'));
    const answers = await Promise.all(txns.map((txn, i) => startSwapOn(i, swapBody(txn, { user_ref: user, amount: 1 }))));
    assert.deepEqual(answers.map((r) => r.status).sort(), [201, 201, 201, 422, 422, 422], answers.map((r) => r.text).join('\n'));
    for (const [i, r] of answers.entries()) {
      if (r.status === 422) await refusedAndNothingStarted(r, 'swap_count_per_user_day', 'user_ref', `swap-${txns[i]}`, txns[i]!, 'swap.init');
    }
    assert.equal(await swapCountOf(user), '3');
  });

  test('amounts count exactly per currency: 0.01 + 16.26 + 13.73 USD reach 30 USD, 0.01 more is refused, another currency has its own limit', async () => {
    const user = uniqueRef('user-amount');
    assert.equal((await startSwapOn(0, swapBody(uniqueRef('amt'), { user_ref: user, amount: 0.01 }))).status, 201);
    assert.equal((await startSwapOn(1, swapBody(uniqueRef('amt'), { user_ref: user, amount: 16.26 }))).status, 201);
    const txn = uniqueRef('amt-over');
    await refusedAndNothingStarted(await startSwapOn(0, swapBody(txn, { user_ref: user, amount: 13.74 })), 'swap_amount_per_user_day', 'amount', `swap-${txn}`, txn, 'swap.init');
    // 30.00 exactly is within the limit (a float sum, 30.000000000000004, would refuse it).
    assert.equal((await startSwapOn(1, swapBody(uniqueRef('amt'), { user_ref: user, amount: 13.73 }))).status, 201);
    assert.equal(await swapCountOf(user), '3', 'the refused start counted nothing');
    // NGN has its own limit; a currency the limit does not name has none (count limits still hold).
    const other = uniqueRef('user-currencies');
    const ngn = await startSwapOn(0, swapBody(uniqueRef('ngn'), { user_ref: other, from_currency: 'NGN', to_currency: 'USD', amount: 500_000.01 }));
    assert.equal(ngn.status, 422, ngn.text);
    assert.equal(ngn.json.limit, 'swap_amount_per_user_day');
    assert.equal((await startSwapOn(1, swapBody(uniqueRef('eur'), { user_ref: other, from_currency: 'EUR', to_currency: 'NGN', amount: 900_000 }))).status, 201);
  });

  test('an Idempotency-Key replay, a resent start and a duplicate txn_ref of an accepted swap count once', async () => {
    const user = uniqueRef('user-replay');
    const txn = uniqueRef('replay');
    const body = swapBody(txn, { user_ref: user, amount: 1 });
    const key = `key-${txn}`;
    const headers = { 'x-api-key': API_KEY, 'idempotency-key': key };
    const first = await h.call('POST', '/v1/swaps', { body, headers });
    assert.equal(first.status, 201, first.text);
    // The same key through the other gateway: the first answer again.
    const replay = await second.call('POST', '/v1/swaps', { body, headers });
    assert.equal(replay.status, 201, replay.text);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    // The same start again without a key: 409 duplicate, on both gateways and straight to Temporal.
    assert.equal((await h.api('POST', '/v1/swaps', body)).status, 409);
    assert.equal((await second.api('POST', '/v1/swaps', body)).status, 409);
    await assert.rejects(h.stack.mpf.startSwap(body, { idempotencyId: 'a-retry-whose-first-answer-was-lost' }), DuplicateFlowError);
    assert.equal(await swapCountOf(user), '1');
    // So the user still has two swaps of their three.
    assert.equal((await startSwapOn(0, swapBody(uniqueRef('replay-2'), { user_ref: user, amount: 1 }))).status, 201);
    assert.equal((await startSwapOn(1, swapBody(uniqueRef('replay-3'), { user_ref: user, amount: 1 }))).status, 201);
    const txn4 = uniqueRef('replay-4');
    await refusedAndNothingStarted(await startSwapOn(0, swapBody(txn4, { user_ref: user, amount: 1 })), 'swap_count_per_user_day', 'user_ref', `swap-${txn4}`, txn4, 'swap.init');
  });

  test('a swap the provider refused at once is given back; a refused start of a swap that exists answers 409 duplicate', async () => {
    const user = uniqueRef('user-refused');
    await h.stack.control.setFaults({ rules: [{ endpoint: 'swap.init', kind: 'html_error', status: 400, times: 1 }] });
    const failed = await startSwapOn(0, swapBody(uniqueRef('refused'), { user_ref: user, amount: 1 }));
    assert.equal(failed.status, 502, failed.text);
    assert.equal(await swapCountOf(user), '0', 'no money can move: the swap counts nothing');
    const started: string[] = [];
    for (let i = 0; i < 3; i++) {
      const txn = uniqueRef('refused-then');
      assert.equal((await startSwapOn(i, swapBody(txn, { user_ref: user, amount: 1 }))).status, 201);
      started.push(txn);
    }
    // The user is at their limit; the same start again is still the duplicate it is, and so is a
    // start reusing another user's txn_ref (a flow this user's ledger never saw).
    const again = await startSwapOn(1, swapBody(started[0]!, { user_ref: user, amount: 1 }));
    assert.equal(again.status, 409, again.text);
    assert.equal(again.json.error, 'duplicate');
    const othersTxn = uniqueRef('others');
    assert.equal((await startSwapOn(0, swapBody(othersTxn, { user_ref: uniqueRef('user-else'), amount: 1 }))).status, 201);
    const reused = await startSwapOn(1, swapBody(othersTxn, { user_ref: user, amount: 1 }));
    assert.equal(reused.status, 409, reused.text);
    assert.equal(reused.json.error, 'duplicate');
    assert.equal(await swapCountOf(user), '3');
  });

  test('payment links past link_count_per_deployment_day, every user together over two gateways, are refused 422 naming it', async () => {
    for (let i = 0; i < 3; i++) {
      const r = await (i % 2 ? second : h).api('POST', '/v1/payment-links', linkBody(uniqueRef('dep-link'), { user_ref: uniqueRef('customer') }));
      assert.equal(r.status, 201, r.text);
    }
    const ref = uniqueRef('dep-link-4th');
    const r = await second.api('POST', '/v1/payment-links', linkBody(ref, { user_ref: uniqueRef('customer') }));
    await refusedAndNothingStarted(r, 'link_count_per_deployment_day', undefined, `paylink-${ref}`, ref, 'link.create');
    // Swaps have limits of their own: the deployment's link limit does not stop them.
    assert.equal((await startSwapOn(0, swapBody(uniqueRef('dep-swap'), { user_ref: uniqueRef('user-dep'), amount: 1 }))).status, 201);
  });

  test('a start whose limit ledger cannot answer (no worker) is refused 503 limit_unavailable with Retry-After, and nothing is started', async () => {
    // A client of a task queue no worker polls: its ledger never answers.
    const mpf3 = new MpfClient({ client: h.stack.client, taskQueue: uniqueRef('no-worker'), keys: h.stack.keys, publicUrl: h.gw.url, dailyLimits: LIMITS, limitAnswerTimeoutMs: 1_500 });
    const gw3 = await startGateway({ mpf: mpf3, apiKey: API_KEY, port: 0, publicUrl: h.gw.url });
    try {
      const txn = uniqueRef('no-ledger');
      const r = await gatewayCaller(gw3.url, API_KEY).api('POST', '/v1/swaps', swapBody(txn, { user_ref: uniqueRef('user-no-ledger'), amount: 1 }));
      assert.equal(r.status, 503, r.text);
      assert.equal(r.json.error, 'limit_unavailable');
      assert.match(r.json.message, /nothing was started/);
      assert.equal(r.headers['retry-after'], '5');
      assert.equal(await exists(`swap-${txn}`), false);
      assert.equal(await providerCalls(txn, 'swap.init'), 0);
    } finally {
      await gw3.close();
    }
  });
});

describe('the daily limits in the configuration', () => {
  test('LIMIT_* variables give the limits by name; unset ones are no limit', () => {
    const env = loadEnv({ LIMIT_SWAP_AMOUNT_PER_USER_DAY: 'NGN:500000, USD:2000.5', LIMIT_LINK_COUNT_PER_DEPLOYMENT_DAY: '0' });
    assert.deepEqual(dailyLimitsFromEnv(env), { swap_amount_per_user_day: { NGN: '500000', USD: '2000.5' }, link_count_per_deployment_day: 0 });
    assert.deepEqual(dailyLimitsFromEnv(loadEnv({})), {});
  });

  test('a limit that does not read is refused at start-up naming its variable', () => {
    for (const [name, value] of [
      ['LIMIT_SWAP_AMOUNT_PER_USER_DAY', 'USD:20.001'],
      ['LIMIT_SWAP_AMOUNT_PER_DEPLOYMENT_DAY', 'USD:1,USD:2'],
      ['LIMIT_LINK_AMOUNT_PER_USER_DAY', '1000000'],
      ['LIMIT_SWAP_COUNT_PER_USER_DAY', '2.5'],
      ['LIMIT_LINK_COUNT_PER_USER_DAY', '-1'],
    ]) {
      assert.throws(() => loadEnv({ [name!]: value }), (err: Error) => err instanceof ConfigError && err.message.includes(`${name}: `) && !err.message.includes(value!), `${name}=${value}`);
    }
  });
});

describe('no daily limit set', () => {
  let h: GatewayHarness;
  before(async () => {
    h = await startGatewayStack();
  });
  after(async () => {
    await h?.stop();
  });

  test('a start makes no call to a limit ledger: none exists for the user afterwards', async () => {
    const user = uniqueRef('user-unlimited');
    for (let i = 0; i < 4; i++) assert.equal((await h.api('POST', '/v1/swaps', swapBody(uniqueRef('free'), { user_ref: user, amount: 1 }))).status, 201);
    const day = utcDay(Date.now());
    const ids = [...userLedgerIds(h.stack.keys, user, day), deploymentLedgerId(h.stack.taskQueue, day)];
    for (const id of ids) await assert.rejects(h.stack.client.workflow.getHandle(id).describe(), WorkflowNotFoundError, id);
  });
});

describe('a deployment count leased in blocks by two gateways', () => {
  const DEPLOYMENT_MAX = 7;
  // Swaps: a user's count, under a deployment count far above it (leased all the same); links: a deployment count that binds.
  const LEASED: DailyLimits = { swap_count_per_user_day: 5, swap_count_per_deployment_day: 1_000_000, link_count_per_deployment_day: DEPLOYMENT_MAX };
  let h: GatewayHarness;
  let gw2: RunningGateway;
  let mpf2: MpfClient;
  let second: GatewayCaller;

  before(async () => {
    // Both gateways lease the deployment's count in blocks, as `mpf gateway` does (DEFAULT_LEASE_BLOCK).
    h = await startGatewayStack({ client: { dailyLimits: LEASED, deploymentLeaseBlock: DEFAULT_LEASE_BLOCK } });
    mpf2 = new MpfClient({ client: h.stack.client, taskQueue: h.stack.taskQueue, keys: h.stack.keys, publicUrl: h.gw.url, dailyLimits: LEASED, deploymentLeaseBlock: DEFAULT_LEASE_BLOCK });
    gw2 = await startGateway({ mpf: mpf2, apiKey: API_KEY, port: 0, publicUrl: h.gw.url });
    second = gatewayCaller(gw2.url, API_KEY);
  });
  after(async () => {
    await gw2?.close();
    await h?.stop();
  });

  const startOn = (turn: number, body: unknown): Promise<HttpAnswer> => (turn % 2 ? second.api('POST', '/v1/swaps', body) : h.api('POST', '/v1/swaps', body));
  const createOn = (turn: number, body: unknown): Promise<HttpAnswer> => (turn % 2 ? second.api('POST', '/v1/payment-links', body) : h.api('POST', '/v1/payment-links', body));
  const deploymentTotals = () => h.stack.client.workflow.getHandle(deploymentLedgerId(h.stack.taskQueue, utcDay(Date.now()))).query(limitTotalsQuery);
  const started = async (flowIds: string[]): Promise<number> => {
    let n = 0;
    for (const id of flowIds) {
      try {
        await h.stack.client.workflow.getHandle(id).describe();
        n++;
      } catch (err) {
        if (!(err instanceof WorkflowNotFoundError)) throw err;
      }
    }
    return n;
  };

  test('20 concurrent starts for one user over two gateways under a count limit of 5 start exactly 5; the others are refused 422 and start nothing', async () => {
    const user = uniqueRef('user-leased');
    const txns = Array.from({ length: 20 }, () => uniqueRef('leased-burst'));
    const answers = await Promise.all(txns.map((txn, i) => startOn(i, swapBody(txn, { user_ref: user, amount: 1 }))));
    const statuses = answers.map((r) => r.status);
    assert.equal(statuses.filter((s) => s === 201).length, 5, answers.map((r) => r.text).join('\n'));
    assert.equal(statuses.filter((s) => s === 422).length, 15, answers.map((r) => r.text).join('\n'));
    for (const r of answers.filter((a) => a.status === 422)) assert.equal(r.json.limit, 'swap_count_per_user_day');
    assert.equal(await started(txns.map((t) => `swap-${t}`)), 5);
  });

  test('20 concurrent payment links over two gateways never pass the deployment count; once the unused units are returned the day fills to exactly the limit', async () => {
    const refs = Array.from({ length: 20 }, () => uniqueRef('leased-link'));
    const answers = await Promise.all(refs.map((ref, i) => createOn(i, linkBody(ref, { user_ref: uniqueRef('customer') }))));
    const ok = answers.filter((r) => r.status === 201).length;
    assert.ok(ok >= 1 && ok <= DEPLOYMENT_MAX, `${ok} created: ${answers.map((r) => r.text).join('\n')}`);
    for (const r of answers.filter((a) => a.status !== 201)) {
      assert.equal(r.status, 422, r.text);
      assert.equal(r.json.limit, 'link_count_per_deployment_day');
    }
    assert.equal(await started(refs.map((r) => `paylink-${r}`)), ok, 'every link answered 201 exists, and no other');
    // The second gateway closes: its unused units go back. Then the first fills the day to the limit, and no further.
    await gw2.close();
    let more = 0;
    for (;;) {
      const r = await h.api('POST', '/v1/payment-links', linkBody(uniqueRef('leased-fill'), { user_ref: uniqueRef('customer') }));
      if (r.status !== 201) {
        assert.equal(r.status, 422, r.text);
        assert.equal(r.json.limit, 'link_count_per_deployment_day');
        break;
      }
      more++;
      assert.ok(ok + more <= DEPLOYMENT_MAX, 'created past the deployment count');
    }
    assert.equal(ok + more, DEPLOYMENT_MAX, 'the day created exactly the deployment count');
    assert.equal((await deploymentTotals())['count:payment_link'], String(DEPLOYMENT_MAX));
  });
});
