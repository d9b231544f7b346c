/**
 * The gateway under attacks and operator actions, over real HTTP on the real
 * Temporal dev server, simulator and worker: references at the 100-character boundary, floods of
 * duplicate notifications, notifications for closed flows, flows terminated in Temporal, PIN
 * guessing and probing for flow existence, and router errors.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { temporal } from '@temporalio/proto';
import type { LinkView, SwapView } from '../../src/workflows/messages';
import { linkBody, swapBody, uniqueRef } from '../helpers/fixtures';
import { gatewayHarnessForSuite, gatewayUrlCall, historyMessages } from '../helpers/gateway';
import { eventually } from '../helpers/stack';

const PIN = '4321';
const WRONG_PIN = '111333';

/** A reference of exactly `n` characters, unique per call. */
const refOfLength = (prefix: string, n: number): string => uniqueRef(prefix).padEnd(n, 'x');

describe('the gateway under attack and operator actions', () => {
  const h = gatewayHarnessForSuite({ simulator: { pins: { 'user-1': PIN } } }, { simulatorConfig: { swapExpiresInSeconds: 300 } });

  const startSwap = async (txn: string, extra: Record<string, unknown> = {}) => {
    const r = await h.api('POST', '/v1/swaps', swapBody(txn, extra));
    assert.equal(r.status, 201, r.text);
    return r.json as SwapView & { pin_url: string; pin_token: string };
  };
  const createLink = async (ref: string) => {
    const r = await h.api('POST', '/v1/payment-links', linkBody(ref));
    assert.equal(r.status, 201, r.text);
    return r.json as LinkView;
  };
  const pin = (swapId: string, token: string | undefined, wallet_pin: unknown) =>
    h.call('POST', `/v1/swaps/${encodeURIComponent(swapId)}/pin`, {
      body: { wallet_pin },
      headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
    });
  const notificationUrl = async (ref: string) =>
    ((await h.stack.control.ledger({ ref, endpoint: 'link.create' })).requests[0].body as { notification_url: string }).notification_url;
  const linkUntil = (id: string, state: string) =>
    eventually(async () => {
      const v = await h.api('GET', `/v1/payment-links/${encodeURIComponent(id)}`);
      return v.json?.state === state ? (v.json as LinkView) : undefined;
    }, 30_000, `${id} ${state}`);
  const historyBytes = async (id: string) => {
    const history = await h.stack.client.workflow.getHandle(id).fetchHistory();
    return temporal.api.history.v1.History.encode(history).finish().length;
  };

  test('serves every route of a swap and a link whose references have 100 characters', async () => {
    const txn = refOfLength('long-swap', 100);
    assert.equal(txn.length, 100);
    const s = await startSwap(txn);
    assert.equal(s.swap_id, `swap-${txn}`);
    const state = await h.api('GET', `/v1/swaps/${s.swap_id}`);
    assert.equal(state.status, 200, state.text);
    const summary = await h.call('GET', `/v1/swaps/${s.swap_id}/summary`, { headers: { authorization: `Bearer ${s.pin_token}` } });
    assert.equal(summary.status, 200, summary.text);
    const page = await h.call('GET', new URL(s.pin_url).pathname);
    assert.equal(page.status, 200);
    const outcome = await pin(s.swap_id, s.pin_token, PIN);
    assert.equal(outcome.status, 200, outcome.text);
    assert.equal(outcome.json.outcome, 'confirmed');

    // A link reference of 100 characters with ':' (percent-encoded in its URLs) is paid by the provider's notification.
    const ref = `${uniqueRef('long:link')}:`.padEnd(100, ':');
    assert.equal(ref.length, 100);
    const link = await createLink(ref);
    assert.equal(link.link_id, `paylink-${ref}`);
    assert.equal((await h.api('GET', `/v1/payment-links/${encodeURIComponent(link.link_id)}`)).status, 200);
    await h.stack.control.completeLink(link.payment_ref!);
    const paid = await linkUntil(link.link_id, 'paid');
    assert.equal(paid.notifications.filter((n) => n.applied).length, 1);
  });

  test('a flood of large duplicate notifications keeps the history small and the link is still paid', async () => {
    const ref = uniqueRef('flood');
    const link = await createLink(ref);
    const url = await notificationUrl(ref);
    const big = (i: number) => ({
      event: 'collection.pending',
      data: { payment_ref: link.payment_ref, status: 'pending', notification_id: `flood-${i}`, sequence: 1, padding: 'p'.repeat(60_000) },
    });
    const answers: number[] = [];
    let duplicates = 0;
    for (let batch = 0; batch < 30; batch++) {
      const res = await Promise.all(Array.from({ length: 10 }, (_, j) => gatewayUrlCall('POST', url, { body: big(j) })));
      for (const r of res) {
        answers.push(r.status);
        if (r.json?.duplicate === true) duplicates++;
      }
    }
    assert.deepEqual([...new Set(answers)], [200], 'every delivery answered 200');
    assert.ok(duplicates >= 280, `known duplicates answered as such (${duplicates})`);
    const signals = (await historyMessages(h.stack, link.link_id)).signals.length;
    assert.ok(signals <= 20, `duplicates were not signalled (${signals} signals)`);
    const bytes = await historyBytes(link.link_id);
    assert.ok(bytes < 1_000_000, `history is ${bytes} bytes`);
    await h.stack.control.completeLink(link.payment_ref!);
    const paid = await linkUntil(link.link_id, 'paid');
    assert.ok(paid.notifications.some((n) => n.outcome === 'paid' && n.applied));
    assert.ok(await historyBytes(link.link_id) < 1_000_000);
  });

  test('refuses a payment notification for a closed flow that did not end paid with 409, and acknowledges other late ones', async () => {
    const ref = uniqueRef('closed-cancel');
    const link = await createLink(ref);
    const url = await notificationUrl(ref);
    const cancelled = await h.api('POST', `/v1/payment-links/${link.link_id}/cancel`);
    assert.equal(cancelled.json.state, 'cancelled', cancelled.text);
    await h.stack.client.workflow.getHandle(link.link_id).result();
    const paidNote = { event: 'collection.completed', data: { payment_ref: link.payment_ref, status: 'successful', notification_id: 'late-paid', sequence: 2 } };
    const refused = await gatewayUrlCall('POST', url, { body: paidNote });
    assert.equal(refused.status, 409, refused.text);
    assert.deepEqual(
      { error: refused.json.error, flow_id: refused.json.flow_id, state: refused.json.state },
      { error: 'flow_closed', flow_id: link.link_id, state: 'cancelled' },
    );
    assert.ok(!refused.text.includes(url.split('/').pop()!), 'the token is not echoed');
    assert.ok(h.logs.some((l) => l.includes('"level":50') && l.includes('money notified for a closed flow') && l.includes(link.link_id)));
    assert.ok(!h.logs.some((l) => l.includes(url.split('/').pop()!)), 'the token is never logged');
    const failedNote = { event: 'collection.failed', data: { payment_ref: link.payment_ref, status: 'failed', notification_id: 'late-failed', sequence: 3 } };
    const acked = await gatewayUrlCall('POST', url, { body: failedNote });
    assert.equal(acked.status, 200, acked.text);
    assert.deepEqual(acked.json, { received: true, applied: false });
    assert.ok(h.logs.some((l) => l.includes('"level":40') && l.includes('notification for a closed flow') && l.includes('"outcome":"failed"')));
  });

  test('answers a flow terminated in Temporal truthfully: the state it ended in, how, and why', async () => {
    const s = await startSwap(uniqueRef('term-swap'));
    const link = await createLink(uniqueRef('term-link'));
    await h.stack.client.workflow.getHandle(s.swap_id).terminate('operator test');
    await h.stack.client.workflow.getHandle(link.link_id).terminate('operator test');
    const sv = await h.api('GET', `/v1/swaps/${s.swap_id}`);
    assert.equal(sv.status, 200, sv.text);
    assert.equal(sv.json.execution, 'terminated');
    assert.equal(sv.json.state, 'terminated', 'awaiting its PIN, nothing was sent');
    assert.match(sv.json.reason, /terminated in Temporal while awaiting_pin; no confirmation was sent: no money moved/);
    const lv = await h.api('GET', `/v1/payment-links/${link.link_id}`);
    assert.equal(lv.status, 200, lv.text);
    assert.equal(lv.json.execution, 'terminated');
    assert.equal(lv.json.state, 'needs_reconciliation', 'its customer holds pay_link and may pay');
    assert.match(lv.json.reason, /terminated in Temporal while awaiting_payment; the customer holds pay_link/);
    // A running flow's view carries no execution field.
    const running = await startSwap(uniqueRef('term-running'));
    assert.equal((await h.api('GET', `/v1/swaps/${running.swap_id}`)).json.execution, undefined);
    await h.api('POST', `/v1/swaps/${running.swap_id}/cancel`);
  });

  test('PIN requests without a valid pin_token do not lock the PIN entry for the owner', async () => {
    const s = await startSwap(uniqueRef('lockout'));
    for (let i = 0; i < 8; i++) await pin(s.swap_id, i % 2 ? undefined : 'forged-token', PIN);
    const owner = await pin(s.swap_id, s.pin_token, PIN);
    assert.equal(owner.status, 200, owner.text);
    assert.equal(owner.json.outcome, 'confirmed');
  });

  test('bounds wrong PINs per user_ref across swaps with 429', async () => {
    const user = uniqueRef('guessed-user');
    const outcomes: string[] = [];
    for (let i = 0; i < 4; i++) {
      const s = await startSwap(uniqueRef(`budget-${i}`), { user_ref: user });
      for (let k = 0; k < 3 && outcomes.length < 11; k++) {
        const r = await pin(s.swap_id, s.pin_token, WRONG_PIN);
        outcomes.push(r.status === 200 ? r.json.outcome : `${r.status} ${r.json?.error}`);
        if (r.status === 429) assert.ok(r.headers['retry-after']);
      }
    }
    assert.deepEqual(outcomes.slice(0, 10), Array(10).fill('pin_rejected'));
    assert.equal(outcomes[10], '429 rate_limited');
    // Another user is not affected.
    const other = await startSwap(uniqueRef('budget-other'));
    assert.equal((await pin(other.swap_id, other.pin_token, PIN)).json.outcome, 'confirmed');
  });

  test('a forged token gets the same answer for an existing flow as for an unknown one', async () => {
    const s = await startSwap(uniqueRef('probe'));
    const link = await createLink(uniqueRef('probe-link'));
    const ghostSwap = `swap-${uniqueRef('ghost')}`;
    const forged = 'f'.repeat(43);
    const pair = async (existing: string, unknown: string, call: (id: string) => Promise<{ status: number; json: unknown }>) => {
      const a = await call(existing);
      const b = await call(unknown);
      assert.deepEqual({ status: a.status, json: a.json }, { status: b.status, json: b.json });
      return a;
    };
    const p = await pair(s.swap_id, ghostSwap, (id) => pin(id, forged, PIN));
    assert.equal(p.status, 404);
    await pair(s.swap_id, ghostSwap, (id) => h.call('GET', `/v1/swaps/${id}/summary`, { headers: { authorization: `Bearer ${forged}` } }));
    await pair(s.swap_id, ghostSwap, (id) => pin(id, undefined, PIN));
    const url = await notificationUrl(link.txn_merchant_ref);
    const n = await pair(link.link_id, `paylink-${uniqueRef('ghost')}`, (id) => h.call('POST', `/v1/notifications/paylink/${id}/${forged}`, { body: { status: 'successful' } }));
    assert.equal(n.status, 404);
    assert.ok(url.includes(link.link_id));
    assert.deepEqual((await historyMessages(h.stack, link.link_id)).signals, []);
    await h.api('POST', `/v1/swaps/${s.swap_id}/cancel`);
    await h.api('POST', `/v1/payment-links/${link.link_id}/cancel`);
  });

  test('answers router errors in the JSON error shape without echoing the path', async () => {
    const secret = 'S3cretTokenSegment';
    const tooLong = await h.call('POST', `/v1/notifications/paylink/paylink-${'a'.repeat(2000)}/${secret}`, { body: {} });
    assert.equal(tooLong.status, 414, tooLong.text);
    assert.equal(tooLong.json?.error, 'uri_too_long');
    assert.equal(typeof tooLong.json?.message, 'string');
    assert.ok(!tooLong.text.includes(secret) && !tooLong.text.includes('aaaa'));
    const badEncoding = await h.call('POST', `/v1/notifications/paylink/paylink-x%ZZ/${secret}`, { body: {} });
    assert.equal(badEncoding.status, 400, badEncoding.text);
    assert.equal(badEncoding.json?.error, 'invalid_request');
    assert.ok(!badEncoding.text.includes(secret) && !badEncoding.text.includes('%ZZ'));
  });
});
