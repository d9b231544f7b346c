/**
 * What a merchant's backend needs from the gateway beyond one call: safe retries (Idempotency-Key,
 * across two gateway processes that share nothing but Temporal), lists of swaps and payment links,
 * and acting on needs_reconciliation (the admin resolve route). Real Temporal, simulator, worker.
 */
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Payload } from '@temporalio/common';
import { AesGcmCodec } from '../../src/codec/aes-gcm-codec';
import { idempotencyWorkflowId } from '../../src/starter/client/idempotency';
import { MERCHANT_SCOPE } from '../../src/starter/gateway/idempotency';
import { MpfClient } from '../../src/starter/client/mpf-client';
import { type RunningGateway, startGateway } from '../../src/starter/gateway/main';
import { eventually } from '../helpers/stack';
import { linkBody, swapBody, uniqueRef } from '../helpers/fixtures';
import { API_KEY, gatewayCaller, type GatewayHarness, startGatewayStack, stopOwnTemporal } from '../helpers/gateway';

const PIN = '908172';
const API_SCOPE = MERCHANT_SCOPE;

/** A history with every payload decrypted (what an operator with the codec sees), as text. */
async function decodedHistory(h: GatewayHarness, workflowId: string): Promise<string> {
  const codec = new AesGcmCodec(h.stack.keys);
  const walk = async (node: unknown): Promise<unknown> => {
    if (Array.isArray(node)) return Promise.all(node.map(walk));
    if (node instanceof Uint8Array) return Buffer.from(node).toString('utf8');
    if (!node || typeof node !== 'object') return node;
    const obj = node as Record<string, unknown>;
    if (obj.metadata && typeof obj.metadata === 'object' && obj.data instanceof Uint8Array) {
      const [p] = await codec.decode([obj as Payload]);
      return Buffer.from(p!.data ?? new Uint8Array()).toString('utf8');
    }
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(obj)) if (typeof v !== 'function') out[k] = await walk(v);
    return out;
  };
  return JSON.stringify(await walk(await h.stack.client.workflow.getHandle(workflowId).fetchHistory()));
}

describe('the gateway for merchant backends', () => {
  let h: GatewayHarness;
  let gw2: RunningGateway;

  before(async () => {
    h = await startGatewayStack({ simulator: { pins: { 'user-1': PIN } } });
    // A second gateway process in all but the process: its own client and app, no memory shared
    // with the first; the same public URL, as behind one load balancer.
    const mpf2 = new MpfClient({ client: h.stack.client, taskQueue: h.stack.taskQueue, keys: h.stack.keys, publicUrl: h.gw.url });
    gw2 = await startGateway({ mpf: mpf2, apiKey: API_KEY, port: 0, publicUrl: h.gw.url });
  });
  after(async () => {
    await gw2?.close();
    await h?.stop();
    await stopOwnTemporal();
  });
  beforeEach(async () => {
    await h.stack.control.clearFaults();
    await h.stack.control.setConfig({ swapExpiresInSeconds: 300 });
  });

  const post = (base: string, path: string, body: unknown, key?: string, headers: Record<string, string> = {}) =>
    gatewayCaller(base, API_KEY).api('POST', path, body, { ...(key ? { 'idempotency-key': key } : {}), ...headers });
  const get = (path: string) => h.api('GET', path);

  test('POST /v1/swaps retried with the same Idempotency-Key answers the same 201 body, with a pin_token that confirms the swap, on either gateway', async () => {
    const txn = uniqueRef('idem-swap');
    const key = `key-${txn}`;
    const first = await post(h.gw.url, '/v1/swaps', swapBody(txn), key);
    assert.equal(first.status, 201, first.text);
    const again = await post(gw2.url, '/v1/swaps', swapBody(txn), key);
    assert.equal(again.status, 201, again.text);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.deepEqual(again.json, first.json);
    assert.ok(first.json.pin_token.length >= 43);

    const other = await post(gw2.url, '/v1/swaps', swapBody(txn, { amount: 99 }), key);
    assert.equal(other.status, 422, other.text);
    assert.equal(other.json.error, 'idempotency_key_mismatch');
    assert.equal(other.json.field, 'amount');
    assert.match(other.json.message, /Idempotency-Key: was first used with a different amount/);
    const otherRoute = await post(h.gw.url, '/v1/payment-links', linkBody(txn), key);
    assert.equal(otherRoute.status, 422, otherRoute.text);
    assert.match(otherRoute.json.message, /was first used for POST \/v1\/swaps/);

    // The replayed token is the swap's own: it confirms it.
    const outcome = await gatewayCaller(gw2.url).call('POST', `/v1/swaps/${again.json.swap_id}/pin`, { body: { wallet_pin: PIN }, headers: { authorization: `Bearer ${again.json.pin_token}` } });
    assert.equal(outcome.status, 200, outcome.text);
    assert.equal(outcome.json.outcome, 'confirmed');
    const effects = (await h.stack.control.ledger({ ref: txn })).effects.map((e) => e.kind);
    assert.deepEqual(effects.filter((k) => k === 'swap.initialized'), ['swap.initialized'], 'one initialisation');
    assert.equal((await h.stack.control.ledger({ ref: txn, endpoint: 'swap.init' })).requests.length, 1);

    // No plaintext token in the swap's or the key record's history, even decrypted.
    const record = await decodedHistory(h, idempotencyWorkflowId(API_SCOPE, key));
    assert.match(record, /POST \/v1\/swaps/, 'the decoded record is readable');
    assert.ok(record.includes(first.json.swap_id), 'the kept answer is in the record');
    for (const id of [again.json.swap_id as string, idempotencyWorkflowId(API_SCOPE, key)]) {
      const text = await decodedHistory(h, id);
      assert.ok(!text.includes(first.json.pin_token), `pin_token in ${id}`);
      assert.ok(!text.includes(PIN), `PIN in ${id}`);
    }
  });

  test('the same key without a body change is a replay for PIN, cancel and payment-link POSTs too; without a key nothing changes', async () => {
    const txn = uniqueRef('idem-link');
    const created = await post(h.gw.url, '/v1/payment-links', linkBody(txn), `c-${txn}`);
    assert.equal(created.status, 201, created.text);
    const recreated = await post(gw2.url, '/v1/payment-links', linkBody(txn), `c-${txn}`);
    assert.equal(recreated.status, 201, recreated.text);
    assert.deepEqual(recreated.json, created.json);
    const plain = await post(h.gw.url, '/v1/payment-links', linkBody(txn));
    assert.equal(plain.status, 409, 'a retry without a key is the duplicate it always was');

    const cancelled = await post(h.gw.url, `/v1/payment-links/${created.json.link_id}/cancel`, { reason: 'order void' }, `x-${txn}`);
    assert.equal(cancelled.status, 200, cancelled.text);
    const again = await post(gw2.url, `/v1/payment-links/${created.json.link_id}/cancel`, { reason: 'order void' }, `x-${txn}`);
    assert.equal(again.status, 200, 'the first answer, not 409 not_cancellable');
    assert.deepEqual(again.json, cancelled.json);
    assert.equal((await h.stack.control.ledger({ ref: txn })).effects.filter((e) => e.kind === 'link.created').length, 1);

    const s = await post(h.gw.url, '/v1/swaps', swapBody(uniqueRef('idem-pin')), undefined);
    const pinWith = (base: string, wallet_pin: string) =>
      gatewayCaller(base).call('POST', `/v1/swaps/${s.json.swap_id}/pin`, { body: { wallet_pin }, headers: { authorization: `Bearer ${s.json.pin_token}`, 'idempotency-key': 'pin-1' } });
    const wrong = await pinWith(h.gw.url, '000111');
    assert.deepEqual(wrong.json, { outcome: 'pin_rejected', state: 'awaiting_pin', attempts_left: 2 });
    assert.deepEqual((await pinWith(gw2.url, '000111')).json, wrong.json, 'a retried PIN is not a second attempt');
    assert.equal((await pinWith(gw2.url, PIN)).status, 422, 'another PIN under the same key');
    assert.equal((await get(`/v1/swaps/${s.json.swap_id}`)).json.pin_attempts_used, 1);
  });

  test('a retry after the first request started the swap but kept no answer (its gateway gave up) answers that swap, with a working pin_token', async () => {
    const txn = uniqueRef('idem-takeover');
    const key = `key-${txn}`;
    // What a gateway that died mid-request leaves: the key claimed, the swap started under it, no answer kept.
    const store = h.stack.mpf.idempotency;
    const claim = await store.claim(API_SCOPE, key, 'POST /v1/swaps', swapBody(txn));
    assert.equal(claim.kind, 'claimed');
    await h.stack.mpf.startSwap(swapBody(txn), { idempotencyId: claim.workflowId });
    await store.release(claim.workflowId, claim.claimId);

    const retry = await post(gw2.url, '/v1/swaps', swapBody(txn), key);
    assert.equal(retry.status, 201, retry.text);
    assert.equal(retry.json.swap_id, `swap-${txn}`);
    const outcome = await gatewayCaller(h.gw.url).call('POST', `/v1/swaps/${retry.json.swap_id}/pin`, { body: { wallet_pin: PIN }, headers: { authorization: `Bearer ${retry.json.pin_token}` } });
    assert.equal(outcome.json.outcome, 'confirmed', outcome.text);
    // Another key for the same reference is still the plain duplicate.
    assert.equal((await post(h.gw.url, '/v1/swaps', swapBody(txn), `other-${txn}`)).status, 409);
    assert.equal((await h.stack.control.ledger({ ref: txn, endpoint: 'swap.init' })).requests.length, 1);
  });

  test('a bad Idempotency-Key is a 400 naming it, and nothing starts', async () => {
    const txn = uniqueRef('idem-bad');
    const r = await post(h.gw.url, '/v1/swaps', swapBody(txn), 'has spaces in it');
    assert.equal(r.status, 400, r.text);
    assert.match(r.json.message, /idempotency-key/i);
    assert.equal((await h.stack.control.ledger({ ref: txn })).requests.length, 0);
  });

  test('the OpenAPI document has the Idempotency-Key header and the 422 answer on every flow POST', async () => {
    const doc = (await get('/openapi.json')).json;
    for (const [path, op] of [
      ['/v1/swaps', 'post'],
      ['/v1/swaps/{swap_id}/pin', 'post'],
      ['/v1/swaps/{swap_id}/cancel', 'post'],
      ['/v1/payment-links', 'post'],
      ['/v1/payment-links/{link_id}/cancel', 'post'],
      ['/v1/admin/flows/{flow_id}/resolve', 'post'],
    ] as const) {
      const o = doc.paths[path][op];
      assert.ok(o.parameters.some((p: { in: string; name: string }) => p.in === 'header' && p.name === 'idempotency-key'), path);
      assert.ok(o.responses['422'], `${path} 422`);
    }
    assert.ok(doc.paths['/v1/swaps'].get.parameters.some((p: { name: string }) => p.name === 'page_token'));
  });

  test('GET /v1/swaps lists by state and time, a page at a time, and refuses bad parameters naming them', async () => {
    const since = new Date().toISOString();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await post(h.gw.url, '/v1/swaps', swapBody(uniqueRef(`list-${i}`)));
      ids.push(r.json.swap_id);
    }
    await h.api('POST', `/v1/swaps/${ids[0]}/cancel`, {});
    const q = `state=awaiting_pin&created_from=${encodeURIComponent(since)}`;
    const seen = await eventually(async () => {
      const all: string[] = [];
      let token: string | undefined;
      let pages = 0;
      do {
        const r = await get(`/v1/swaps?${q}&limit=1${token ? `&page_token=${encodeURIComponent(token)}` : ''}`);
        assert.equal(r.status, 200, r.text);
        all.push(...r.json.items.map((i: { flow_id: string; state: string }) => (assert.equal(i.state, 'awaiting_pin'), i.flow_id)));
        token = r.json.next_page_token;
        pages++;
      } while (token && pages < 10);
      return all.includes(ids[1]!) && all.includes(ids[2]!) && !all.includes(ids[0]!) && { all, pages };
    }, 15_000, 'two awaiting swaps listed');
    assert.deepEqual([...seen.all].sort(), [ids[1], ids[2]].sort(), 'only this test\'s awaiting swaps');
    assert.ok(seen.pages >= 2, 'one per page');
    const cancelled = await eventually(async () => (await get(`/v1/swaps?state=cancelled&created_from=${encodeURIComponent(since)}`)).json.items.length === 1, 15_000, 'cancelled listed');
    assert.ok(cancelled);
    const none = await get(`/v1/payment-links?created_from=${encodeURIComponent(new Date(Date.now() + 3_600_000).toISOString())}`);
    assert.deepEqual(none.json, { items: [] });

    for (const [query, field] of [
      ['limit=0', 'limit'],
      ['limit=abc', 'limit'],
      ['state=bogus', 'state'],
      ['state=paid', 'state'],
      ['created_from=yesterday', 'created_from'],
      ['created_from=2026-01-02T00:00:00Z&created_to=2026-01-01T00:00:00Z', 'created_to'],
      ['colour=red', 'colour'],
      ['page_token=not-a-token', 'page_token'],
    ] as const) {
      const r = await get(`/v1/swaps?${query}`);
      assert.equal(r.status, 400, `${query}: ${r.text}`);
      assert.equal(r.json.field, field, query);
      assert.match(r.json.message, new RegExp(`^${field}: `), query);
    }
    // A crafted token, as anyone could compute one before page tokens were signed (a plain SHA-256
    // tag of the query and garbage for Temporal), and a real one whose signature was altered: 400, never 500.
    const real = (await get('/v1/swaps?limit=1')).json.next_page_token as string | undefined;
    const crafted = Buffer.from(JSON.stringify({ v: 2, q: 'AAAAAAAAAAAAAAAA', t: Buffer.from('garbage').toString('base64') })).toString('base64url');
    for (const forged of [`${crafted}.${'A'.repeat(43)}`, crafted, ...(real ? [`${real.split('.')[0]}.${'B'.repeat(43)}`] : [])]) {
      const r = await get(`/v1/swaps?limit=1&page_token=${encodeURIComponent(forged)}`);
      assert.equal(r.status, 400, r.text);
      assert.equal(r.json.field, 'page_token');
    }
    const other = await get(`/v1/swaps?state=cancelled&limit=1`);
    if (other.json.next_page_token) {
      const r = await get(`/v1/swaps?state=awaiting_pin&page_token=${encodeURIComponent(other.json.next_page_token)}`);
      assert.equal(r.status, 400);
      assert.equal(r.json.field, 'page_token');
    }
  });

  test('a payment link in needs_reconciliation is listed for operators and resolved with an audit record; nothing else can be', async () => {
    const txn = uniqueRef('recon-link');
    const created = await post(h.gw.url, '/v1/payment-links', linkBody(txn));
    const linkId = created.json.link_id as string;
    // A payment notified for another amount: money may have moved, nothing settles it.
    const n = { event: 'collection.successful', data: { payment_ref: created.json.payment_ref, status: 'successful', notification_id: 'n-1', amount: 1 } };
    await h.stack.mpf.deliverNotification(linkId, n, JSON.stringify(n));
    await eventually(async () => (await get(`/v1/payment-links/${linkId}`)).json.state === 'needs_reconciliation', 10_000, 'needs_reconciliation');
    await eventually(async () => (await get('/v1/admin/reconciliations?kind=payment_link')).json.items.some((i: { flow_id: string }) => i.flow_id === linkId), 15_000, 'listed');

    const resolve = (body: unknown, key?: string) => post(gw2.url, `/v1/admin/flows/${linkId}/resolve`, body, key);
    const good = { outcome: 'paid', provider_reference: created.json.payment_ref, operator: 'Ngozi (finance)', note: 'statement shows 1 NGN; refunded the customer' };
    for (const [body, field] of [
      [{ ...good, outcome: 'confirmed' }, 'outcome'],
      [{ ...good, operator: '' }, 'operator'],
      [{ ...good, note: 'token ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef0123456789' }, 'note'],
      [{ ...good, provider_reference: 'has space' }, 'provider_reference'],
    ] as const) {
      const r = await resolve(body);
      assert.equal(r.status, 400, r.text);
      assert.equal(r.json.field, field);
    }
    const r = await resolve(good, `resolve-${txn}`);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.state, 'reconciled');
    assert.equal(r.json.reconciliation.outcome, 'paid');
    // Named by the credential that resolved it (this gateway's GATEWAY_API_KEY), not by the body.
    assert.equal(r.json.reconciliation.operator, 'key gateway-api-key (GATEWAY_API_KEY)');
    assert.match(r.json.reconciliation.note, /\[named in the request: Ngozi \(finance\)\]$/);
    assert.match(r.json.reconciliation.reason_before, /a payment was notified with amount 1/);
    assert.ok(Date.parse(r.json.reconciliation.resolved_at) > 0);
    assert.deepEqual((await resolve(good, `resolve-${txn}`)).json, r.json, 'a retried resolve answers the first');
    const twice = await resolve(good);
    assert.equal(twice.status, 409, twice.text);
    assert.equal(twice.json.error, 'not_resolvable');
    assert.equal(twice.json.link.state, 'reconciled');
    const final = await h.stack.client.workflow.getHandle(linkId).result();
    assert.equal((final as { state: string }).state, 'reconciled');

    const awaiting = await post(h.gw.url, '/v1/swaps', swapBody(uniqueRef('recon-not')));
    const refused = await post(h.gw.url, `/v1/admin/flows/${awaiting.json.swap_id}/resolve`, { ...good, outcome: 'confirmed' });
    assert.equal(refused.status, 409, refused.text);
    assert.match(refused.json.message, /only a flow in needs_reconciliation can be resolved \(state: awaiting_pin\)/);
    assert.equal((await post(h.gw.url, '/v1/admin/flows/nothing-here/resolve', good)).status, 404);
  });
});
