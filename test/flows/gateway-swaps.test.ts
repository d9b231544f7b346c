/**
 * The swap half of the gateway over real HTTP, on the real Temporal dev server, simulator and
 * worker: every test checks the answer, the swap's final state and the simulator's ledger.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client, Connection } from '@temporalio/client';
import { generateDevKeys } from '../../src/codec/keys';
import { MpfClient } from '../../src/starter/client/mpf-client';
import { startGateway } from '../../src/starter/gateway/main';
import type { SwapView } from '../../src/workflows/messages';
import { swapBody, uniqueRef } from '../helpers/fixtures';
import { API_KEY, gatewayCaller, gatewayHarnessForSuite, historyMessages, workflowExists } from '../helpers/gateway';

const PIN = '908172';
const WRONG_PIN = '111333';


describe('the gateway: swaps', () => {
  const h = gatewayHarnessForSuite({ simulator: { pins: { 'user-1': PIN } } }, { simulatorConfig: { swapExpiresInSeconds: 300 } });
  const secrets = new Set<string>([PIN, WRONG_PIN, API_KEY]);

  const start = async (txn: string, extra: Record<string, unknown> = {}) => {
    const r = await h.api('POST', '/v1/swaps', swapBody(txn, extra));
    assert.equal(r.status, 201, r.text);
    secrets.add(r.json.pin_token);
    return r.json as SwapView & { pin_url: string; pin_token: string };
  };
  const pin = (swapId: string, token: string | undefined, wallet_pin: unknown) =>
    h.call('POST', `/v1/swaps/${swapId}/pin`, {
      body: { wallet_pin },
      headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
    });
  const ledger = (ref: string) => h.stack.control.ledger({ ref });
  const confirmRequests = async (ref: string) => (await h.stack.control.ledger({ ref, endpoint: 'swap.confirm' })).requests.length;
  const finalState = (id: string) => h.stack.client.workflow.getHandle(id).result() as Promise<SwapView>;

  test('starts a swap, shows the rate and amounts, and confirms it with the PIN', async () => {
    const txn = uniqueRef('gw-happy');
    const s = await start(txn);
    assert.equal(s.swap_id, `swap-${txn}`);
    assert.equal(s.state, 'awaiting_pin');
    assert.equal(s.txn_ref, txn);
    assert.equal(s.from_currency, 'USD');
    assert.equal(s.to_currency, 'NGN');
    assert.equal(s.amount, 10.5);
    assert.ok(s.rate_used! > 0 && s.converted_amount! > 0);
    assert.equal(s.expires_in_seconds, 300);
    assert.ok(Date.parse(s.expires_at!) > Date.now());
    assert.match(s.payment_ref!, /^SIMSWP-/);
    assert.ok(s.pin_token.length >= 43);
    assert.equal(s.pin_url, `${h.gw.url}/pin/${s.swap_id}#token=${s.pin_token}`);

    const outcome = await pin(s.swap_id, s.pin_token, PIN);
    assert.equal(outcome.status, 200, outcome.text);
    assert.deepEqual(outcome.json, { outcome: 'confirmed', state: 'confirmed' });

    const view = await h.api('GET', `/v1/swaps/${s.swap_id}`);
    assert.equal(view.status, 200);
    assert.equal(view.json.state, 'confirmed');
    for (const secret of [PIN, s.pin_token, 'auth_token', 'pin_token', 'sealed:']) assert.ok(!view.text.includes(secret), secret);
    assert.equal((await finalState(s.swap_id)).state, 'confirmed');

    const l = await ledger(txn);
    assert.deepEqual(l.effects.filter((e) => e.kind.startsWith('swap.')).map((e) => e.kind), ['swap.initialized', 'swap.confirmed']);
    assert.equal(await confirmRequests(txn), 1);
  });

  test('answers a wrong PIN with the attempts left, then confirms with the right one', async () => {
    const txn = uniqueRef('gw-wrong');
    const s = await start(txn);
    const first = await pin(s.swap_id, s.pin_token, WRONG_PIN);
    assert.equal(first.status, 200);
    assert.deepEqual(first.json, { outcome: 'pin_rejected', state: 'awaiting_pin', attempts_left: 2 });
    const mid = await h.api('GET', `/v1/swaps/${s.swap_id}`);
    assert.equal(mid.json.state, 'awaiting_pin');
    assert.equal(mid.json.pin_attempts_left, 2);
    const second = await pin(s.swap_id, s.pin_token, ` ${PIN} `);
    assert.deepEqual(second.json, { outcome: 'confirmed', state: 'confirmed' });
    assert.equal((await finalState(s.swap_id)).state, 'confirmed');
    const kinds = (await ledger(txn)).effects.map((e) => e.kind).filter((k) => k.startsWith('swap.'));
    assert.deepEqual(kinds, ['swap.initialized', 'swap.pin_rejected', 'swap.confirmed']);
    assert.equal(await confirmRequests(txn), 2);
  });

  test('fails the swap closed after three wrong PINs and sends no further confirmation', async () => {
    const txn = uniqueRef('gw-exhaust');
    const s = await start(txn);
    for (const left of [2, 1]) {
      assert.deepEqual((await pin(s.swap_id, s.pin_token, WRONG_PIN)).json, { outcome: 'pin_rejected', state: 'awaiting_pin', attempts_left: left });
    }
    const third = await pin(s.swap_id, s.pin_token, WRONG_PIN);
    assert.deepEqual(third.json, { outcome: 'pin_rejected', state: 'failed', attempts_left: 0 });
    const final = await finalState(s.swap_id);
    assert.equal(final.state, 'failed');
    assert.match(final.reason ?? '', /attempts exhausted/);
    // The right PIN now is refused by the gateway: the swap (and its pin_token) has ended.
    const late = await pin(s.swap_id, s.pin_token, PIN);
    assert.equal(late.status, 410);
    assert.equal(late.json.error, 'gone');
    assert.equal(await confirmRequests(txn), 3);
    const kinds = (await ledger(txn)).effects.map((e) => e.kind);
    assert.equal(kinds.filter((k) => k === 'swap.pin_rejected').length, 3);
    assert.ok(!kinds.includes('swap.confirmed'));
  });

  test('ends expired when no PIN arrives inside a 2 s provider window, with no confirm call', async () => {
    await h.stack.control.setConfig({ swapExpiresInSeconds: 2 });
    const txn = uniqueRef('gw-expire');
    const s = await start(txn);
    assert.equal(s.expires_in_seconds, 2);
    const final = await finalState(s.swap_id);
    assert.equal(final.state, 'expired');
    const view = await h.api('GET', `/v1/swaps/${s.swap_id}`);
    assert.equal(view.json.state, 'expired');
    const late = await pin(s.swap_id, s.pin_token, PIN);
    assert.equal(late.status, 410);
    assert.equal(await confirmRequests(txn), 0);
    assert.deepEqual((await ledger(txn)).effects.map((e) => e.kind), ['swap.initialized']);
  });

  test('cancels a swap awaiting its PIN; afterwards neither cancel nor PIN is accepted', async () => {
    const txn = uniqueRef('gw-cancel');
    const s = await start(txn);
    const cancelled = await h.api('POST', `/v1/swaps/${s.swap_id}/cancel`, { reason: 'user changed their mind' });
    assert.equal(cancelled.status, 200, cancelled.text);
    assert.equal(cancelled.json.state, 'cancelled');
    assert.equal(cancelled.json.reason, 'user changed their mind');
    assert.equal((await finalState(s.swap_id)).state, 'cancelled');
    const again = await h.api('POST', `/v1/swaps/${s.swap_id}/cancel`);
    assert.equal(again.status, 409);
    assert.equal(again.json.error, 'not_cancellable');
    assert.equal(again.json.swap.state, 'cancelled');
    assert.equal((await pin(s.swap_id, s.pin_token, PIN)).status, 410);
    assert.equal(await confirmRequests(txn), 0);
    assert.deepEqual((await ledger(txn)).effects.map((e) => e.kind), ['swap.initialized']);
  });

  test('answers a reused txn_ref with 409 and the existing swap, without a second initialization', async () => {
    const txn = uniqueRef('gw-dup');
    const s = await start(txn);
    const dup = await h.api('POST', '/v1/swaps', swapBody(txn, { amount: 99 }));
    assert.equal(dup.status, 409);
    assert.equal(dup.json.error, 'duplicate');
    assert.equal(dup.json.swap.swap_id, s.swap_id);
    assert.equal(dup.json.swap.amount, 10.5);
    assert.equal(dup.json.pin_token, undefined);
    const l = await ledger(txn);
    assert.equal(l.effects.filter((e) => e.kind === 'swap.initialized').length, 1);
    assert.equal((await h.stack.control.ledger({ ref: txn, endpoint: 'swap.init' })).requests.length, 1);
    await h.api('POST', `/v1/swaps/${s.swap_id}/cancel`);
  });

  test('answers 502 with the failed swap when the provider refuses the initialization', async () => {
    await h.stack.control.setFaults({ rules: [{ endpoint: 'swap.init', kind: 'html_error', status: 400, times: 1 }] });
    const txn = uniqueRef('gw-initfail');
    const r = await h.api('POST', '/v1/swaps', swapBody(txn));
    assert.equal(r.status, 502, r.text);
    assert.equal(r.json.error, 'provider_failed');
    assert.equal(r.json.swap.state, 'failed');
    assert.equal(r.json.pin_token, undefined);
    assert.equal((await finalState(`swap-${txn}`)).state, 'failed');
    assert.equal((await h.stack.control.ledger({ ref: txn, endpoint: 'swap.init' })).requests.length, 1);
    assert.deepEqual((await ledger(txn)).effects, []);
  });

  test('answers 502 with a failed swap saying no money moved when an applied initialization lost its answer, and the provider holds one', async () => {
    await h.stack.control.setFaults({ rules: [{ endpoint: 'swap.init', kind: 'apply_then_fail', times: 1 }] });
    const txn = uniqueRef('gw-initambig');
    const r = await h.api('POST', '/v1/swaps', swapBody(txn));
    assert.equal(r.status, 502, r.text);
    assert.equal(r.json.swap.state, 'failed');
    assert.match(r.json.swap.reason, /No money moved/);
    assert.equal((await finalState(`swap-${txn}`)).state, 'failed');
    assert.equal((await h.stack.control.ledger({ ref: txn, endpoint: 'swap.init' })).requests.length, 2, 'retried once, refused as a duplicate');
    assert.deepEqual((await ledger(txn)).effects.map((e) => e.kind), ['swap.initialized']);
  });

  test("refuses a PIN without a pin_token (401) or with another swap's (404, as for an unknown swap), and signals nothing", async () => {
    const a = await start(uniqueRef('gw-auth-a'));
    const b = await start(uniqueRef('gw-auth-b'));
    const none = await pin(a.swap_id, undefined, PIN);
    assert.equal(none.status, 401);
    assert.equal(none.json.error, 'unauthorized');
    assert.match(String(none.headers['www-authenticate']), /^Bearer/);
    const other = await pin(a.swap_id, b.pin_token, PIN);
    assert.equal(other.status, 404);
    assert.equal(other.json.error, 'not_found');
    const garbage = await pin(a.swap_id, 'x'.repeat(43), PIN);
    assert.equal(garbage.status, 404);
    const apiKeyInstead = await pin(a.swap_id, API_KEY, PIN);
    assert.equal(apiKeyInstead.status, 404);
    const unknown = await pin(`swap-${uniqueRef('nope')}`, a.pin_token, PIN);
    assert.equal(unknown.status, 404);
    const notASwap = await pin('paylink-whatever', a.pin_token, PIN);
    assert.equal(notASwap.status, 404);

    const history = await historyMessages(h.stack, a.swap_id);
    assert.deepEqual(history.signals, []);
    assert.deepEqual(history.updates.filter((u) => u !== 'initialized'), []);
    const view = await h.api('GET', `/v1/swaps/${a.swap_id}`);
    assert.equal(view.json.state, 'awaiting_pin');
    assert.equal(view.json.pin_attempts_left, 3);
    assert.equal(await confirmRequests(a.txn_ref), 0);
    for (const s of [a, b]) await h.api('POST', `/v1/swaps/${s.swap_id}/cancel`);
  });

  test('refuses a malformed PIN with 400 naming wallet_pin, without echoing it or signalling', async () => {
    const s = await start(uniqueRef('gw-badpin'));
    for (const bad of ['   ', '9'.repeat(33), 1234, 'ab\u0007cd']) {
      const r = await pin(s.swap_id, s.pin_token, bad);
      assert.equal(r.status, 400, JSON.stringify(bad));
      assert.equal(r.json.error, 'invalid_request');
      assert.equal(r.json.field, 'wallet_pin');
      assert.match(r.json.message, /^wallet_pin: /);
      if (typeof bad === 'string' && bad.trim()) assert.ok(!r.text.includes(bad));
    }
    const missing = await h.call('POST', `/v1/swaps/${s.swap_id}/pin`, { body: {}, headers: { authorization: `Bearer ${s.pin_token}` } });
    assert.equal(missing.json.field, 'wallet_pin');
    const history = await historyMessages(h.stack, s.swap_id);
    assert.deepEqual([history.signals, history.updates.filter((u) => u !== 'initialized')], [[], []]);
    assert.equal(await confirmRequests(s.txn_ref), 0);
    await h.api('POST', `/v1/swaps/${s.swap_id}/cancel`);
  });

  test('refuses bad bodies with 400 naming the field, and starts no workflow', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ txn_ref: undefined }, 'txn_ref'],
      [{ amount: -5 }, 'amount'],
      [{ amount: '10' }, 'amount'],
      [{ amount: 1.234 }, 'amount'],
      [{ from_currency: 'usd' }, 'from_currency'],
      [{ to_currency: undefined }, 'to_currency'],
      [{ user_ref: '' }, 'user_ref'],
      [{ txn_ref: 'has spaces' }, 'txn_ref'],
    ];
    for (const [patch, field] of cases) {
      const txn = uniqueRef('gw-bad');
      const body = { ...swapBody(txn), ...patch };
      const r = await h.api('POST', '/v1/swaps', body);
      assert.equal(r.status, 400, `${JSON.stringify(patch)}: ${r.text}`);
      assert.equal(r.json.error, 'invalid_request');
      assert.equal(r.json.field, field, r.text);
      assert.match(r.json.message, new RegExp(`^${field}: `));
      const id = `swap-${typeof body.txn_ref === 'string' ? body.txn_ref : txn}`;
      assert.equal(await workflowExists(h.stack, id), false, id);
      assert.equal((await h.stack.control.ledger({ ref: String(body.txn_ref ?? txn), endpoint: 'swap.init' })).requests.length, 0);
    }
    const notJson = await h.call('POST', '/v1/swaps', { rawBody: '{"txn_ref": ', headers: { 'x-api-key': API_KEY, 'content-type': 'application/json' } });
    assert.equal(notJson.status, 400);
    assert.deepEqual({ error: notJson.json.error, field: notJson.json.field }, { error: 'invalid_request', field: 'body' });
  });

  test('requires the API key on backend routes, as x-api-key or Bearer', async () => {
    const txn = uniqueRef('gw-key');
    const missing = await h.call('POST', '/v1/swaps', { body: swapBody(txn) });
    assert.equal(missing.status, 401);
    assert.equal(missing.json.error, 'unauthorized');
    const wrong = await h.call('POST', '/v1/swaps', { body: swapBody(txn), headers: { 'x-api-key': `${API_KEY}x` } });
    assert.equal(wrong.status, 401);
    assert.equal(await workflowExists(h.stack, `swap-${txn}`), false);
    assert.equal((await h.stack.control.ledger({ ref: txn })).requests.length, 0);
    for (const path of ['/v1/swaps/swap-x', '/v1/payment-links/paylink-x', '/v1/categories']) {
      assert.equal((await h.call('GET', path)).status, 401, path);
    }
    const bearer = await h.call('POST', '/v1/swaps', { body: swapBody(txn), headers: { authorization: `Bearer ${API_KEY}` } });
    assert.equal(bearer.status, 201);
    assert.equal((await h.api('GET', '/v1/swaps/swap-does-not-exist')).status, 404);
    assert.equal((await h.api('GET', '/v1/swaps/paylink-not-a-swap')).status, 404);
    await h.api('POST', `/v1/swaps/swap-${txn}/cancel`);
  });

  test('rate-limits PIN submissions with the right pin_token per swap and client address with 429', async () => {
    const a = await start(uniqueRef('gw-rate-a'));
    const b = await start(uniqueRef('gw-rate-b'));
    const statuses: number[] = [];
    // Bodies the validator refuses still passed the token check, so they count; nothing reaches the swap.
    for (let i = 0; i < 6; i++) statuses.push((await pin(a.swap_id, a.pin_token, '   ')).status);
    assert.deepEqual(statuses, [400, 400, 400, 400, 400, 429]);
    const limited = await pin(a.swap_id, a.pin_token, PIN);
    assert.equal(limited.status, 429);
    assert.equal(limited.json.error, 'rate_limited');
    assert.ok(limited.headers['retry-after']);
    // Another swap is not affected, and nothing reached swap a.
    assert.equal((await pin(b.swap_id, b.pin_token, WRONG_PIN)).json.outcome, 'pin_rejected');
    assert.deepEqual((await historyMessages(h.stack, a.swap_id)).updates.filter((u) => u !== 'initialized'), []);
    assert.equal(await confirmRequests(a.txn_ref), 0);
    for (const s of [a, b]) await h.api('POST', `/v1/swaps/${s.swap_id}/cancel`);
  });

  test("gives the PIN page a summary of the swap with the pin_token only", async () => {
    const s = await start(uniqueRef('gw-summary'));
    const summary = await h.call('GET', `/v1/swaps/${s.swap_id}/summary`, { headers: { authorization: `Bearer ${s.pin_token}` } });
    assert.equal(summary.status, 200);
    assert.deepEqual(Object.keys(summary.json).sort(), [
      'amount',
      'converted_amount',
      'expires_at',
      'from_currency',
      'pin_attempts_left',
      'rate_used',
      'seconds_left',
      'state',
      'swap_id',
      'to_currency',
    ]);
    assert.ok(summary.json.seconds_left > 200 && summary.json.seconds_left <= 300);
    assert.equal((await h.call('GET', `/v1/swaps/${s.swap_id}/summary`)).status, 401);
    assert.equal((await h.call('GET', `/v1/swaps/${s.swap_id}/summary`, { headers: { 'x-api-key': API_KEY } })).status, 401);
    await h.api('POST', `/v1/swaps/${s.swap_id}/cancel`);
  });

  test('serves the PIN page under a strict Content-Security-Policy', async () => {
    const r = await h.call('GET', '/pin/swap-anything');
    assert.equal(r.status, 200);
    assert.match(String(r.headers['content-type']), /^text\/html/);
    const csp = String(r.headers['content-security-policy']);
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'sha256-[A-Za-z0-9+/=]+'/);
    assert.match(csp, /connect-src 'self'/);
    assert.match(csp, /form-action 'none'/);
    assert.equal(r.headers['referrer-policy'], 'no-referrer');
    assert.equal(r.headers['cache-control'], 'no-store');
    for (const id of ['amount', 'rate', 'converted', 'time-left', 'pin', 'submit', 'outcome']) assert.match(r.text, new RegExp(`id="${id}"`));
    assert.match(r.text, /<input id="pin" type="password" autocomplete="off" inputmode="numeric"/);
    assert.ok(!/https?:\/\//.test(r.text), 'no external assets');
  });

  test('serves an OpenAPI document of every route, with the request schemas', async () => {
    const r = await h.call('GET', '/openapi.json');
    assert.equal(r.status, 200);
    const doc = r.json;
    assert.match(doc.openapi, /^3\./);
    for (const path of [
      '/v1/swaps',
      '/v1/swaps/{swap_id}',
      '/v1/swaps/{swap_id}/pin',
      '/v1/swaps/{swap_id}/cancel',
      '/v1/payment-links',
      '/v1/payment-links/{link_id}',
      '/v1/notifications/{kind}/{flow_id}/{token}',
      '/v1/categories',
      '/pin/{swap_id}',
      '/healthz',
      '/readyz',
    ]) {
      assert.ok(doc.paths[path], path);
    }
    const swapReqRef = doc.paths['/v1/swaps'].post.requestBody.content['application/json'].schema;
    const swapReq = swapReqRef.$ref ? doc.components.schemas[swapReqRef.$ref.replace('#/components/schemas/', '')] : swapReqRef;
    assert.deepEqual([...swapReq.required].sort(), ['amount', 'from_currency', 'to_currency', 'txn_ref', 'user_ref']);
    assert.deepEqual(doc.paths['/v1/swaps/{swap_id}/pin'].post.security, [{ pinToken: [] }]);
    assert.ok(doc.components.securitySchemes.apiKey);
  });

  test('answers liveness, and readiness only while Temporal answers', async () => {
    assert.deepEqual((await h.call('GET', '/healthz')).json, { ok: true });
    const ready = await h.call('GET', '/readyz');
    assert.equal(ready.status, 200);
    // A gateway whose Temporal is unreachable (nothing listens on loopback port 9) is not ready.
    const client = new Client({ connection: Connection.lazy({ address: '127.0.0.1:9' }) });
    const mpf = new MpfClient({ client, taskQueue: 'none', keys: generateDevKeys(), publicUrl: 'http://127.0.0.1:9' });
    const down = await startGateway({ mpf, apiKey: API_KEY, port: 0 });
    try {
      const r = await gatewayCaller(down.url).call('GET', '/readyz');
      assert.equal(r.status, 503);
      assert.deepEqual(r.json, { ok: false, error: 'temporal_unavailable', message: 'the Temporal server (its frontend) cannot be reached' });
      assert.equal(r.headers['retry-after'], '5');
      assert.equal((await gatewayCaller(down.url).call('GET', '/healthz')).status, 200);
    } finally {
      await down.close();
      await client.connection.close();
    }
  });

  test("never logs PINs, pin_tokens, the API key or the notification URL's token", async () => {
    // One more confirmed swap, so that the simulator's notification reaches the gateway too.
    const txn = uniqueRef('gw-logs');
    const s = await start(txn);
    await pin(s.swap_id, s.pin_token, PIN);
    await h.stack.control.waitForEffect((e) => e.kind === 'notification.delivered' && e.ref === txn, 20_000);
    const initBody = (await h.stack.control.ledger({ ref: txn, endpoint: 'swap.init' })).requests[0].body as { notification_url: string };
    const notifyToken = initBody.notification_url.split('/').pop()!;
    assert.ok(notifyToken.length >= 43);
    secrets.add(notifyToken);
    const text = h.logs.join('');
    assert.ok(h.logs.length > 20, 'the gateway logged the requests');
    assert.match(text, new RegExp(`/v1/notifications/swap/${s.swap_id}/\\[redacted\\]`));
    for (const secret of secrets) {
      // Where it was found, the secret itself cut out: tells a leak from a number that happens to hold its digits.
      const at = text.indexOf(secret);
      const around = at < 0 ? '' : `${text.slice(Math.max(0, at - 80), at)}<secret>${text.slice(at + secret.length, at + secret.length + 80)}`;
      assert.ok(at < 0, `a secret reached the log: ${secret.slice(0, 4)}… in: ${around}`);
    }
  });
});
