/**
 * The provider client against the real provider simulator over loopback sockets: every endpoint
 * end to end, the credentials each one needs, and every ProviderError class produced by a real
 * simulator fault (src/simulator faults) — checked against the simulator's ledger, which tells
 * whether the provider acted.
 */
import { describe, test, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { startSimulator, type RunningSimulator } from '../../src/simulator';
import { SimulatorControl } from '../../src/simulator/control-client';
import {
  classifyConfirmRejection,
  ProviderAmbiguousError,
  ProviderAuthError,
  type ProviderClient,
  ProviderRateLimitedError,
  ProviderRejectedError,
  ProviderTransientError,
} from '../../src/provider';
import type { HostedLinkRequest, SwapInitRequest } from '../../src/contract/provider';
import type { ProviderCall } from '../../src/provider/client';
import { providerLinkBody, providerSwapBody, SIM_PIN, uniqueRef } from '../helpers/fixtures';
import { failsWith, providerClients, SIM_ACCESS, SIM_CREDENTIALS, SIM_MERCHANT, SIM_SECRET } from '../helpers/provider';

const swapReq = (txn_ref = uniqueRef('swap')): SwapInitRequest => providerSwapBody(txn_ref);
const linkReq = (txn_merchant_ref = uniqueRef('link')): HostedLinkRequest => providerLinkBody(txn_merchant_ref);

function assertNoSecrets(err: unknown, extra: string[] = []): void {
  const text = `${(err as Error).message}\n${JSON.stringify(err)}`;
  for (const s of [SIM_SECRET, SIM_ACCESS, SIM_PIN, ...extra]) {
    assert.ok(!text.includes(s), `error text must not contain a secret: ${text}`);
  }
}

/** A loopback port with nothing listening on it. */
async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as AddressInfo;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

describe('provider client against the provider simulator', () => {
  let sim: RunningSimulator;
  let control: SimulatorControl;
  let client: ProviderClient;
  const { clientFor, withClient } = providerClients(() => ({ baseUrl: sim.baseUrl, ...SIM_CREDENTIALS }));

  before(async () => {
    sim = await startSimulator({ seed: 7 });
    control = new SimulatorControl(sim.baseUrl);
    client = clientFor();
  });
  after(async () => {
    await client.close();
    await sim.close();
  });
  beforeEach(async () => {
    await control.reset();
    await control.clearFaults();
  });

  describe('every endpoint end to end', () => {
    test('initializes and confirms a swap with the secret key and the user PIN', async () => {
      const req = swapReq();
      const init = await client.initSwap(req);
      assert.equal(init.txn_ref, req.txn_ref);
      assert.ok(init.auth_token.length > 0);
      assert.ok(init.expires_in_seconds > 0);
      const done = await client.confirmSwap({ user_ref: req.user_ref, auth_token: init.auth_token, wallet_pin: SIM_PIN });
      assert.equal(done.status, 'success');
      assert.match(done.message, /confirmed/i);
      const { effects, requests } = await control.ledger({ ref: req.txn_ref });
      assert.deepEqual(
        effects.map((e) => e.kind).filter((k) => k.startsWith('swap.')),
        ['swap.initialized', 'swap.confirmed'],
      );
      for (const r of requests) {
        assert.equal(r.headers.authorization, 'Bearer ***');
        assert.match(r.headers['content-type'] ?? '', /^application\/json/);
      }
    });

    test('creates a hosted link sending the access token and x-merchant-ref', async () => {
      const req = linkReq();
      const link = await client.createHostedLink(req);
      assert.equal(link.txn_merchant_ref, req.txn_merchant_ref);
      assert.equal(link.currency, 'NGN');
      assert.ok(new URL(link.pay_link).searchParams.toString().includes(link.payment_ref));
      const { requests, effects } = await control.ledger({ endpoint: 'link.create' });
      assert.equal(requests.length, 1);
      assert.equal(requests[0].headers['x-merchant-ref'], SIM_MERCHANT);
      assert.equal(requests[0].headers.authorization, 'Bearer ***');
      assert.equal(effects.filter((e) => e.kind === 'link.created').length, 1);
    });

    test('lists all categories with string codes, sending no Authorization header', async () => {
      const list = await client.listCategories();
      assert.equal(list.length, 77);
      const codes = list.map((c) => c.code);
      assert.ok(codes.includes('13.1') && codes.includes('1.0') && codes.includes('13.55'));
      assert.ok(list.every((c) => typeof c.code === 'string'));
      const { requests } = await control.ledger({ endpoint: 'categories' });
      assert.equal(requests[0].headers['x-merchant-ref'], SIM_MERCHANT);
      assert.equal(requests[0].headers.authorization, undefined);
    });

    test('gets through a simulator that requires a Bearer on categories only when categoriesBearer is set', async () => {
      await control.setConfig({ categoriesRequireBearer: true });
      try {
        await failsWith(client.listCategories(), ProviderAuthError);
        await withClient({ categoriesBearer: true }, async (withBearer) => {
          assert.equal((await withBearer.listCategories()).length, 77);
        });
      } finally {
        await control.setConfig({ categoriesRequireBearer: false });
      }
    });
  });

  describe('definitive refusals', () => {
    test('a wrong PIN is a rejection classified as wrong_pin, and the token still works afterwards', async () => {
      const req = swapReq();
      const init = await client.initSwap(req);
      const err = await failsWith(
        client.confirmSwap({ user_ref: req.user_ref, auth_token: init.auth_token, wallet_pin: '0000' }),
        ProviderRejectedError,
      );
      assert.equal(err.httpStatus, 400);
      assert.equal(classifyConfirmRejection(err), 'wrong_pin');
      assertNoSecrets(err, [init.auth_token, '0000']);
      const ok = await client.confirmSwap({ user_ref: req.user_ref, auth_token: init.auth_token, wallet_pin: SIM_PIN });
      assert.equal(ok.status, 'success');
    });

    test('a used auth_token is a rejection classified as token_invalid', async () => {
      const req = swapReq();
      const init = await client.initSwap(req);
      await client.confirmSwap({ user_ref: req.user_ref, auth_token: init.auth_token, wallet_pin: SIM_PIN });
      const err = await failsWith(
        client.confirmSwap({ user_ref: req.user_ref, auth_token: init.auth_token, wallet_pin: SIM_PIN }),
        ProviderRejectedError,
      );
      assert.equal(classifyConfirmRejection(err), 'token_invalid');
      assertNoSecrets(err, [init.auth_token]);
    });

    test('a reused txn_ref is a 409 rejection with no second swap', async () => {
      const req = swapReq();
      await client.initSwap(req);
      const err = await failsWith(client.initSwap(req), ProviderRejectedError);
      assert.equal(err.httpStatus, 409);
      const { effects } = await control.ledger({ ref: req.txn_ref });
      assert.equal(effects.filter((e) => e.kind === 'swap.initialized').length, 1);
    });

    test('a 200 whose status is not a success value is a rejection', async () => {
      await control.setFaults({
        rules: [{ endpoint: 'link.create', kind: 'garbage', body: '{"status":"failed","message":"Channel unavailable"}', times: 1 }],
      });
      const err = await failsWith(client.createHostedLink(linkReq()), ProviderRejectedError);
      assert.equal(err.httpStatus, 200);
      assert.equal(err.providerMessage, 'Channel unavailable');
    });

    test('a wrong secret key is an auth failure', async () => {
      await withClient({ secretKey: 'not-the-key-123' }, async (wrong) => {
        const err = await failsWith(wrong.initSwap(swapReq()), ProviderAuthError);
        assert.equal(err.httpStatus, 401);
        assertNoSecrets(err, ['not-the-key-123']);
      });
    });

    test('a wrong access token and an unknown merchant are auth failures', async () => {
      await withClient({ accessToken: 'bad-access-token-456' }, async (wrongToken) => {
        const e1 = await failsWith(wrongToken.createHostedLink(linkReq()), ProviderAuthError);
        assert.equal(e1.httpStatus, 401);
        assertNoSecrets(e1, ['bad-access-token-456']);
      });
      await withClient({ merchantRef: 'someone-else' }, async (wrongMerchant) => {
        const e2 = await failsWith(wrongMerchant.listCategories(), ProviderAuthError);
        assert.equal(e2.httpStatus, 403);
      });
    });
  });

  describe('retryable failures', () => {
    test('a 429 is rate-limited with the simulator Retry-After in milliseconds, and nothing was applied', async () => {
      await control.setFaults({ rules: [{ endpoint: 'swap.init', kind: 'rate_limit', retryAfterSeconds: 2, times: 1 }] });
      const req = swapReq();
      const err = await failsWith(client.initSwap(req), ProviderRateLimitedError);
      assert.equal(err.httpStatus, 429);
      assert.equal(err.retryAfterMs, 2000);
      assert.equal((await control.ledger({ ref: req.txn_ref })).effects.filter((e) => e.kind.startsWith('swap.')).length, 0);
      // The rule fired once: the retry goes through.
      assert.equal((await client.initSwap(req)).txn_ref, req.txn_ref);
    });

    test('a 5xx on the category read is transient', async () => {
      await control.setFaults({ rules: [{ endpoint: 'categories', kind: 'status5xx', status: 503, times: 1 }] });
      const err = await failsWith(client.listCategories(), ProviderTransientError);
      assert.equal(err.httpStatus, 503);
      assert.equal((await client.listCategories()).length, 77);
    });

    test('a reset connection on the category read is transient', async () => {
      await control.setFaults({ rules: [{ endpoint: 'categories', kind: 'reset', times: 1 }] });
      await failsWith(client.listCategories(), ProviderTransientError);
    });

    test('garbage on the category read is transient', async () => {
      await control.setFaults({ rules: [{ endpoint: 'categories', kind: 'garbage', times: 1 }] });
      await failsWith(client.listCategories(), ProviderTransientError);
    });

    test('a closed port is transient even for a swap confirmation: nothing was sent', async () => {
      const port = await closedPort();
      await withClient({ baseUrl: `http://127.0.0.1:${port}` }, async (dead) => {
        const err = await failsWith(
          dead.confirmSwap({ user_ref: 'user-7', auth_token: 'tok-abc', wallet_pin: SIM_PIN }),
          ProviderTransientError,
        );
        assert.equal(err.networkCode, 'ECONNREFUSED');
        assertNoSecrets(err, ['tok-abc']);
      });
    });
  });

  describe('ambiguous outcomes of POSTs', () => {
    test('a link created and then the connection dropped is ambiguous, and the ledger shows it was created', async () => {
      await control.setFaults({ rules: [{ endpoint: 'link.create', kind: 'apply_then_fail', times: 1 }] });
      const req = linkReq();
      const err = await failsWith(client.createHostedLink(req), ProviderAmbiguousError);
      assert.ok(err.networkCode);
      const { effects } = await control.ledger({ ref: req.txn_merchant_ref });
      assert.deepEqual(
        effects.map((e) => e.kind).filter((k) => k.startsWith('link.')),
        ['link.created'],
      );
    });

    test('a confirmation that hangs past the headers timeout is ambiguous', async () => {
      const req = swapReq();
      const init = await client.initSwap(req);
      await control.setFaults({ rules: [{ endpoint: 'swap.confirm', kind: 'hang', maxMs: 10_000, times: 1 }] });
      await withClient({ timeouts: { headersMs: 300 } }, async (impatient) => {
        const err = await failsWith(
          impatient.confirmSwap({ user_ref: req.user_ref, auth_token: init.auth_token, wallet_pin: SIM_PIN }),
          ProviderAmbiguousError,
        );
        assert.equal(err.networkCode, 'UND_ERR_HEADERS_TIMEOUT');
        assertNoSecrets(err, [init.auth_token]);
      });
    });

    test('an observer that asked for a slow notice hears of a hanging call before it times out, and only it does', async () => {
      const req = swapReq();
      const init = await client.initSwap(req);
      await control.setFaults({ rules: [{ endpoint: 'swap.confirm', kind: 'hang', maxMs: 10_000, times: 1 }] });
      await withClient({ timeouts: { headersMs: 800 } }, async (impatient) => {
        const slowSeen: ProviderCall[] = [];
        const plain: ProviderCall[] = [];
        impatient.observe((c) => slowSeen.push(c), { slowMs: 200 });
        impatient.observe((c) => plain.push(c));
        const pending = impatient.confirmSwap({ user_ref: req.user_ref, auth_token: init.auth_token, wallet_pin: SIM_PIN });
        await new Promise((r) => setTimeout(r, 500));
        assert.deepEqual(slowSeen.map((c) => [c.endpoint, c.phase, c.status]), [['swapConfirm', 'slow', undefined]], 'told while the call is still out');
        assert.equal(plain.length, 0, 'an observer without slowMs hears only the end');
        await failsWith(pending, ProviderAmbiguousError);
        assert.deepEqual(slowSeen.map((c) => [c.phase, c.errorKind, c.slow]), [['slow', undefined, undefined], [undefined, 'ambiguous', true]]);
        assert.deepEqual(plain.map((c) => [c.errorKind, c.slow]), [['ambiguous', true]]);
        // A quick call gets no slow notice.
        const quick = swapReq();
        await impatient.initSwap(quick);
        assert.equal(slowSeen.length, 3);
        assert.equal(slowSeen[2]!.phase, undefined);
      });
    });

    test('a 5xx on a swap initialization is ambiguous', async () => {
      await control.setFaults({ rules: [{ endpoint: 'swap.init', kind: 'status5xx', status: 500, commit: true, times: 1 }] });
      const req = swapReq();
      const err = await failsWith(client.initSwap(req), ProviderAmbiguousError);
      assert.equal(err.httpStatus, 500);
      // This time the simulator did apply it: exactly why a 5xx on a POST cannot be retried blindly.
      const { effects } = await control.ledger({ ref: req.txn_ref });
      assert.deepEqual(
        effects.map((e) => e.kind).filter((k) => k.startsWith('swap.')),
        ['swap.initialized'],
      );
    });

    test('an HTML gateway error on a link creation is ambiguous and quotes no HTML', async () => {
      await control.setFaults({ rules: [{ endpoint: 'link.create', kind: 'html_error', status: 502, times: 1 }] });
      const err = await failsWith(client.createHostedLink(linkReq()), ProviderAmbiguousError);
      assert.equal(err.httpStatus, 502);
      assert.ok(!/<html|nginx/i.test(err.message), err.message);
    });

    test('a garbled 200 on a swap initialization is ambiguous', async () => {
      await control.setFaults({ rules: [{ endpoint: 'swap.init', kind: 'garbage', commit: true, times: 1 }] });
      const err = await failsWith(client.initSwap(swapReq()), ProviderAmbiguousError);
      assert.equal(err.httpStatus, 200);
    });

    test('a reset after the confirmation was written is ambiguous', async () => {
      const req = swapReq();
      const init = await client.initSwap(req);
      await control.setFaults({ rules: [{ endpoint: 'swap.confirm', kind: 'reset', times: 1 }] });
      const err = await failsWith(
        client.confirmSwap({ user_ref: req.user_ref, auth_token: init.auth_token, wallet_pin: SIM_PIN }),
        ProviderAmbiguousError,
      );
      assertNoSecrets(err, [init.auth_token]);
    });
  });
});
