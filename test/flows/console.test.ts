/**
 * The merchant's console through a real gateway on the real stack (Temporal dev server, simulator,
 * worker): people signed in through the local sign-in (the demo's, whose tokens the API verifies
 * through the same PersonTokens path as an IdP's), each page read and each action taken through
 * the API with the person's token; roles decided by the API, not by hidden buttons; CSRF; the
 * CSV export against the API's own list.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { newKey, KeyringSource } from '../../src/auth/keyring';
import { LocalSignIn } from '../../src/starter/console/local-sign-in';
import type { ConsoleRole } from '../../src/starter/console/roles';
import { linkBody, uniqueRef } from '../helpers/fixtures';
import { gatewayCaller, type GatewayHarness, http, startGatewayStack, stopOwnTemporal } from '../helpers/gateway';
import { ConsoleBrowser, textOf } from '../helpers/console';
import { eventually } from '../helpers/stack';
import { NO_MERCHANT_EVENTS } from '../../src/merchant-events/config';
import { type RunningListener, startEventListener } from '../../src/merchant-events/listener';

const backendKey = newKey({ id: 'shop-backend', role: 'backend' });
const operatorKey = newKey({ id: 'ops-key', role: 'operator' });

describe("the merchant's console, signed in through the local sign-in", () => {
  let h: GatewayHarness;
  let local: LocalSignIn;
  let receiver: RunningListener | undefined;
  const asKey = (key: string, method: string, p: string, body?: unknown) => gatewayCaller(h.gw.url, key).api(method, p, body);

  const signedIn = async (role: ConsoleRole): Promise<ConsoleBrowser> => {
    const b = new ConsoleBrowser(h.gw.url);
    const page = await b.get(`/console/local-sign-in?code=${local.issueCode(role)}`);
    assert.equal(page.status, 200, page.html);
    assert.equal(page.path, '/console/payments');
    return b;
  };

  /** A payment link notified for another amount: money may have moved, nothing settles it. */
  const linkNeedingReconciliation = async (): Promise<{ linkId: string; paymentRef: string }> => {
    const created = await asKey(backendKey.key, 'POST', '/v1/payment-links', linkBody(uniqueRef('console-recon')));
    assert.equal(created.status, 201, created.text);
    const linkId = created.json.link_id as string;
    const n = { event: 'collection.successful', data: { payment_ref: created.json.payment_ref, status: 'successful', notification_id: 'n-1', amount: 1 } };
    await h.stack.mpf.deliverNotification(linkId, n, JSON.stringify(n));
    await eventually(async () => (await asKey(backendKey.key, 'GET', `/v1/payment-links/${linkId}`)).json.state === 'needs_reconciliation', 15_000, 'needs_reconciliation');
    return { linkId, paymentRef: created.json.payment_ref as string };
  };

  before(async () => {
    local = new LocalSignIn('default');
    h = await startGatewayStack({
      events: { ...NO_MERCHANT_EVENTS, schedule: { ...NO_MERCHANT_EVENTS.schedule, initial_interval_ms: 200, max_interval_ms: 1_000 } },
      webhookEndpointsTtlMs: 0,
      gateway: { keyring: new KeyringSource({ json: JSON.stringify([backendKey.entry, operatorKey.entry]) }), console: { local } },
    });
  });

  after(async () => {
    await receiver?.close();
    await h?.stop();
    await stopOwnTemporal();
  });

  test('a one-time link signs a support person in once, and the browser holds only an opaque session cookie', async () => {
    const code = local.issueCode('support');
    const b = new ConsoleBrowser(h.gw.url);
    const page = await b.get(`/console/local-sign-in?code=${code}`);
    assert.equal(page.path, '/console/payments');
    assert.match(textOf(page.html), /Sam Support · support/);
    const session = b.jar.get('mpf_console_session');
    assert.ok(session && !session.includes('.'), 'an opaque id, not a token');
    const again = await new ConsoleBrowser(h.gw.url).get(`/console/local-sign-in?code=${code}`);
    assert.equal(again.status, 403);
    assert.match(textOf(again.html), /already used, is unknown or has expired/);
    const stranger = await new ConsoleBrowser(h.gw.url).get('/console/payments');
    assert.equal(stranger.path, '/console/sign-in', 'no session: the sign-in page');
  });

  test('the payments list shows a link with its state, and its page shows the facts and events', async () => {
    const ref = uniqueRef('console-list');
    const created = await asKey(backendKey.key, 'POST', '/v1/payment-links', linkBody(ref));
    assert.equal(created.status, 201, created.text);
    const b = await signedIn('support');
    await eventually(async () => textOf((await b.get('/console/payments?kind=payment_link')).html).includes(ref), 20_000, 'the link listed');
    const list = await b.get(`/console/payments?kind=payment_link&txn_ref=${ref}`);
    assert.match(list.html, new RegExp(`href="/console/payments/paylink-${ref}"`));
    const rows = list.html.match(/<tr>\s*<td><a href="\/console\/payments\//g) ?? [];
    assert.equal(rows.length, 1, 'the search by txn_ref lists that link only');
    assert.match(textOf(list.html), /25,000\.00 NGN customer-1 awaiting_payment/, 'amount, customer and state in its row');
    const page = await b.get(`/console/payments/paylink-${ref}`);
    assert.equal(page.status, 200, page.html);
    const text = textOf(page.html);
    assert.match(text, /25,000\.00 NGN/);
    assert.match(text, /awaiting_payment/);
    assert.match(text, new RegExp(`txn_merchant_ref ${ref}`));
    assert.match(text, /Timeline .*payment_link\.created/, "the API's timeline");
    assert.doesNotMatch(page.html, /Redeliver/, 'support has no redeliver control');
  });

  test("support sees no resolve or pause control, and the API refuses support's resolve and pause with 403", async () => {
    const { linkId, paymentRef } = await linkNeedingReconciliation();
    const b = await signedIn('support');
    const queue = await b.get('/console/reconciliations');
    assert.equal(queue.status, 200, queue.html);
    await eventually(async () => textOf((await b.get('/console/reconciliations')).html).includes(linkId.slice('paylink-'.length)), 20_000, 'the link queued');
    assert.doesNotMatch(queue.html, /Resolve…|action="\/console\/reconciliations\/[^"]+\/resolve"/);
    const guard = await b.get('/console/provider');
    assert.equal(guard.status, 200, guard.html);
    assert.doesNotMatch(guard.html, /provider\/pause|provider\/resume/);
    // The form a support person could still post by hand: the API refuses it.
    const tried = await b.post(`/console/reconciliations/${linkId}/resolve`, { outcome: 'paid', provider_reference: paymentRef, note: 'support tries', back: `/console/payments/${linkId}` });
    assert.match(textOf(tried.html), /The API answered 403: this route needs the role operator/);
    const paused = await b.post('/console/provider/pause', { reason: 'support tries' });
    assert.match(textOf(paused.html), /The API answered 403/);
    assert.equal((await asKey(operatorKey.key, 'GET', '/v1/admin/provider')).json.paused, undefined, 'nothing was paused');
    assert.equal((await asKey(backendKey.key, 'GET', `/v1/payment-links/${linkId}`)).json.state, 'needs_reconciliation', 'nothing was resolved');
  });

  test('an operator resolves from the queue, and the audit record names the signed-in person', async () => {
    const { linkId, paymentRef } = await linkNeedingReconciliation();
    const b = await signedIn('operator');
    await eventually(async () => (await b.get('/console/reconciliations')).html.includes(`/console/reconciliations/${linkId}/resolve`), 20_000, 'the resolve form');
    const done = await b.post(`/console/reconciliations/${linkId}/resolve`, { outcome: 'paid', provider_reference: paymentRef, note: 'statement shows 1 NGN; refunded', back: '/console/reconciliations' });
    assert.equal(done.path, '/console/reconciliations');
    assert.match(textOf(done.html), new RegExp(`Resolved ${linkId} as paid; the audit names you`));
    const view = await asKey(backendKey.key, 'GET', `/v1/payment-links/${linkId}`);
    assert.equal(view.json.state, 'reconciled');
    assert.equal(view.json.reconciliation.operator, 'person Omar Operator (sub demo-operator)');
  });

  test('a form without the CSRF token is refused with 403 and changes nothing', async () => {
    const b = await signedIn('operator');
    await b.get('/console/provider');
    const refused = await b.post('/console/provider/pause', { reason: 'no token' }, { csrf: false });
    assert.equal(refused.status, 403);
    assert.match(textOf(refused.html), /did not carry the console's CSRF token/);
    const forged = await b.post('/console/provider/pause', { reason: 'forged token', _csrf: 'not-the-token' }, { csrf: false });
    assert.equal(forged.status, 403);
    assert.equal((await asKey(operatorKey.key, 'GET', '/v1/admin/provider')).json.paused, undefined, 'nothing was paused');
  });

  test("finance exports a CSV whose rows equal the API's list with the same filters", async () => {
    for (let i = 0; i < 3; i++) assert.equal((await asKey(backendKey.key, 'POST', '/v1/payment-links', linkBody(uniqueRef('console-csv')))).status, 201);
    const b = await signedIn('finance');
    const list = await b.get('/console/payments?kind=payment_link&state=awaiting_payment');
    assert.match(list.html, /href="\/console\/payments\.csv\?kind=payment_link&amp;state=awaiting_payment"/);
    const api = async () => {
      const items: Array<Record<string, unknown>> = [];
      let token: string | undefined;
      do {
        const r = await asKey(backendKey.key, 'GET', `/v1/payment-links?state=awaiting_payment&limit=100${token ? `&page_token=${encodeURIComponent(token)}` : ''}`);
        assert.equal(r.status, 200, r.text);
        items.push(...(r.json.items as Array<Record<string, unknown>>));
        token = r.json.next_page_token as string | undefined;
      } while (token);
      return items;
    };
    // Visibility settles; the export and the API are read until they agree on a quiet list.
    await eventually(async () => {
      const csv = await b.get('/console/payments.csv?kind=payment_link&state=awaiting_payment');
      assert.equal(csv.status, 200, csv.html);
      assert.match(String(csv.headers['content-type']), /^text\/csv/);
      const [header, ...rows] = csv.html.trimEnd().split('\r\n');
      const columns = header!.split(',');
      const items = await api();
      if (rows.length !== items.length || items.length < 3) return false;
      rows.forEach((row, i) => {
        const cells = row.split(',');
        columns.forEach((c, j) => assert.equal(cells[j], items[i]![c] === undefined ? '' : String(items[i]![c]), `row ${i} ${c}`));
      });
      return true;
    }, 20_000, 'the CSV equals the list');
    const support = await signedIn('support');
    assert.doesNotMatch((await support.get('/console/payments?kind=payment_link')).html, /payments\.csv/);
    assert.equal((await support.get('/console/payments.csv?kind=payment_link')).status, 403);
  });

  test('the console is off the OpenAPI document, and its pages carry a CSP that allows no script', async () => {
    const doc = await http('GET', `${h.gw.url}/openapi.json`);
    assert.equal(doc.status, 200);
    assert.ok(!Object.keys(doc.json.paths).some((p) => p.startsWith('/console')), 'no console path in the document');
    const b = await signedIn('support');
    const page = await b.get('/console/payments');
    assert.match(String(page.headers['content-security-policy']), /default-src 'none'; style-src 'self'/);
    assert.doesNotMatch(page.html, /<script/);
    assert.match(String(page.headers['cache-control']), /no-store/);
  });

  test('an operator adds an endpoint and sees its secret once, and redelivers an event to that endpoint only', async () => {
    const secrets: string[] = [];
    receiver = await startEventListener({ secrets });
    const b = await signedIn('operator');
    await b.get('/console/webhooks');
    const created = await b.post('/console/webhooks', { url: receiver.url, enabled_events: 'payment_link.created', description: 'console test' });
    assert.equal(created.status, 200, created.html);
    assert.deepEqual([created.path, created.redirects], ['/console/webhooks', 1], 'the form answers with a redirect, so a reload re-posts nothing');
    const secret = /<pre>(whsec_[^<]+)<\/pre>/.exec(created.html)?.[1];
    assert.ok(secret, 'the secret on the page that answers the form');
    secrets.push(secret);
    const id = /(we_[0-9a-f]{24})/.exec(created.html)![1]!;
    assert.doesNotMatch((await b.get('/console/webhooks')).html, /whsec_/, 'and never again');

    const ref = uniqueRef('console-redeliver');
    assert.equal((await asKey(backendKey.key, 'POST', '/v1/payment-links', linkBody(ref))).status, 201);
    const eventId = `evt_paylink-${ref}_1`;
    await eventually(async () => receiver!.deliveries.some((d) => d.verified && d.id === eventId), 20_000, 'the first delivery');
    const before = receiver.deliveries.filter((d) => d.id === eventId).length;
    const page = await b.get(`/console/payments/paylink-${ref}`);
    assert.match(page.html, new RegExp(`<option value="${id}">`), 'the endpoint to choose');
    const sent = await b.post(`/console/events/${eventId}/redeliver`, { endpoint: id, back: `/console/payments/paylink-${ref}` });
    assert.equal(sent.path, `/console/payments/paylink-${ref}`);
    assert.match(textOf(sent.html), new RegExp(`Event ${eventId} sent again to ${id} only`));
    await eventually(async () => receiver!.deliveries.filter((d) => d.verified && d.id === eventId).length > before, 20_000, 'the redelivery');
  });

  test('an operator creates an API key with a role, sees it once, and revokes it; the key works until then', async () => {
    const b = await signedIn('operator');
    await b.get('/console/api-keys');
    const created = await b.post('/console/api-keys', { role: 'read_only', label: 'console test' });
    assert.equal(created.status, 200, created.html);
    assert.deepEqual([created.path, created.redirects], ['/console/api-keys', 1], 'the form answers with a redirect, so a reload re-posts nothing');
    const key = /<pre>([^<]+)<\/pre>/.exec(created.html)?.[1];
    const id = /API key (ak_[0-9a-f]{24}) \(role read_only\)/.exec(textOf(created.html))?.[1];
    assert.ok(key && id, textOf(created.html).slice(0, 400));
    assert.match(textOf(created.html), /console test/, 'its label listed');
    assert.ok(!(await b.get('/console/api-keys')).html.includes(key), 'shown once');
    await eventually(async () => (await asKey(key, 'GET', '/v1/swaps')).status === 200, 20_000, 'the new key reads');
    const revoked = await b.post(`/console/api-keys/${id}/revoke`);
    assert.match(textOf(revoked.html), new RegExp(`Revoked ${id}`));
    await eventually(async () => (await asKey(key, 'GET', '/v1/swaps')).status === 401, 20_000, 'the revoked key refused');
    const support = await signedIn('support');
    assert.doesNotMatch((await support.get('/console/payments')).html, /API keys/, 'not in support\'s navigation');
    assert.match(textOf((await support.get('/console/api-keys')).html), /Your role may not see API keys/);
  });

  test('with every worker stopped, the payments list and a closed payment with its events still load', async () => {
    const { linkId, paymentRef } = await linkNeedingReconciliation();
    assert.equal((await asKey(operatorKey.key, 'POST', `/v1/admin/flows/${linkId}/resolve`, { outcome: 'failed', provider_reference: paymentRef, note: 'nothing arrived' })).status, 200);
    await eventually(async () => (await asKey(backendKey.key, 'GET', `/v1/payment-links?txn_ref=${linkId.slice('paylink-'.length)}`)).json.items?.[0]?.execution_status === 'COMPLETED', 20_000, 'closed');
    await h.stack.stopWorker();
    const b = await signedIn('support');
    const list = await b.get(`/console/payments?kind=payment_link&txn_ref=${linkId.slice('paylink-'.length)}`);
    assert.equal(list.status, 200, list.html);
    assert.match(textOf(list.html), /reconciled/);
    const page = await b.get(`/console/payments/${linkId}`);
    assert.equal(page.status, 200, page.html);
    assert.match(textOf(page.html), /payment_link\.reconciled/);
  });
});
