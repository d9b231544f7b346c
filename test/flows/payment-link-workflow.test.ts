import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { linkBody, uniqueRef } from '../helpers/fixtures';
import { eventually, startStack, type Stack } from '../helpers/stack';
import type { LinkView } from '../../src/workflows/messages';

const note = (id: string, status: string, payment_ref = 'x') => ({
  event: `collection.${status}`,
  data: { payment_ref, status, notification_id: id, sequence: 1, occurred_at: new Date().toISOString() },
});

describe('the payment-link workflow through the typed client', () => {
  let stack: Stack;
  const eventuallyState = (id: string, state: string) =>
    eventually(async () => {
      const v = await stack.mpf.getLink(id);
      return v.state === state ? v : undefined;
    }, 20_000, `${id} ${state}`);
  const result = (id: string) => stack.client.workflow.getHandle(id).result() as Promise<LinkView>;
  const deliver = (id: string, payload: unknown) => stack.mpf.deliverNotification(id, payload, JSON.stringify(payload));

  before(async () => {
    stack = await startStack({ client: { linkLifetimeSeconds: 60 } });
  });
  after(async () => {
    await stack?.stop();
  });
  beforeEach(async () => {
    await stack.control.reset();
  });

  test('creates the hosted link with the documented constants and returns pay_link at once', async () => {
    const txn = uniqueRef('create');
    const { link } = await stack.mpf.createLink(linkBody(txn));
    assert.equal(link.state, 'awaiting_payment');
    assert.equal(link.link_id, `paylink-${txn}`);
    const pay = new URL(link.pay_link!);
    assert.equal(pay.searchParams.get('payment_ref'), link.payment_ref);
    assert.equal(pay.searchParams.get('currency'), 'NGN');
    assert.equal(pay.searchParams.get('txn_merchant_ref'), txn);
    const [req] = (await stack.control.ledger({ endpoint: 'link.create' })).requests;
    const body = req.body as Record<string, unknown>;
    assert.equal(body.payment_method, 'HOSTED_PAY_LINK');
    assert.equal(body.payment_channel, 'BANK_TRANSFER');
    assert.equal(body.currency, 'NGN');
    assert.match(String(body.notification_url), /\/v1\/notifications\/paylink\/paylink-/);
    await stack.mpf.cancelLink(link.link_id);
  });

  test('ends paid on a success notification, keeping duplicates and stale ones without harm', async () => {
    const { link } = await stack.mpf.createLink(linkBody(uniqueRef('paid')));
    await deliver(link.link_id, note('n-pending', 'pending', link.payment_ref));
    assert.equal((await stack.mpf.getLink(link.link_id)).state, 'awaiting_payment');
    await deliver(link.link_id, note('n-paid', 'successful', link.payment_ref));
    await deliver(link.link_id, note('n-paid', 'successful', link.payment_ref));
    await deliver(link.link_id, note('n-failed-late', 'failed', link.payment_ref));
    const final = await result(link.link_id);
    assert.equal(final.state, 'paid');
    const byKey = Object.fromEntries(final.notifications.map((n) => [n.dedup_key, n]));
    assert.equal(byKey['id:n-pending'].applied, false);
    assert.equal(byKey['id:n-paid'].applied, true);
    assert.equal(byKey['id:n-paid'].deliveries, 2);
    // The late 'failed' either reached the flow after `paid` (kept, not applied) or found it closed.
    const late = byKey['id:n-failed-late'];
    assert.ok(late === undefined || late.applied === false);
  });

  test('records an unknown payload without moving the state, then ends failed', async () => {
    const { link } = await stack.mpf.createLink(linkBody(uniqueRef('failed')));
    await deliver(link.link_id, { hello: 'world' });
    let view = await stack.mpf.getLink(link.link_id);
    assert.equal(view.state, 'awaiting_payment');
    assert.equal(view.notifications[0].outcome, 'unknown');
    assert.match(view.notifications[0].dedup_key, /^sha256:/);
    await deliver(link.link_id, { status: 'FAILED', reason: 'insufficient funds' });
    view = await result(link.link_id);
    assert.equal(view.state, 'failed');
  });

  test('expires when no notification arrives within its lifetime', async () => {
    const short = await startStack({ client: { linkLifetimeSeconds: 2 } });
    try {
      const { link } = await short.mpf.createLink(linkBody(uniqueRef('expire')));
      const final = (await short.client.workflow.getHandle(link.link_id).result()) as LinkView;
      assert.equal(final.state, 'expired');
    } finally {
      await short.stop();
    }
  });

  test('a second create with the same txn_merchant_ref is refused and the provider sees one', async () => {
    const txn = uniqueRef('dup');
    const { link } = await stack.mpf.createLink(linkBody(txn));
    await assert.rejects(stack.mpf.createLink(linkBody(txn)), { name: 'DuplicateFlowError' });
    assert.equal((await stack.control.ledger({ endpoint: 'link.create' })).requests.length, 1);
    await stack.mpf.cancelLink(link.link_id);
    assert.equal((await result(link.link_id)).state, 'cancelled');
  });

  test('refuses a non-NGN currency and a bad redirect_url by name, starting nothing', async () => {
    const txn = uniqueRef('bad');
    await assert.rejects(stack.mpf.createLink(linkBody(txn, { currency: 'USD' })), /currency: must be NGN/);
    await assert.rejects(stack.mpf.createLink(linkBody(txn, { redirect_url: 'not a url' })), /redirect_url/);
    await assert.rejects(stack.mpf.createLink(linkBody(txn, { email: 'nope' })), /email/);
    await assert.rejects(stack.client.workflow.getHandle(`paylink-${txn}`).describe(), /not found/i);
    assert.equal((await stack.control.ledger({ endpoint: 'link.create' })).requests.length, 0);
  });

  test('a creation applied but unanswered is retried, meets the duplicate check, and ends failed saying no money moved', async () => {
    const txn = uniqueRef('amb');
    await stack.control.setFaults({ rules: [{ endpoint: 'link.create', kind: 'apply_then_fail', times: 1 }] });
    const { link } = await stack.mpf.createLink(linkBody(txn));
    assert.equal(link.state, 'failed');
    assert.match(link.reason!, /duplicate check: an earlier attempt was applied/);
    assert.match(link.reason!, /No money moved: the customer never received pay_link/);
    assert.equal((await stack.control.ledger({ ref: txn, endpoint: 'link.create' })).requests.length, 2, 'retried once');
    assert.equal((await stack.control.ledger({ ref: txn })).effects.filter((e) => e.kind === 'link.created').length, 1, 'one link at the provider');
  });

  test('a 5xx on create that committed nothing is retried and the link is created once', async () => {
    const txn = uniqueRef('5xx');
    await stack.control.setFaults({ rules: [{ endpoint: 'link.create', kind: 'status5xx', times: 1 }] });
    const { link } = await stack.mpf.createLink(linkBody(txn));
    assert.equal(link.state, 'awaiting_payment');
    assert.ok(link.pay_link);
    assert.equal((await stack.control.ledger({ ref: txn, endpoint: 'link.create' })).requests.length, 2);
    assert.equal((await stack.control.ledger({ ref: txn })).effects.filter((e) => e.kind === 'link.created').length, 1);
  });

  test('a payment notified for another amount, currency or payment_ref needs reconciliation, not paid', async () => {
    for (const [name, data] of [
      ['amount', { amount: 1 }],
      ['currency', { currency: 'USD' }],
      ['payment_ref', { payment_ref: 'SIMPL-someone-else' }],
    ] as const) {
      const { link } = await stack.mpf.createLink(linkBody(uniqueRef(`mismatch-${name}`)));
      const n = note(`m-${name}`, 'successful', link.payment_ref);
      await deliver(link.link_id, { ...n, data: { ...n.data, ...data } });
      const view = await eventuallyState(link.link_id, 'needs_reconciliation');
      assert.match(view.reason!, new RegExp(`a payment was notified with ${name}`), name);
      await stack.mpf.cancelLink(link.link_id).catch(() => undefined);
    }
  });

  test('the payment is acted on even after 100 distinct notifications filled the book', async () => {
    const { link } = await stack.mpf.createLink(linkBody(uniqueRef('book-full')));
    for (let i = 0; i < 100; i++) await deliver(link.link_id, note(`pending-${i}`, 'pending', link.payment_ref));
    await deliver(link.link_id, note('the-payment', 'successful', link.payment_ref));
    const view = await eventuallyState(link.link_id, 'paid');
    assert.equal(view.notifications.length, 100);
  });

  test('a cancellation from Temporal (Temporal Web\'s button) ends the link cancelled and the view says so', async () => {
    const { link } = await stack.mpf.createLink(linkBody(uniqueRef('wf-cancel')));
    await stack.client.workflow.getHandle(link.link_id).cancel();
    const view = await eventuallyState(link.link_id, 'cancelled');
    assert.match(view.reason!, /cancelled through Temporal/);
  });
});

describe('late notifications after a payment link ended', () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack({ client: { linkLifetimeSeconds: 2, linkLateNotificationGraceSeconds: 4 } });
  });
  after(async () => {
    await stack?.stop();
  });
  const deliver = (id: string, payload: unknown) => stack.mpf.deliverNotification(id, payload, JSON.stringify(payload));

  test('are kept after paid without changing it', async () => {
    const { link } = await stack.mpf.createLink(linkBody(uniqueRef('late-paid')));
    await deliver(link.link_id, note('p1', 'successful', link.payment_ref));
    await deliver(link.link_id, note('p1', 'successful', link.payment_ref));
    await deliver(link.link_id, note('stale', 'pending', link.payment_ref));
    await deliver(link.link_id, note('f1', 'failed', link.payment_ref));
    const final = (await stack.client.workflow.getHandle(link.link_id).result()) as LinkView;
    assert.equal(final.state, 'paid');
    assert.deepEqual(
      final.notifications.map((n) => [n.dedup_key, n.outcome, n.applied, n.deliveries]),
      [
        ['id:p1', 'paid', true, 2],
        ['id:stale', 'pending', false, 1],
        ['id:f1', 'failed', false, 1],
      ],
    );
  });

  test('a success notified after the provider reported failure is flagged for reconciliation', async () => {
    const { link } = await stack.mpf.createLink(linkBody(uniqueRef('fail-then-paid')));
    await deliver(link.link_id, note('f', 'failed', link.payment_ref));
    await eventually(async () => (await stack.mpf.getLink(link.link_id)).state === 'failed', 10_000, 'failed');
    await deliver(link.link_id, note('p', 'successful', link.payment_ref));
    const view = await eventually(async () => {
      const v = await stack.mpf.getLink(link.link_id);
      return v.state === 'needs_reconciliation' && v;
    }, 10_000, 'needs_reconciliation');
    assert.match(view.reason!, /payment notified after the link was failed/);
  });

  test('a payment notified after the link expired is flagged for reconciliation, never ignored', async () => {
    const { link } = await stack.mpf.createLink(linkBody(uniqueRef('late-expired')));
    const handle = stack.client.workflow.getHandle(link.link_id);
    const deadline = Date.now() + 20_000;
    while ((await stack.mpf.getLink(link.link_id)).state !== 'expired') {
      assert.ok(Date.now() < deadline, 'link expired');
      await new Promise((r) => setTimeout(r, 200));
    }
    await deliver(link.link_id, note('late-money', 'successful', link.payment_ref));
    const flagged = await eventually(async () => {
      const v = await stack.mpf.getLink(link.link_id);
      return v.state === 'needs_reconciliation' && v;
    }, 10_000, 'needs_reconciliation');
    assert.match(flagged.reason!, /after the link was expired/);
    // Past the grace period it is still open, waiting for an operator; resolving it ends it.
    await new Promise((r) => setTimeout(r, 4_500));
    assert.equal((await handle.describe()).status.name, 'RUNNING');
    await stack.mpf.resolveFlow(link.link_id, { outcome: 'paid', provider_reference: link.payment_ref!, operator: 'ops', note: 'fulfilled the order late' });
    const final = (await handle.result()) as LinkView;
    assert.equal(final.state, 'reconciled');
    assert.equal(final.reconciliation?.reason_before, flagged.reason);
  });
});
