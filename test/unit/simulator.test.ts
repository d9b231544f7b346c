/**
 * The provider simulator's endpoints over real HTTP: success shapes (parsed with the contract's
 * schemas), authentication rules, validation, duplicates, the auth_token rules, the ledger's
 * masking and the control API.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Ajv2020 from 'ajv/dist/2020';
import { request } from 'undici';
import {
  CategoriesData,
  HostedLinkData,
  PROVIDER_PATHS,
  SwapConfirmResult,
  SwapInitData,
  isSuccessStatus,
} from '../../src/contract/provider';
import { SimulatorControl, SimulatorControlError } from '../../src/simulator/control-client';
import { type RunningSimulator, startSimulator } from '../../src/simulator/index';
import { providerLinkBody, providerSwapBody, SIM_PIN, uniqueRef } from '../helpers/fixtures';

const SECRET = 'test-secret-key-5d1f';
const ACCESS = 'test-access-token-9c2e';
const MERCHANT = 'merchant-under-test';
const PIN = '918273';

interface Res {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

async function call(
  base: string,
  method: 'GET' | 'POST',
  path: string,
  opts: { headers?: Record<string, string>; body?: unknown } = {},
): Promise<Res> {
  const res = await request(`${base}${path}`, {
    method,
    headers: { ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}), ...(opts.headers ?? {}) },
    body: opts.body !== undefined ? JSON.stringify(opts.body) : undefined,
  });
  const text = await res.body.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.statusCode, headers: res.headers, text, json };
}

// The provider's own request bodies, each with a fresh reference.
const swapBody = (over: Record<string, unknown> = {}) => providerSwapBody(uniqueRef('swap'), over);
const linkBody = (over: Record<string, unknown> = {}) => providerLinkBody(uniqueRef('link'), over);

describe('provider simulator endpoints', () => {
  let sim: RunningSimulator;
  let control: SimulatorControl;
  const secret = { authorization: `Bearer ${SECRET}` };
  const linkAuth = { authorization: `Bearer ${ACCESS}`, 'x-merchant-ref': MERCHANT };

  const initSwap = async (over: Record<string, unknown> = {}) => {
    const res = await call(sim.baseUrl, 'POST', PROVIDER_PATHS.swapInit, { headers: secret, body: swapBody(over) });
    assert.equal(res.status, 200, res.text);
    return SwapInitData.parse(res.json.data);
  };
  const confirm = (user_ref: string, auth_token: string, wallet_pin: string) =>
    call(sim.baseUrl, 'POST', PROVIDER_PATHS.swapConfirm, { headers: secret, body: { user_ref, auth_token, wallet_pin } });

  before(async () => {
    sim = await startSimulator({
      secretKey: SECRET,
      accessToken: ACCESS,
      merchantRef: MERCHANT,
      pins: { 'user-1': PIN, 'user-2': '5555' },
      providerPinAttempts: 3,
      seed: 7,
    });
    control = new SimulatorControl(sim.baseUrl);
  });
  after(async () => {
    await sim.close();
  });

  describe('swap', () => {
    test('initializes a swap with a fresh payment_ref and auth_token, the table rate and the converted amount', async () => {
      const a = await initSwap({ amount: 10.5 });
      const b = await initSwap({ amount: 10.5 });
      assert.equal(a.rate_used, 1500.25);
      assert.equal(a.converted_amount, 15752.63);
      assert.equal(a.from_currency, 'USD');
      assert.equal(a.to_currency, 'NGN');
      assert.equal(a.expires_in_seconds, 300);
      assert.notEqual(a.payment_ref, b.payment_ref);
      assert.notEqual(a.auth_token, b.auth_token);
      assert.ok(Buffer.from(a.auth_token, 'base64url').length >= 16, 'auth_token carries at least 128 bits');
    });

    test('uses the inverse rate, rounded to 8 decimals, from NGN to USD', async () => {
      const s = await initSwap({ from_currency: 'NGN', to_currency: 'USD', amount: 150025 });
      assert.equal(s.rate_used, Math.round((1 / 1500.25) * 1e8) / 1e8);
      assert.equal(s.converted_amount, Math.round(150025 * s.rate_used * 100) / 100);
    });

    test('gives an unlisted currency pair a stable rate', async () => {
      const a = await initSwap({ from_currency: 'GHS', to_currency: 'KES', amount: 10 });
      const b = await initSwap({ from_currency: 'GHS', to_currency: 'KES', amount: 10 });
      assert.equal(a.rate_used, b.rate_used);
      assert.ok(a.rate_used > 0);
    });

    test('confirms a swap with the right PIN once and refuses the same token afterwards', async () => {
      const s = await initSwap();
      const first = await confirm('user-1', s.auth_token, PIN);
      assert.equal(first.status, 200, first.text);
      const parsed = SwapConfirmResult.parse(first.json);
      assert.ok(isSuccessStatus(parsed.status));
      assert.deepEqual(first.json, { status: 'success', message: 'Swap confirmed and initiated successfully' });
      const again = await confirm('user-1', s.auth_token, PIN);
      assert.equal(again.status, 400);
      assert.deepEqual(again.json, { status: 'error', message: 'auth_token is invalid, expired or already used' });
      const { effects } = await control.ledger({ ref: s.txn_ref });
      assert.equal(effects.filter((e) => e.kind === 'swap.confirmed').length, 1);
    });

    test('rejects a wrong PIN and then accepts the right one on the same token', async () => {
      const s = await initSwap();
      const wrong = await confirm('user-1', s.auth_token, '000000');
      assert.equal(wrong.status, 400);
      assert.deepEqual(wrong.json, { status: 'error', message: 'Incorrect wallet PIN' });
      const right = await confirm('user-1', s.auth_token, PIN);
      assert.equal(right.status, 200, right.text);
      const kinds = (await control.ledger({ ref: s.payment_ref })).effects.map((e) => e.kind);
      assert.deepEqual(
        kinds.filter((k) => k.startsWith('swap.')),
        ['swap.initialized', 'swap.pin_rejected', 'swap.confirmed'],
      );
    });

    test('checks the PIN of the user the swap was initialized for', async () => {
      const s = await initSwap({ user_ref: 'user-2' });
      assert.equal((await confirm('user-2', s.auth_token, PIN)).json.message, 'Incorrect wallet PIN');
      assert.equal((await confirm('user-2', s.auth_token, '5555')).status, 200);
    });

    test('accepts the default PIN for a user without a configured PIN', async () => {
      const s = await initSwap({ user_ref: 'user-without-pin' });
      assert.equal((await confirm('user-without-pin', s.auth_token, SIM_PIN)).status, 200);
    });

    test('burns the token after the provider PIN attempt limit', async () => {
      const s = await initSwap();
      for (let i = 0; i < 3; i++) assert.equal((await confirm('user-1', s.auth_token, 'bad')).json.message, 'Incorrect wallet PIN');
      const after3 = await confirm('user-1', s.auth_token, PIN);
      assert.equal(after3.status, 400);
      assert.equal(after3.json.message, 'auth_token is invalid, expired or already used');
      const rejected = (await control.ledger({ ref: s.txn_ref })).effects.filter((e) => e.kind === 'swap.pin_rejected');
      assert.equal(rejected.length, 3);
      assert.equal(rejected[2].details?.token_burnt, true);
    });

    test('refuses a token presented for another user_ref', async () => {
      const s = await initSwap({ user_ref: 'user-1' });
      const other = await confirm('user-2', s.auth_token, '5555');
      assert.equal(other.status, 400);
      assert.equal(other.json.message, 'auth_token is invalid, expired or already used');
      assert.equal((await confirm('user-1', s.auth_token, PIN)).status, 200, 'the token still works for its own user');
    });

    test('refuses a token the merchant made up', async () => {
      const res = await confirm('user-1', 'made-up-token', PIN);
      assert.equal(res.status, 400);
      assert.equal(res.json.message, 'auth_token is invalid, expired or already used');
    });

    test('refuses a second initialization with the same txn_ref with 409 and no second effect', async () => {
      const body = swapBody();
      const first = await call(sim.baseUrl, 'POST', PROVIDER_PATHS.swapInit, { headers: secret, body });
      assert.equal(first.status, 200);
      const second = await call(sim.baseUrl, 'POST', PROVIDER_PATHS.swapInit, { headers: secret, body: { ...body, amount: 999 } });
      assert.equal(second.status, 409);
      assert.deepEqual(second.json, { status: 'error', message: 'Duplicate transaction reference' });
      const { effects, requests } = await control.ledger({ ref: body.txn_ref });
      assert.equal(effects.filter((e) => e.kind === 'swap.initialized').length, 1);
      assert.deepEqual(requests.map((r) => r.status), [200, 409]);
    });

    test('names the missing or invalid field in a 400', async () => {
      const { amount: _a, ...noAmount } = swapBody();
      const missing = await call(sim.baseUrl, 'POST', PROVIDER_PATHS.swapInit, { headers: secret, body: noAmount });
      assert.equal(missing.status, 400);
      assert.equal(missing.json.status, 'error');
      assert.match(missing.json.message, /^amount: /);
      const badUrl = await call(sim.baseUrl, 'POST', PROVIDER_PATHS.swapInit, { headers: secret, body: swapBody({ notification_url: 'not a url' }) });
      assert.match(badUrl.json.message, /notification_url/);
      const noPin = await call(sim.baseUrl, 'POST', PROVIDER_PATHS.swapConfirm, { headers: secret, body: { user_ref: 'user-1', auth_token: 'x' } });
      assert.equal(noPin.status, 400);
      assert.match(noPin.json.message, /wallet_pin/);
    });

    test('answers a body that is not JSON with a 400 error envelope', async () => {
      const res = await request(`${sim.baseUrl}${PROVIDER_PATHS.swapInit}`, {
        method: 'POST',
        headers: { ...secret, 'content-type': 'application/json' },
        body: '{"user_ref": ',
      });
      assert.equal(res.statusCode, 400);
      const body = (await res.body.json()) as { status: string };
      assert.equal(body.status, 'error');
    });
  });

  describe('swap expiry', () => {
    let short: RunningSimulator;
    before(async () => {
      short = await startSimulator({ swapExpiresInSeconds: 1 });
    });
    after(async () => {
      await short.close();
    });

    test('refuses a token once expires_in_seconds has passed', async () => {
      const init = await call(short.baseUrl, 'POST', PROVIDER_PATHS.swapInit, {
        headers: { authorization: 'Bearer sim-secret-key' },
        body: swapBody(),
      });
      const s = SwapInitData.parse(init.json.data);
      assert.equal(s.expires_in_seconds, 1);
      await new Promise((r) => setTimeout(r, 1500));
      const res = await call(short.baseUrl, 'POST', PROVIDER_PATHS.swapConfirm, {
        headers: { authorization: 'Bearer sim-secret-key' },
        body: { user_ref: 'user-1', auth_token: s.auth_token, wallet_pin: SIM_PIN },
      });
      assert.equal(res.status, 400);
      assert.equal(res.json.message, 'auth_token is invalid, expired or already used');
    });

    test('applies a changed expiry to swaps initialized after the change', async () => {
      await new SimulatorControl(short.baseUrl).setConfig({ swapExpiresInSeconds: 3 });
      const init = await call(short.baseUrl, 'POST', PROVIDER_PATHS.swapInit, {
        headers: { authorization: 'Bearer sim-secret-key' },
        body: swapBody(),
      });
      assert.equal(init.json.data.expires_in_seconds, 3);
    });
  });

  describe('hosted link', () => {
    test('creates a link whose pay_link is on the checkout host and carries the reference, currency, amount and merchant ref', async () => {
      const body = linkBody();
      const res = await call(sim.baseUrl, 'POST', PROVIDER_PATHS.hostedLink, { headers: linkAuth, body });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.json.status, 'success');
      const data = HostedLinkData.parse(res.json.data);
      assert.equal(data.txn_merchant_ref, body.txn_merchant_ref);
      assert.equal(data.amount, 25000);
      assert.equal(data.currency, 'NGN');
      assert.equal(data.redirect_url, body.redirect_url);
      assert.equal(data.success_message, 'Thanks!');
      assert.equal(data.pay_data, null);
      const url = new URL(data.pay_link);
      assert.equal(url.origin, sim.checkoutUrl);
      assert.equal(url.pathname, '/pay');
      assert.equal(url.searchParams.get('payment_ref'), data.payment_ref);
      assert.equal(url.searchParams.get('currency'), 'NGN');
      assert.equal(url.searchParams.get('amount'), '25000');
      assert.equal(url.searchParams.get('txn_merchant_ref'), body.txn_merchant_ref);
      const other = await call(sim.baseUrl, 'POST', PROVIDER_PATHS.hostedLink, { headers: linkAuth, body: linkBody() });
      assert.notEqual(other.json.data.payment_ref, data.payment_ref);
    });

    test('refuses a channel, method or currency other than bank transfer, HOSTED_PAY_LINK and NGN, naming the field', async () => {
      for (const [field, value] of [
        ['payment_channel', 'CARD'],
        ['payment_method', 'API'],
        ['currency', 'USD'],
      ] as const) {
        const res = await call(sim.baseUrl, 'POST', PROVIDER_PATHS.hostedLink, { headers: linkAuth, body: linkBody({ [field]: value }) });
        assert.equal(res.status, 400, field);
        assert.match(res.json.message, new RegExp(`^${field}: `));
      }
      const { payment_channel: _c, ...noChannel } = linkBody();
      const missing = await call(sim.baseUrl, 'POST', PROVIDER_PATHS.hostedLink, { headers: linkAuth, body: noChannel });
      assert.equal(missing.status, 400);
      assert.match(missing.json.message, /payment_channel/);
      const badEmail = await call(sim.baseUrl, 'POST', PROVIDER_PATHS.hostedLink, { headers: linkAuth, body: linkBody({ email: 'nope' }) });
      assert.match(badEmail.json.message, /^email: /);
    });

    test('refuses a reused txn_merchant_ref with 409 and creates one link only', async () => {
      const body = linkBody();
      assert.equal((await call(sim.baseUrl, 'POST', PROVIDER_PATHS.hostedLink, { headers: linkAuth, body })).status, 200);
      const dup = await call(sim.baseUrl, 'POST', PROVIDER_PATHS.hostedLink, { headers: linkAuth, body });
      assert.equal(dup.status, 409);
      assert.deepEqual(dup.json, { status: 'error', message: 'Duplicate transaction reference' });
      const { effects } = await control.ledger({ ref: body.txn_merchant_ref });
      assert.equal(effects.filter((e) => e.kind === 'link.created').length, 1);
    });
  });

  describe('categories', () => {
    test('lists the 77 categories at data.data with string codes', async () => {
      const res = await call(sim.baseUrl, 'GET', PROVIDER_PATHS.categories, { headers: { 'x-merchant-ref': MERCHANT } });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.json.status, 'success');
      const list = CategoriesData.parse(res.json.data).data;
      assert.equal(list.length, 77);
      assert.deepEqual(list[0], { code: '1.0', name: 'Mobile Top Up' });
      assert.ok(list.some((c) => c.code === '13.1') && !list.some((c) => c.code === '13.10'));
    });
  });

  describe('authentication', () => {
    const cases: { name: string; method: 'GET' | 'POST'; path: string; body?: () => unknown; good: Record<string, string> }[] = [
      { name: 'swap initialization', method: 'POST', path: PROVIDER_PATHS.swapInit, body: () => swapBody(), good: { authorization: `Bearer ${SECRET}` } },
      {
        name: 'swap confirmation',
        method: 'POST',
        path: PROVIDER_PATHS.swapConfirm,
        body: () => ({ user_ref: 'user-1', auth_token: 'x', wallet_pin: PIN }),
        good: { authorization: `Bearer ${SECRET}` },
      },
      { name: 'link creation', method: 'POST', path: PROVIDER_PATHS.hostedLink, body: () => linkBody(), good: linkAuth },
    ];
    for (const c of cases) {
      test(`refuses ${c.name} without a Bearer token or with a wrong one (401)`, async () => {
        const { authorization: _drop, ...rest } = c.good;
        const none = await call(sim.baseUrl, c.method, c.path, { headers: rest, body: c.body?.() });
        assert.equal(none.status, 401);
        assert.deepEqual(none.json, { status: 'error', message: 'Unauthorized' });
        const wrongKey = c.good.authorization.includes(SECRET) ? ACCESS : SECRET;
        const wrong = await call(sim.baseUrl, c.method, c.path, { headers: { ...rest, authorization: `Bearer ${wrongKey}` }, body: c.body?.() });
        assert.equal(wrong.status, 401);
        assert.deepEqual(wrong.json, { status: 'error', message: 'Unauthorized' });
        const basic = await call(sim.baseUrl, c.method, c.path, { headers: { ...rest, authorization: `Basic ${SECRET}` }, body: c.body?.() });
        assert.equal(basic.status, 401);
      });
    }

    test('refuses link creation without x-merchant-ref (400) and with another merchant ref (403)', async () => {
      const missing = await call(sim.baseUrl, 'POST', PROVIDER_PATHS.hostedLink, {
        headers: { authorization: `Bearer ${ACCESS}` },
        body: linkBody(),
      });
      assert.equal(missing.status, 400);
      assert.deepEqual(missing.json, { status: 'error', message: 'x-merchant-ref header is required' });
      const wrong = await call(sim.baseUrl, 'POST', PROVIDER_PATHS.hostedLink, {
        headers: { authorization: `Bearer ${ACCESS}`, 'x-merchant-ref': 'someone-else' },
        body: linkBody(),
      });
      assert.equal(wrong.status, 403);
      assert.equal(wrong.json.status, 'error');
    });

    test('refuses the category list without x-merchant-ref (400) and with another merchant ref (403)', async () => {
      const missing = await call(sim.baseUrl, 'GET', PROVIDER_PATHS.categories);
      assert.equal(missing.status, 400);
      assert.deepEqual(missing.json, { status: 'error', message: 'x-merchant-ref header is required' });
      const wrong = await call(sim.baseUrl, 'GET', PROVIDER_PATHS.categories, { headers: { 'x-merchant-ref': 'someone-else' } });
      assert.equal(wrong.status, 403);
    });

    test('requires the Bearer access token for categories only when configured to', async () => {
      const plain = await call(sim.baseUrl, 'GET', PROVIDER_PATHS.categories, { headers: { 'x-merchant-ref': MERCHANT } });
      assert.equal(plain.status, 200);
      await control.setConfig({ categoriesRequireBearer: true });
      try {
        const none = await call(sim.baseUrl, 'GET', PROVIDER_PATHS.categories, { headers: { 'x-merchant-ref': MERCHANT } });
        assert.equal(none.status, 401);
        const secretKey = await call(sim.baseUrl, 'GET', PROVIDER_PATHS.categories, { headers: { 'x-merchant-ref': MERCHANT, authorization: `Bearer ${SECRET}` } });
        assert.equal(secretKey.status, 401);
        const ok = await call(sim.baseUrl, 'GET', PROVIDER_PATHS.categories, { headers: linkAuth });
        assert.equal(ok.status, 200);
      } finally {
        await control.setConfig({ categoriesRequireBearer: false });
      }
    });
  });

  describe('ledger and control API', () => {
    test('keeps the PIN, the auth_token and the Bearer values out of the ledger', async () => {
      const s = await initSwap();
      await confirm('user-1', s.auth_token, 'wrong-pin-4711');
      await confirm('user-1', s.auth_token, PIN);
      await call(sim.baseUrl, 'POST', PROVIDER_PATHS.hostedLink, { headers: linkAuth, body: linkBody() });
      const ledger = await control.ledger();
      const text = JSON.stringify(ledger);
      for (const secretValue of [PIN, 'wrong-pin-4711', s.auth_token, SECRET, ACCESS]) {
        assert.ok(!text.includes(secretValue), `ledger must not contain ${secretValue.slice(0, 3)}…`);
      }
      const confirms = ledger.requests.filter((r) => r.endpoint === 'swap.confirm' && r.ref === s.txn_ref);
      assert.equal(confirms.length, 2);
      assert.equal(confirms[0].headers.authorization, 'Bearer ***');
      assert.deepEqual(confirms[0].body, { user_ref: 'user-1', auth_token: '***', wallet_pin: '***' });
    });

    test('filters the ledger by endpoint and by ref or payment_ref', async () => {
      const s = await initSwap();
      await confirm('user-1', s.auth_token, PIN);
      const byRef = await control.ledger({ ref: s.txn_ref });
      assert.deepEqual(byRef.requests.map((r) => r.endpoint), ['swap.init', 'swap.confirm']);
      assert.ok(byRef.effects.every((e) => e.ref === s.txn_ref));
      const byPayment = await control.ledger({ ref: s.payment_ref });
      assert.deepEqual(byPayment.effects.map((e) => e.seq), byRef.effects.map((e) => e.seq));
      const onlyConfirm = await control.ledger({ endpoint: 'swap.confirm', ref: s.txn_ref });
      assert.deepEqual(onlyConfirm.requests.map((r) => r.status), [200]);
    });

    test('refuses invalid faults and configuration with a 400 naming the field', async () => {
      await assert.rejects(
        control.setFaults({ rules: [{ endpoint: 'swap.init', kind: 'latency', latencyMs: [500, 100] }] }),
        (e: unknown) => e instanceof SimulatorControlError && e.statusCode === 400 && /latencyMs/.test(e.message),
      );
      await assert.rejects(
        control.setConfig({ swapExpiresInSeconds: -1 }),
        (e: unknown) => e instanceof SimulatorControlError && e.statusCode === 400 && /swapExpiresInSeconds/.test(e.message),
      );
    });

    test('answers 404 for completing an unknown link and 409 for completing a paid one', async () => {
      await assert.rejects(control.completeLink('no-such-ref'), (e: unknown) => e instanceof SimulatorControlError && e.statusCode === 404);
      const res = await call(sim.baseUrl, 'POST', PROVIDER_PATHS.hostedLink, { headers: linkAuth, body: linkBody() });
      const ref = res.json.data.payment_ref as string;
      const outcome = await control.completeLink(ref);
      assert.equal(outcome.state, 'paid');
      assert.match(outcome.redirect_to, /status=successful/);
      await assert.rejects(control.failLink(ref), (e: unknown) => e instanceof SimulatorControlError && e.statusCode === 409);
    });

    test('serves an OpenAPI document with every provider and control path and valid JSON schemas', async () => {
      const res = await call(sim.baseUrl, 'GET', '/_sim/openapi.json');
      assert.equal(res.status, 200);
      const doc = res.json;
      assert.match(doc.openapi, /^3\./);
      const paths = Object.keys(doc.paths);
      for (const p of [
        ...Object.values(PROVIDER_PATHS),
        '/_sim/ledger',
        '/_sim/reset',
        '/_sim/faults',
        '/_sim/config',
        '/_sim/links/{payment_ref}/complete',
        '/_sim/links/{payment_ref}/fail',
        '/_sim/notify/{payment_ref}',
        '/_sim/openapi.json',
      ]) {
        assert.ok(paths.includes(p), `missing ${p}`);
        for (const op of Object.values(doc.paths[p]) as { responses?: object }[]) assert.ok(op.responses, `${p} has responses`);
      }
      const ajv = new Ajv2020({ strict: false, validateFormats: false });
      for (const name of ['SwapInitRequest', 'SwapConfirmRequest', 'HostedLinkRequest', 'FaultSet']) {
        ajv.compile(doc.components.schemas[name]);
      }
      const validSwap = ajv.compile(doc.components.schemas.SwapInitRequest);
      assert.equal(validSwap(swapBody()), true);
      assert.equal(validSwap({ ...swapBody(), amount: 'ten' }), false);
    });

    test('reset clears records, ledger and faults but keeps the configuration', async () => {
      const local = await startSimulator({ pins: { 'user-1': PIN } });
      try {
        const c = new SimulatorControl(local.baseUrl);
        const init = await call(local.baseUrl, 'POST', PROVIDER_PATHS.swapInit, { headers: { authorization: 'Bearer sim-secret-key' }, body: swapBody() });
        const token = init.json.data.auth_token as string;
        await c.setFaults({ rules: [{ endpoint: 'categories', kind: 'status5xx' }] });
        await c.reset();
        assert.deepEqual(await c.ledger(), { requests: [], effects: [] });
        const cat = await call(local.baseUrl, 'GET', PROVIDER_PATHS.categories, { headers: { 'x-merchant-ref': 'sim-merchant' } });
        assert.equal(cat.status, 200, 'faults were cleared');
        const gone = await call(local.baseUrl, 'POST', PROVIDER_PATHS.swapConfirm, {
          headers: { authorization: 'Bearer sim-secret-key' },
          body: { user_ref: 'user-1', auth_token: token, wallet_pin: PIN },
        });
        assert.equal(gone.json.message, 'auth_token is invalid, expired or already used', 'records were cleared');
        const again = await call(local.baseUrl, 'POST', PROVIDER_PATHS.swapInit, { headers: { authorization: 'Bearer sim-secret-key' }, body: swapBody() });
        const ok = await call(local.baseUrl, 'POST', PROVIDER_PATHS.swapConfirm, {
          headers: { authorization: 'Bearer sim-secret-key' },
          body: { user_ref: 'user-1', auth_token: again.json.data.auth_token, wallet_pin: PIN },
        });
        assert.equal(ok.status, 200, 'the configured PIN survived the reset');
      } finally {
        await local.close();
      }
    });
  });
});

describe('standalone simulator process', () => {
  test('prints its listening line, serves the provider API and stops on SIGTERM', async () => {
    const root = resolve(__dirname, '..', '..');
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/simulator/main.ts', '--port', '0'], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      let out = '';
      child.stdout.setEncoding('utf8');
      await new Promise<void>((ok, fail) => {
        const timer = setTimeout(() => fail(new Error(`no listening line; got: ${out}`)), 20_000);
        child.stdout.on('data', (d: string) => {
          out += d;
          if (out.split('\n').length >= 3) {
            clearTimeout(timer);
            ok();
          }
        });
        child.once('exit', (code) => fail(new Error(`exited early (${code}): ${out}`)));
      });
      const [first, second] = out.split('\n');
      assert.match(first, /^listening on http:\/\/127\.0\.0\.1:\d+$/);
      assert.match(second, /^checkout on http:\/\/127\.0\.0\.1:\d+$/);
      const base = first.replace('listening on ', '');
      const res = await call(base, 'GET', PROVIDER_PATHS.categories, { headers: { 'x-merchant-ref': 'sim-merchant' } });
      assert.equal(res.status, 200);
      child.kill('SIGTERM');
      const [code] = await once(child, 'exit');
      assert.equal(code, 0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});
