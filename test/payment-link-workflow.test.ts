import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startStack, type Stack } from './helpers/stack';
import type { LinkView } from '../src/workflows/messages';

const ref = (p: string) => `${p}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 7)}`;
const linkBody = (txn_merchant_ref: string, extra: Record<string, unknown> = {}) => ({
  user_ref: 'cust-1',
  txn_merchant_ref,
  amount: 2500,
  full_name: 'Ada Obi',
  email: 'ada@example.com',
  phone: '+2348012345678',
  redirect_url: 'http://127.0.0.1:9/thanks',
  ...extra,
});
const note = (id: string, status: string, payment_ref = 'x') => ({
  event: `collection.${status}`,
  data: { payment_ref, status, notification_id: id, sequence: 1, occurred_at: new Date().toISOString() },
});

describe('the payment-link workflow through the typed client', () => {
  let stack: Stack;
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
    const txn = ref('create');
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
    const { link } = await stack.mpf.createLink(linkBody(ref('paid')));
    await deliver(link.link_id, note('n-pending', 'pending'));
    assert.equal((await stack.mpf.getLink(link.link_id)).state, 'awaiting_payment');
    await deliver(link.link_id, note('n-paid', 'successful'));
    await deliver(link.link_id, note('n-paid', 'successful'));
    await deliver(link.link_id, note('n-failed-late', 'failed'));
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
    const { link } = await stack.mpf.createLink(linkBody(ref('failed')));
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
      const { link } = await short.mpf.createLink(linkBody(ref('expire')));
      const final = (await short.client.workflow.getHandle(link.link_id).result()) as LinkView;
      assert.equal(final.state, 'expired');
    } finally {
      await short.stop();
    }
  });

  test('a second create with the same txn_merchant_ref is refused and the provider sees one', async () => {
    const txn = ref('dup');
    const { link } = await stack.mpf.createLink(linkBody(txn));
    await assert.rejects(stack.mpf.createLink(linkBody(txn)), { name: 'DuplicateFlowError' });
    assert.equal((await stack.control.ledger({ endpoint: 'link.create' })).requests.length, 1);
    await stack.mpf.cancelLink(link.link_id);
    assert.equal((await result(link.link_id)).state, 'cancelled');
  });

  test('refuses a non-NGN currency and a bad redirect_url by name, starting nothing', async () => {
    const txn = ref('bad');
    await assert.rejects(stack.mpf.createLink(linkBody(txn, { currency: 'USD' })), /currency: must be NGN/);
    await assert.rejects(stack.mpf.createLink(linkBody(txn, { redirect_url: 'not a url' })), /redirect_url/);
    await assert.rejects(stack.mpf.createLink(linkBody(txn, { email: 'nope' })), /email/);
    await assert.rejects(stack.client.workflow.getHandle(`paylink-${txn}`).describe(), /not found/i);
    assert.equal((await stack.control.ledger({ endpoint: 'link.create' })).requests.length, 0);
  });

  test('an ambiguous creation ends needs_reconciliation and is not repeated', async () => {
    await stack.control.setFaults({ rules: [{ endpoint: 'link.create', kind: 'apply_then_fail', times: 1 }] });
    const { link } = await stack.mpf.createLink(linkBody(ref('amb')));
    assert.equal(link.state, 'needs_reconciliation');
    assert.equal((await stack.control.ledger({ endpoint: 'link.create' })).requests.length, 1);
    assert.equal((await stack.control.ledger()).effects.filter((e) => e.kind === 'link.created').length, 1);
  });

  test('a 5xx before anything was committed on create is not retried blindly either', async () => {
    await stack.control.setFaults({ rules: [{ endpoint: 'link.create', kind: 'status5xx', times: 1 }] });
    const { link } = await stack.mpf.createLink(linkBody(ref('5xx')));
    assert.equal(link.state, 'needs_reconciliation', 'a 5xx on a POST is ambiguous');
    assert.equal((await stack.control.ledger({ endpoint: 'link.create' })).requests.length, 1);
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
    const { link } = await stack.mpf.createLink(linkBody(ref('late-paid')));
    await deliver(link.link_id, note('p1', 'successful'));
    await deliver(link.link_id, note('p1', 'successful'));
    await deliver(link.link_id, note('stale', 'pending'));
    await deliver(link.link_id, note('f1', 'failed'));
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

  test('a payment notified after the link expired is flagged for reconciliation, never ignored', async () => {
    const { link } = await stack.mpf.createLink(linkBody(ref('late-expired')));
    const handle = stack.client.workflow.getHandle(link.link_id);
    const deadline = Date.now() + 20_000;
    while ((await stack.mpf.getLink(link.link_id)).state !== 'expired') {
      assert.ok(Date.now() < deadline, 'link expired');
      await new Promise((r) => setTimeout(r, 200));
    }
    await deliver(link.link_id, note('late-money', 'successful'));
    const final = (await handle.result()) as LinkView;
    assert.equal(final.state, 'needs_reconciliation');
    assert.match(final.reason!, /after the link was expired/);
  });
});
