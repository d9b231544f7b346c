/**
 * The payment-link half of the gateway and its notification receiver over real HTTP, on the real
 * Temporal dev server, simulator and worker. The simulator's notifications travel to the
 * gateway's own URL; every test checks the answer, the link's final state and the ledger.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MpfClient } from '../../src/starter/client/mpf-client';
import { startGateway, type RunningGateway } from '../../src/starter/gateway/main';
import type { LinkView } from '../../src/workflows/messages';
import { linkBody, uniqueRef } from '../helpers/fixtures';
import { API_KEY, gatewayCaller, gatewayHarnessForSuite, gatewayUrlCall, historyMessages, http, workflowExists } from '../helpers/gateway';
import { eventually } from '../helpers/stack';

describe('the gateway: payment links and notifications', () => {
  const h = gatewayHarnessForSuite();

  const create = async (ref: string, extra: Record<string, unknown> = {}) => {
    const r = await h.api('POST', '/v1/payment-links', linkBody(ref, extra));
    assert.equal(r.status, 201, r.text);
    return r.json as LinkView;
  };
  const view = async (id: string) => (await h.api('GET', `/v1/payment-links/${id}`)).json as LinkView;
  const until = (id: string, state: string) =>
    eventually(async () => {
      const v = await view(id);
      return v.state === state ? v : undefined;
    }, 30_000, `${id} ${state}`);
  const ledger = (ref: string) => h.stack.control.ledger({ ref });
  const effects = async (ref: string) => (await ledger(ref)).effects.map((e) => e.kind);
  /** The notification_url the provider was given for a link (from the simulator's request ledger). */
  const notificationUrl = async (ref: string) =>
    ((await h.stack.control.ledger({ ref, endpoint: 'link.create' })).requests[0].body as { notification_url: string }).notification_url;
  const notify = (url: string, payload: unknown) => gatewayUrlCall('POST', url, { body: payload });
  const pending = (paymentRef: string, id = `n-${Math.random().toString(36).slice(2)}`) => ({
    event: 'collection.pending',
    data: { payment_ref: paymentRef, status: 'pending', notification_id: id, sequence: 1, occurred_at: new Date().toISOString() },
  });

  test('creates a link with defaults and answers pay_link and payment_ref; the customer pays and it ends paid', async () => {
    const ref = uniqueRef('gw-pay');
    const link = await create(ref);
    assert.equal(link.link_id, `paylink-${ref}`);
    assert.equal(link.state, 'awaiting_payment');
    assert.equal(link.currency, 'NGN');
    assert.equal(link.amount, 25_000);
    assert.match(link.payment_ref!, /^SIMPL-/);
    const payLink = new URL(link.pay_link!);
    assert.equal(payLink.searchParams.get('payment_ref'), link.payment_ref);
    assert.equal(payLink.searchParams.get('txn_merchant_ref'), ref);
    assert.ok(Date.parse(link.expires_at!) > Date.now());
    const sent = (await h.stack.control.ledger({ ref, endpoint: 'link.create' })).requests[0].body as Record<string, unknown>;
    assert.equal(sent.payment_method, 'HOSTED_PAY_LINK');
    assert.equal(sent.payment_channel, 'BANK_TRANSFER');
    assert.equal(sent.currency, 'NGN');
    assert.match(String(sent.notification_url), new RegExp(`^${h.gw.url}/v1/notifications/paylink/paylink-${ref}/[A-Za-z0-9_-]{64}$`));

    await h.stack.control.completeLink(link.payment_ref!);
    const paid = await until(link.link_id, 'paid');
    assert.equal(paid.notifications.length, 1);
    assert.deepEqual(
      { outcome: paid.notifications[0].outcome, applied: paid.notifications[0].applied },
      { outcome: 'paid', applied: true },
    );
    const kinds = await effects(ref);
    assert.deepEqual(kinds.filter((k) => k.startsWith('link.')), ['link.created', 'link.paid']);
    // The simulator writes the delivery once our 2xx answer reached it.
    const delivered = await h.stack.control.waitForEffect((e) => e.kind === 'notification.delivered' && e.ref === ref, 10_000);
    assert.equal(delivered.details?.http_status, 200);
    assert.equal(delivered.details?.attempt, 1);
  });

  test('ends failed when the provider reports the payment failed', async () => {
    const ref = uniqueRef('gw-fail');
    const link = await create(ref);
    await h.stack.control.failLink(link.payment_ref!);
    const failed = await until(link.link_id, 'failed');
    assert.match(failed.reason ?? '', /failed/);
    assert.equal(failed.notifications[0].outcome, 'failed');
    assert.deepEqual((await effects(ref)).filter((k) => k.startsWith('link.')), ['link.created', 'link.failed']);
  });

  test('ends expired when an abandoned link outlives its short lifetime', async () => {
    // A second client and gateway whose links live 2 s (the main one's live a day).
    const mpf = new MpfClient({ client: h.stack.client, taskQueue: h.stack.taskQueue, keys: h.stack.keys, publicUrl: 'http://127.0.0.1:9', linkLifetimeSeconds: 2 });
    const short: RunningGateway = await startGateway({ mpf, apiKey: API_KEY, port: 0 });
    try {
      const ref = uniqueRef('gw-abandon');
      const r = await gatewayCaller(short.url, API_KEY).api('POST', '/v1/payment-links', linkBody(ref));
      assert.equal(r.status, 201, r.text);
      const link = r.json as LinkView;
      assert.ok(Date.parse(link.expires_at!) - Date.now() <= 2_000);
      const final = (await h.stack.client.workflow.getHandle(link.link_id).result()) as LinkView;
      assert.equal(final.state, 'expired');
      assert.equal((await view(link.link_id)).state, 'expired');
      assert.deepEqual(await effects(ref), ['link.created']);
    } finally {
      await short.close();
    }
  });

  test('keeps a notification delivered three times as one record, signalled once, and lets a pending one move nothing', async () => {
    const ref = uniqueRef('gw-dedup');
    const link = await create(ref);
    const url = await notificationUrl(ref);
    const stale = pending(link.payment_ref!, 'pending-1');
    for (let i = 0; i < 3; i++) {
      const r = await notify(url, stale);
      assert.equal(r.status, 200);
      // The gateway hands a notification to the flow once; it acknowledges the repeats as duplicates.
      assert.deepEqual(r.json, i === 0 ? { received: true } : { received: true, duplicate: true });
    }
    assert.equal((await historyMessages(h.stack, link.link_id)).signals.length, 1, 'signalled once');
    const awaiting = await eventually(async () => {
      const v = await view(link.link_id);
      return v.notifications[0]?.deliveries === 1 ? v : undefined;
    }, 20_000, 'one delivery');
    assert.equal(awaiting.state, 'awaiting_payment');
    assert.equal(awaiting.notifications.length, 1);
    assert.deepEqual(
      { outcome: awaiting.notifications[0].outcome, applied: awaiting.notifications[0].applied },
      { outcome: 'pending', applied: false },
    );
    // A raw, non-JSON body is accepted and kept (as text), and moves nothing either.
    // Raw on purpose: a body that is not JSON, with a content type the gateway does not take.
    const text = await http('POST', url, { rawBody: 'status=weird', headers: { 'content-type': 'text/plain' } });
    assert.equal(text.status, 200);
    await h.stack.control.completeLink(link.payment_ref!);
    const paid = await until(link.link_id, 'paid');
    assert.deepEqual(
      paid.notifications.map((n) => [n.outcome, n.applied, n.deliveries]),
      [
        ['pending', false, 1],
        ['unknown', false, 1],
        ['paid', true, 1],
      ],
    );
    assert.equal(paid.notifications[1].payload, 'status=weird');
    assert.deepEqual((await effects(ref)).filter((k) => k.startsWith('link.')), ['link.created', 'link.paid']);
  });

  test('ends paid however the provider duplicates and reorders its notifications', async () => {
    await h.stack.control.setFaults({ rules: [], notifications: { duplicate: 2, reorder: true } });
    const ref = uniqueRef('gw-reorder');
    const link = await create(ref);
    await h.stack.control.completeLink(link.payment_ref!);
    // 3 copies of the final notification, then a stale 'pending' one: all answered 2xx.
    await eventually(async () => (await ledger(ref)).effects.filter((e) => e.kind === 'notification.delivered').length === 4, 30_000, 'four deliveries');
    const l = await ledger(ref);
    assert.equal(l.effects.filter((e) => e.kind === 'notification.failed_attempt').length, 0);
    const final = (await h.stack.client.workflow.getHandle(link.link_id).result()) as LinkView;
    assert.equal(final.state, 'paid');
    assert.equal((await view(link.link_id)).state, 'paid');
    // Exactly one notification moved the link; the stale 'pending' one never did.
    assert.equal(final.notifications.filter((n) => n.applied).length, 1);
    assert.equal(final.notifications.find((n) => n.applied)?.outcome, 'paid');
    assert.ok(!final.notifications.some((n) => n.outcome === 'pending' && n.applied));
  });

  test('answers a late notification after the link ended with 200, and changes nothing', async () => {
    const ref = uniqueRef('gw-late');
    const link = await create(ref);
    await h.stack.control.completeLink(link.payment_ref!);
    await h.stack.client.workflow.getHandle(link.link_id).result();
    const before = await historyMessages(h.stack, link.link_id);
    const url = await notificationUrl(ref);
    const late = await notify(url, {
      event: 'collection.failed',
      data: { payment_ref: link.payment_ref, status: 'failed', notification_id: 'late-1', sequence: 3, occurred_at: new Date().toISOString() },
    });
    assert.equal(late.status, 200);
    assert.deepEqual(late.json, { received: true, applied: false });
    const after = await view(link.link_id);
    assert.equal(after.state, 'paid');
    assert.equal(after.notifications.length, 1);
    assert.deepEqual(await historyMessages(h.stack, link.link_id), before);
    assert.deepEqual((await effects(ref)).filter((k) => k.startsWith('link.')), ['link.created', 'link.paid']);
  });

  test('refuses forged notifications (wrong token, unknown flow, another flow’s token) and signals nothing', async () => {
    const a = await create(uniqueRef('gw-forge-a'));
    const b = await create(uniqueRef('gw-forge-b'));
    const urlA = await notificationUrl(a.txn_merchant_ref);
    const urlB = await notificationUrl(b.txn_merchant_ref);
    const tokenB = urlB.split('/').pop()!;
    const base = `${h.gw.url}/v1/notifications`;
    const paid = { event: 'collection.completed', data: { payment_ref: a.payment_ref, status: 'successful', notification_id: 'forged', sequence: 9, occurred_at: new Date().toISOString() } };

    const wrong = await notify(`${base}/paylink/${a.link_id}/${'A'.repeat(43)}`, paid);
    assert.equal(wrong.status, 404, 'a wrong token is answered as an unknown flow');
    const othersToken = await notify(`${base}/paylink/${a.link_id}/${tokenB}`, paid);
    assert.equal(othersToken.status, 404);
    const unknown = await notify(`${base}/paylink/paylink-${uniqueRef('ghost')}/${tokenB}`, paid);
    assert.equal(unknown.status, 404);
    const wrongKind = await notify(urlA.replace('/notifications/paylink/', '/notifications/swap/'), paid);
    assert.equal(wrongKind.status, 404);
    const badKind = await notify(urlA.replace('/notifications/paylink/', '/notifications/refund/'), paid);
    assert.equal(badKind.status, 404);

    assert.deepEqual((await historyMessages(h.stack, a.link_id)).signals, []);
    const v = await view(a.link_id);
    assert.equal(v.state, 'awaiting_payment');
    assert.deepEqual(v.notifications, []);
    assert.deepEqual((await effects(a.txn_merchant_ref)).filter((k) => k.startsWith('link.')), ['link.created']);
    for (const l of [a, b]) {
      const c = await h.api('POST', `/v1/payment-links/${l.link_id}/cancel`);
      assert.equal(c.json.state, 'cancelled');
    }
  });

  test('answers a reused txn_merchant_ref with 409 and the existing link, creating one link at the provider', async () => {
    const ref = uniqueRef('gw-dup');
    const link = await create(ref);
    const dup = await h.api('POST', '/v1/payment-links', linkBody(ref, { amount: 1 }));
    assert.equal(dup.status, 409);
    assert.equal(dup.json.error, 'duplicate');
    assert.equal(dup.json.link.link_id, link.link_id);
    assert.equal(dup.json.link.pay_link, link.pay_link);
    assert.deepEqual((await effects(ref)).filter((k) => k === 'link.created'), ['link.created']);
    assert.equal((await h.stack.control.ledger({ ref, endpoint: 'link.create' })).requests.length, 1);
    await h.api('POST', `/v1/payment-links/${link.link_id}/cancel`);
  });

  test('answers 502 with a failed link saying no money moved when an applied creation lost its answer, and never creates it twice', async () => {
    await h.stack.control.setFaults({ rules: [{ endpoint: 'link.create', kind: 'apply_then_fail', times: 1 }] });
    const ref = uniqueRef('gw-ambig');
    const r = await h.api('POST', '/v1/payment-links', linkBody(ref));
    assert.equal(r.status, 502, r.text);
    assert.equal(r.json.error, 'provider_failed');
    assert.equal(r.json.link.state, 'failed');
    assert.match(r.json.link.reason, /No money moved: the customer never received pay_link/);
    assert.equal(((await h.stack.client.workflow.getHandle(`paylink-${ref}`).result()) as LinkView).state, 'failed');
    assert.equal((await h.stack.control.ledger({ ref, endpoint: 'link.create' })).requests.length, 2, 'retried once, refused as a duplicate');
    assert.deepEqual(await effects(ref), ['link.created']);
  });

  test('refuses a non-NGN currency, a bad URL, e-mail or phone with 400 naming the field, and starts nothing', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ currency: 'USD' }, 'currency'],
      [{ redirect_url: 'not a url' }, 'redirect_url'],
      [{ redirect_url: 'ftp://example.com/x' }, 'redirect_url'],
      [{ redirect_url: undefined }, 'redirect_url'],
      [{ email: 'nobody' }, 'email'],
      [{ phone: '12' }, 'phone'],
      [{ payment_channel: 'CARD' }, 'payment_channel'],
      [{ payment_method: 'QR' }, 'payment_method'],
      [{ amount: 0 }, 'amount'],
      [{ full_name: '  ' }, 'full_name'],
    ];
    for (const [patch, field] of cases) {
      const ref = uniqueRef('gw-badlink');
      const r = await h.api('POST', '/v1/payment-links', { ...linkBody(ref), ...patch });
      assert.equal(r.status, 400, `${JSON.stringify(patch)}: ${r.text}`);
      assert.equal(r.json.error, 'invalid_request');
      assert.equal(r.json.field, field, r.text);
      assert.match(r.json.message, new RegExp(`^${field}: `));
      assert.equal(await workflowExists(h.stack, `paylink-${ref}`), false);
      assert.equal((await ledger(ref)).requests.length, 0);
    }
  });

  test('cancels a link awaiting payment; a cancelled link is not cancelled again', async () => {
    const ref = uniqueRef('gw-cancel');
    const link = await create(ref);
    const c = await h.api('POST', `/v1/payment-links/${link.link_id}/cancel`, { reason: 'order withdrawn' });
    assert.equal(c.status, 200);
    assert.equal(c.json.state, 'cancelled');
    assert.equal(c.json.reason, 'order withdrawn');
    const again = await h.api('POST', `/v1/payment-links/${link.link_id}/cancel`);
    assert.equal(again.status, 409);
    assert.equal(again.json.link.state, 'cancelled');
    assert.equal((await h.api('GET', '/v1/payment-links/paylink-none-such')).status, 404);
    assert.equal((await h.api('GET', `/v1/payment-links/swap-${ref}`)).status, 404);
  });

  test('lists the 77 categories as strings, flat and as a tree, and caches them', async () => {
    const before = (await h.stack.control.ledger({ endpoint: 'categories' })).requests.length;
    const r = await h.api('GET', '/v1/categories');
    assert.equal(r.status, 200);
    const { categories, tree } = r.json as {
      categories: { code: string; name: string }[];
      tree: { parents: { code: string; name: string; children: { code: string; name: string }[] }[]; orphans: unknown[] };
    };
    assert.equal(categories.length, 77);
    assert.ok(categories.every((c) => typeof c.code === 'string' && typeof c.name === 'string'));
    const codes = categories.map((c) => c.code);
    assert.ok(codes.includes('13.1'));
    assert.ok(!codes.includes('13.10'), '13.1 stays 13.1');
    assert.equal(new Set(codes).size, 77);
    const named = (code: string) => categories.find((c) => c.code === code)?.name;
    assert.equal(named('13.23'), 'eVouchers > Electronics');
    assert.equal(named('13.42'), 'eVouchers > Electronics');
    assert.deepEqual(tree.orphans, []);
    const childrenOf = (code: string) => tree.parents.find((p) => p.code === code)?.children.map((c) => c.code) ?? [];
    assert.deepEqual(childrenOf('4.0'), ['4.1', '4.2', '4.3', '4.4', '4.5', '4.6']);
    assert.deepEqual(childrenOf('8.0'), ['8.1', '8.2', '8.3']);
    assert.deepEqual(childrenOf('10.0'), ['10.1', '10.2']);
    assert.deepEqual(childrenOf('11.0'), ['11.1', '11.2', '11.3']);
    const evouchers = childrenOf('13.0');
    assert.equal(evouchers.length, 50);
    assert.ok(evouchers.includes('13.1') && evouchers.includes('13.23') && evouchers.includes('13.42'));
    assert.deepEqual(childrenOf('1.0'), []);
    assert.equal(tree.parents.length + tree.parents.reduce((n, p) => n + p.children.length, 0), 77);
    const again = await h.api('GET', '/v1/categories');
    assert.deepEqual(again.json, r.json);
    assert.equal((await h.stack.control.ledger({ endpoint: 'categories' })).requests.length, before + 1);
  });
});
