/**
 * Every gateway route that sends a workflow update, driven past the update's deadline: a real
 * Temporal dev server where no worker polls the flows' task queue, so no update is ever answered.
 * Each answer is what any other Temporal call past its deadline gets: 503 or 504 with Retry-After
 * and a body naming what did not answer — never a 500.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { FlowTokens } from '../../src/starter/client/flow-tokens';
import type { TokenMemo } from '../../src/starter/client/tokens';
import { linkBody, SIM_PIN, swapBody, uniqueRef } from '../helpers/fixtures';
import { API_KEY, gatewayCaller, type GatewayHarness, type HttpAnswer, startGatewayStack, stopOwnTemporal } from '../helpers/gateway';

const RESOLUTION = { outcome: 'failed', provider_reference: 'ref-1', operator: 'Ngozi (finance)', note: 'deadline test: the provider says failed' };

/** Asserts a deadline answer: 503/504, Retry-After in seconds, the error code and a message matching `names`. */
function assertDeadlineAnswer(res: HttpAnswer, status: 503 | 504, error: string, names: RegExp, logs: string[]): void {
  const failed = logs.filter((l) => l.includes('request failed')).join('\n');
  assert.equal(res.status, status, `${res.text}\n${failed}`);
  assert.match(String(res.headers['retry-after']), /^\d+$/, `Retry-After on ${res.text}`);
  assert.equal(res.json.error, error, res.text);
  assert.match(String(res.json.message), names, res.text);
}

describe('a gateway route whose workflow update passes its deadline', () => {
  let h: GatewayHarness;
  let api: ReturnType<typeof gatewayCaller>['api'];
  let swapId: string;
  let linkId: string;

  before(async () => {
    // No worker: every update waits until its deadline (2 s for flows; 10 s for records and the guard).
    h = await startGatewayStack({ noWorker: true, client: { startAnswerTimeoutMs: 2_000, pinAnswerTimeoutMs: 2_000, queryAnswerTimeoutMs: 2_000 } });
    api = gatewayCaller(h.gw.url, API_KEY).api;
  });
  after(async () => {
    await h?.stop();
    await stopOwnTemporal();
  });

  test('POST /v1/swaps and /v1/payment-links without an Idempotency-Key: 504 pending naming the flow, with Retry-After', { timeout: 60_000 }, async () => {
    const swap = await api('POST', '/v1/swaps', swapBody(uniqueRef('deadline-swap')));
    assertDeadlineAnswer(swap, 504, 'pending', /^the swap swap-\S+ was started but did not answer within 2 s/, h.logs);
    swapId = String(swap.json.flow_id);
    const link = await api('POST', '/v1/payment-links', linkBody(uniqueRef('deadline-link')));
    assertDeadlineAnswer(link, 504, 'pending', /^the payment link paylink-\S+ was started but did not answer within 2 s/, h.logs);
    linkId = String(link.json.flow_id);
  });

  test('the cancel routes: 503 worker_unavailable naming the flow and its last known state, with Retry-After', { timeout: 60_000 }, async () => {
    const swap = await api('POST', `/v1/swaps/${swapId}/cancel`, { reason: 'deadline test' });
    assertDeadlineAnswer(swap, 503, 'worker_unavailable', new RegExp(`^no worker answered for the swap ${swapId} within 2 s`), h.logs);
    assert.equal(swap.json.flow_id, swapId);
    const link = await api('POST', `/v1/payment-links/${linkId}/cancel`, { reason: 'deadline test' });
    assertDeadlineAnswer(link, 503, 'worker_unavailable', new RegExp(`^no worker answered for the payment link ${linkId} within 2 s`), h.logs);
    assert.equal(link.json.flow_id, linkId);
  });

  test('the admin resolve route: 503 worker_unavailable naming the flow, with Retry-After', { timeout: 60_000 }, async () => {
    const res = await api('POST', `/v1/admin/flows/${swapId}/resolve`, RESOLUTION);
    assertDeadlineAnswer(res, 503, 'worker_unavailable', new RegExp(`^no worker answered for the swap ${swapId} within 2 s`), h.logs);
  });

  test('the PIN route: 503 pin_budget_unavailable (the budget is an update too), with Retry-After; the PIN not echoed', { timeout: 60_000 }, async () => {
    // The swap's pin_token, derived as the gateway derives it from the seed in the swap's memo.
    const memo = (await h.stack.client.workflow.getHandle(swapId).describe()).memo as TokenMemo;
    const token = new FlowTokens(h.stack.keys).derive('pin', swapId, { nonce: String(memo.pin_token_nonce), key: String(memo.pin_token_key) });
    assert.ok(token, 'the pin_token derives from the memo');
    const res = await h.call('POST', `/v1/swaps/${swapId}/pin`, { body: { wallet_pin: SIM_PIN }, headers: { authorization: `Bearer ${token}` } });
    assertDeadlineAnswer(res, 503, 'pin_budget_unavailable', /wrong-PIN budget .* could not be checked .*the PIN was not sent/, h.logs);
    assert.ok(!res.text.includes(SIM_PIN), 'the PIN is not echoed');
  });

  test('every route with an Idempotency-Key: 503 worker_unavailable naming the idempotency record, with Retry-After', { timeout: 180_000 }, async () => {
    const routes: Array<[string, unknown]> = [
      ['/v1/swaps', swapBody(uniqueRef('deadline-idem-swap'))],
      ['/v1/payment-links', linkBody(uniqueRef('deadline-idem-link'))],
      [`/v1/swaps/${swapId}/cancel`, { reason: 'deadline test' }],
      [`/v1/payment-links/${linkId}/cancel`, { reason: 'deadline test' }],
      [`/v1/admin/flows/${swapId}/resolve`, RESOLUTION],
      [`/v1/events/evt_${swapId}_1/redeliver`, undefined],
    ];
    for (const [path, body] of routes) {
      const res = await api('POST', path, body, { 'idempotency-key': randomUUID() });
      assertDeadlineAnswer(res, 503, 'worker_unavailable', /^no worker answered for the idempotency record idem-[0-9a-f]{64} within 10 s/, h.logs);
    }
  });

  test('the provider guard pause and resume: 503 worker_unavailable naming the provider guard, with Retry-After', { timeout: 60_000 }, async () => {
    const pause = await api('POST', '/v1/admin/provider/pause', { reason: 'deadline test' });
    assertDeadlineAnswer(pause, 503, 'worker_unavailable', /^no worker answered for the provider guard provider-guard-\S+ within 10 s/, h.logs);
    const resume = await api('POST', '/v1/admin/provider/resume');
    assertDeadlineAnswer(resume, 503, 'worker_unavailable', /^no worker answered for the provider guard provider-guard-\S+ within 10 s/, h.logs);
  });

  test('no request was answered 500', () => {
    assert.deepEqual(h.logs.filter((l) => /"statusCode":500\b|request failed/.test(l)), []);
  });
});
