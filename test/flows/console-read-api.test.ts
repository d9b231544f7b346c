/**
 * The read API a console stands on, through a real gateway and worker: list items carry each
 * flow's amount, currency and customer reference (from its memo) and filter by txn_ref and by
 * customer (a keyed hash in MpfCustomerRef); today's use of the daily limits; and a flow's view
 * with its timeline (states, provider calls with their outcomes, operator acts), which answers
 * for a closed flow with every worker stopped — a flow closed from outside included, from the
 * events in its memo — and never carries the PIN. A namespace of the release before (no
 * MpfCustomerRef yet) still starts flows.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { temporal } from '@temporalio/proto';
import type { DailyLimits } from '../../src/config/limits-env';
import { type DevServer, startDevServer } from '../../src/temporal/dev-server';
import { linkBody, swapBody, uniqueRef } from '../helpers/fixtures';
import { type GatewayHarness, startGatewayStack } from '../helpers/gateway';
import { eventually } from '../helpers/stack';

const PIN = '580316';
const LIMITS: DailyLimits = { swap_count_per_user_day: 5, swap_amount_per_deployment_day: { USD: '1000' }, link_count_per_deployment_day: 50 };

interface Item {
  flow_id: string;
  reference?: string;
  amount?: number;
  currency?: string;
  customer_ref?: string;
}
interface Entry {
  at: string;
  kind: string;
  name: string;
  outcome?: string;
  detail?: string;
  attempt?: number;
}

describe('the read API of the console', () => {
  let h: GatewayHarness;
  const customer = uniqueRef('cust');
  const other = uniqueRef('other');
  const swapRef = uniqueRef('rd-swap');
  const linkRef = uniqueRef('rd-link');
  const otherRef = uniqueRef('rd-other');
  const openRef = uniqueRef('rd-open');
  let swapId: string;
  let linkId: string;
  let openId: string;

  before(async () => {
    h = await startGatewayStack({ simulator: { pins: { [customer]: PIN } }, client: { queryAnswerTimeoutMs: 3_000, dailyLimits: LIMITS } });
    const s = await h.api('POST', '/v1/swaps', swapBody(swapRef, { user_ref: customer, amount: 12.25 }));
    assert.equal(s.status, 201, s.text);
    swapId = s.json.swap_id as string;
    const pinned = await h.call('POST', `/v1/swaps/${swapId}/pin`, { body: { wallet_pin: PIN }, headers: { authorization: `Bearer ${s.json.pin_token as string}` } });
    assert.equal(pinned.status, 200, pinned.text);
    assert.equal(pinned.json.outcome, 'confirmed', pinned.text);
    const l = await h.api('POST', '/v1/payment-links', linkBody(linkRef, { user_ref: customer, amount: 4_500 }));
    assert.equal(l.status, 201, l.text);
    linkId = l.json.link_id as string;
    assert.equal((await h.api('POST', `/v1/payment-links/${linkId}/cancel`, {})).status, 200);
    const o = await h.api('POST', '/v1/swaps', swapBody(otherRef, { user_ref: other, amount: 3 }));
    assert.equal(o.status, 201, o.text);
    const open = await h.api('POST', '/v1/swaps', swapBody(openRef, { user_ref: other, amount: 4 }));
    assert.equal(open.status, 201, open.text);
    openId = open.json.swap_id as string;
    await h.stack.client.workflow.getHandle(swapId).result();
    await h.stack.client.workflow.getHandle(linkId).result();
  });
  after(async () => {
    await h?.stop();
  });

  test("today's use of the limits counts the starts, the deployment's and a user's", async () => {
    const r = await h.api('GET', `/v1/admin/limits?user_ref=${customer}`);
    assert.equal(r.status, 200, r.text);
    const rows = r.json.data as Array<{ limit: string; scope: string; user_ref?: string; used: number; max: number; unit: string; resets_at: string }>;
    const row = (limit: string, unit: string) => rows.find((x) => x.limit === limit && x.unit === unit);
    assert.deepEqual(
      { ...row('swap_count_per_user_day', 'count'), resets_at: undefined },
      { limit: 'swap_count_per_user_day', scope: 'user', user_ref: customer, used: 1, max: 5, unit: 'count', day: new Date().toISOString().slice(0, 10), resets_at: undefined },
    );
    assert.equal(row('swap_amount_per_deployment_day', 'USD')?.used, 12.25 + 3 + 4);
    assert.equal(row('swap_amount_per_deployment_day', 'USD')?.max, 1000);
    assert.equal(row('link_count_per_deployment_day', 'count')?.used, 1);
    assert.ok(Date.parse(row('swap_count_per_user_day', 'count')!.resets_at) > Date.now());
    const deploymentOnly = await h.api('GET', '/v1/admin/limits');
    assert.equal(deploymentOnly.status, 200, deploymentOnly.text);
    assert.deepEqual((deploymentOnly.json.data as Array<{ scope: string }>).map((x) => x.scope).sort(), ['deployment', 'deployment']);
    const bad = await h.api('GET', '/v1/admin/limits?user_ref=no%20spaces');
    assert.equal(bad.status, 400, bad.text);
    assert.equal(bad.json.field, 'user_ref');
  });

  describe('with every worker stopped', () => {
    before(async () => {
      await h.stack.stopWorker();
      // Closed from outside while no worker runs: no sweeper carries it on, no query can be answered.
      await h.stack.client.workflow.getHandle(openId).terminate('closed by the read API test');
    });

    test('list items carry the amount, currency and customer reference, and a customer filter finds exactly its flows', async () => {
      const swaps = await eventually(async () => {
        const r = await h.api('GET', `/v1/swaps?user_ref=${customer}`);
        return r.status === 200 && (r.json.items as Item[]).length === 1 ? r : undefined;
      }, 30_000, "the customer's swap listed");
      const [item] = swaps.json.items as Item[];
      assert.deepEqual(
        { flow_id: item!.flow_id, reference: item!.reference, amount: item!.amount, currency: item!.currency, customer_ref: item!.customer_ref },
        { flow_id: swapId, reference: swapRef, amount: 12.25, currency: 'USD', customer_ref: customer },
      );
      const links = await h.api('GET', `/v1/payment-links?customer_ref=${customer}`);
      assert.equal(links.status, 200, links.text);
      assert.deepEqual(
        (links.json.items as Item[]).map((x) => [x.flow_id, x.amount, x.currency, x.customer_ref]),
        [[linkId, 4_500, 'NGN', customer]],
      );
      const others = await h.api('GET', `/v1/swaps?user_ref=${other}`);
      assert.deepEqual((others.json.items as Item[]).map((x) => x.flow_id).sort(), [openId, `swap-${otherRef}`].sort());
      const nobody = await h.api('GET', `/v1/swaps?user_ref=${uniqueRef('nobody')}`);
      assert.deepEqual(nobody.json.items, []);
    });

    test('a filter by txn_ref finds exactly that flow', async () => {
      const r = await h.api('GET', `/v1/swaps?txn_ref=${swapRef}`);
      assert.equal(r.status, 200, r.text);
      assert.deepEqual((r.json.items as Item[]).map((x) => x.flow_id), [swapId]);
      const link = await h.api('GET', `/v1/payment-links?txn_ref=${linkRef}`);
      assert.deepEqual((link.json.items as Item[]).map((x) => x.flow_id), [linkId]);
      const mixed = await h.api('GET', `/v1/swaps?user_ref=${customer}&customer_ref=${other}`);
      assert.equal(mixed.status, 400, mixed.text);
      assert.equal(mixed.json.field, 'customer_ref');
    });

    test("a closed swap's view answers with its timeline: the init and confirm calls with their outcomes, and never the PIN", async () => {
      const r = await h.api('GET', `/v1/swaps/${swapId}`);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.state, 'confirmed');
      const timeline = r.json.timeline as Entry[];
      const calls = timeline.filter((e) => e.kind === 'provider_call').map((e) => [e.name, e.outcome, e.attempt]);
      assert.deepEqual(calls, [
        ['initSwap', 'completed', 1],
        ['confirmSwap', 'completed', 1],
      ]);
      const states = timeline.filter((e) => e.kind === 'state').map((e) => e.name);
      assert.deepEqual(states, ['initializing', 'awaiting_pin', 'confirming', 'confirmed']);
      const sorted = [...timeline].sort((a, b) => a.at.localeCompare(b.at));
      assert.deepEqual(timeline, sorted, 'oldest first');
      assert.doesNotMatch(r.text, new RegExp(`(?<![0-9])${PIN}(?![0-9])`), 'the PIN is nowhere in the answer');
      assert.doesNotMatch(r.text, /auth_token|sealed:v1/);
    });

    test("a cancelled link's view shows its creation and the cancel", async () => {
      const r = await h.api('GET', `/v1/payment-links/${linkId}`);
      assert.equal(r.status, 200, r.text);
      const timeline = r.json.timeline as Entry[];
      assert.deepEqual(timeline.filter((e) => e.kind === 'provider_call').map((e) => [e.name, e.outcome]), [['createPaymentLink', 'completed']]);
      assert.deepEqual(timeline.filter((e) => e.kind === 'operator').map((e) => e.name), ['cancel']);
      assert.deepEqual(timeline.filter((e) => e.kind === 'state').map((e) => e.name), ['creating', 'awaiting_payment', 'cancelled']);
    });

    test('a swap closed from outside answers its view from its memo, with the termination in its timeline', async () => {
      const r = await h.api('GET', `/v1/swaps/${openId}`);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.execution, 'terminated');
      assert.equal(r.json.state, 'terminated');
      assert.equal(r.json.amount, 4);
      assert.equal(r.json.user_ref, other);
      const timeline = r.json.timeline as Entry[];
      assert.deepEqual(timeline.filter((e) => e.kind === 'operator').map((e) => [e.name, e.detail]), [['terminate', 'closed by the read API test']]);
      assert.deepEqual(timeline.filter((e) => e.kind === 'provider_call').map((e) => [e.name, e.outcome]), [['initSwap', 'completed']]);
    });
  });
});

describe('a namespace without MpfCustomerRef (its workers of the release before register the others)', () => {
  let server: DevServer;
  let h: GatewayHarness;

  before(async () => {
    server = await startDevServer({ searchAttributes: false });
    h = await startGatewayStack({ temporal: { address: server.address, namespace: server.namespace } });
    const older = ['MpfFlowKind', 'MpfState', 'MpfTxnRef', 'MpfApiKeyId'];
    const keyword = temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD;
    const operator = h.stack.client.connection.operatorService;
    await operator.addSearchAttributes({ namespace: server.namespace, searchAttributes: Object.fromEntries(older.map((k) => [k, keyword])) });
    await eventually(async () => {
      const listed = await operator.listSearchAttributes({ namespace: server.namespace });
      return older.every((k) => k in (listed.customAttributes ?? {}));
    }, 30_000, 'the older search attributes registered');
  });
  after(async () => {
    await h?.stop();
    await server?.stop();
  });

  test('a start still starts the flow, listed with its amount and found by txn_ref, though no customer filter finds it', async () => {
    const ref = uniqueRef('rd-older-ns');
    const s = await h.api('POST', '/v1/swaps', swapBody(ref, { user_ref: 'older-ns-user' }));
    assert.equal(s.status, 201, s.text);
    const listed = await eventually(async () => {
      const r = await h.api('GET', `/v1/swaps?txn_ref=${ref}`);
      return r.status === 200 && (r.json.items as Item[]).length === 1 ? (r.json.items as Item[])[0] : undefined;
    }, 30_000, 'the swap listed');
    assert.deepEqual([listed.flow_id, listed.amount, listed.customer_ref], [`swap-${ref}`, 10.5, 'older-ns-user']);
    const byCustomer = await h.api('GET', '/v1/swaps?user_ref=older-ns-user');
    assert.equal(byCustomer.status, 200, byCustomer.text);
    assert.deepEqual(byCustomer.json.items, []);
  });
});
