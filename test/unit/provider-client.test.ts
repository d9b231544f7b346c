/**
 * The provider client against a small scripted HTTP server on loopback (real sockets): what it
 * sends (paths, headers, bodies), how it reads answers, and which ProviderError each kind of
 * answer or network failure becomes. Faults produced by the real simulator are in
 * provider-client-faults.test.ts.
 */
import { describe, test, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent, Dispatcher } from 'undici';
import {
  classifyConfirmRejection,
  ProviderAmbiguousError,
  ProviderAuthError,
  ProviderClient,
  providerClientFromEnv,
  ProviderError,
  ProviderRateLimitedError,
  ProviderRejectedError,
  ProviderRequestInvalidError,
  ProviderTransientError,
  parseRetryAfterMs,
  sanitizeExcerpt,
} from '../../src/provider';
import { ASSUMPTIONS, classifyConfirmRejectionMessage, type HostedLinkRequest, type SwapInitRequest } from '../../src/contract/provider';
import { ConfigError, loadEnv } from '../../src/config/env';
import { failsWith, providerClients } from '../helpers/provider';

// ------------------------------------------------------------------------------------------------
// A scripted server: records what it received, answers with the current handler
// ------------------------------------------------------------------------------------------------

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
  remotePort: number;
}
type Handler = (req: Seen, res: ServerResponse) => void | Promise<void>;

interface Scripted {
  url: string;
  seen: Seen[];
  handle(fn: Handler): void;
  close(): Promise<void>;
}

async function startScripted(): Promise<Scripted> {
  let handler: Handler = (_req, res) => json(res, 404, { status: 'error', message: 'no handler' });
  const seen: Seen[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const s: Seen = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        remotePort: req.socket.remotePort ?? 0,
      };
      seen.push(s);
      void handler(s, res);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    handle(fn) {
      handler = fn;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

async function eventuallyTrue(fn: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!fn()) {
    if (Date.now() > deadline) throw new Error('timed out waiting for a condition');
    await new Promise((r) => setTimeout(r, 20));
  }
}

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

const SECRET = 'test-secret-key-9f8e7d';
const ACCESS = 'test-access-token-1a2b3c';
const MERCHANT = 'merchant-42';
const CREDS = { secretKey: SECRET, accessToken: ACCESS, merchantRef: MERCHANT };
const AUTH_TOKEN = 'provider-auth-token-77aa';
const PIN = '8642';

const swapInitReq: SwapInitRequest = {
  user_ref: 'user-1',
  from_currency: 'NGN',
  to_currency: 'USD',
  amount: 1500,
  txn_ref: 'swap-ref-1',
  notification_url: 'http://127.0.0.1:9/notify',
};
const swapInitData = {
  payment_ref: 'PAY-1',
  txn_ref: 'swap-ref-1',
  from_currency: 'NGN',
  to_currency: 'USD',
  amount: 1500,
  converted_amount: 1,
  rate_used: 0.00066,
  auth_token: AUTH_TOKEN,
  expires_in_seconds: 300,
};
const linkReq: HostedLinkRequest = {
  user_ref: 'user-1',
  txn_merchant_ref: 'link-ref-1',
  amount: 2500.5,
  currency: 'NGN',
  full_name: 'Ada Obi',
  email: 'ada@example.com',
  phone: '+2348012345678',
  chain: '',
  payment_method: 'HOSTED_PAY_LINK',
  payment_channel: 'BANK_TRANSFER',
  redirect_url: 'http://127.0.0.1:9/done',
  notification_url: 'http://127.0.0.1:9/notify',
};
const linkData = {
  payment_ref: 'PAY-2',
  pay_link: 'http://127.0.0.1:9/checkout?ref=PAY-2',
  txn_merchant_ref: 'link-ref-1',
  amount: 2500.5,
  currency: 'NGN',
  redirect_url: 'http://127.0.0.1:9/done',
  success_message: null,
  pay_data: null,
};
const categories = [
  { code: '1.0', name: 'Mobile Top Up' },
  { code: '13.1', name: 'eVouchers > Beauty and Wellness' },
  { code: '13.10', name: 'eVouchers > Something' },
];

function assertNoSecrets(err: unknown, extra: string[] = []): void {
  const text = `${(err as Error).message}\n${JSON.stringify(err)}`;
  for (const s of [SECRET, ACCESS, AUTH_TOKEN, PIN, ...extra]) {
    assert.ok(!text.includes(s), `error text must not contain a secret: ${text}`);
  }
}

describe('provider client against a scripted server', () => {
  let srv: Scripted;
  let client: ProviderClient;
  /** Clients on the scripted server with the test credentials; `withClient` closes its own. */
  const { clientFor, withClient } = providerClients(() => ({ baseUrl: srv.url, ...CREDS }));

  before(async () => {
    srv = await startScripted();
    client = clientFor();
  });
  after(async () => {
    await client.close();
    await srv.close();
  });
  beforeEach(() => {
    srv.seen.length = 0;
  });

  describe('successful calls and what is sent', () => {
    test('initializes a swap with Bearer secret key and returns the parsed data', async () => {
      srv.handle((_r, res) => json(res, 200, { status: 'success', message: 'ok', data: swapInitData }));
      const data = await client.initSwap(swapInitReq);
      assert.deepEqual(data, swapInitData);
      const [req] = srv.seen;
      assert.equal(req.method, 'POST');
      assert.equal(req.url, '/api/v1/user/wallet/swap');
      assert.equal(req.headers.authorization, `Bearer ${SECRET}`);
      assert.match(String(req.headers['content-type']), /^application\/json/);
      assert.equal(req.headers['x-merchant-ref'], undefined);
      assert.deepEqual(JSON.parse(req.body), swapInitReq);
    });

    test('confirms a swap with Bearer secret key, JSON body of user_ref, auth_token and wallet_pin', async () => {
      srv.handle((_r, res) => json(res, 200, { status: 'success', message: 'Swap confirmed and initiated successfully' }));
      const result = await client.confirmSwap({ user_ref: 'user-1', auth_token: AUTH_TOKEN, wallet_pin: PIN });
      assert.deepEqual(result, { status: 'success', message: 'Swap confirmed and initiated successfully' });
      const [req] = srv.seen;
      assert.equal(req.url, '/api/v1/user/wallet/swap/confirm');
      assert.equal(req.headers.authorization, `Bearer ${SECRET}`);
      assert.match(String(req.headers['content-type']), /^application\/json/);
      assert.deepEqual(JSON.parse(req.body), { user_ref: 'user-1', auth_token: AUTH_TOKEN, wallet_pin: PIN });
    });

    test('creates a hosted link with Bearer access token and x-merchant-ref', async () => {
      srv.handle((_r, res) => json(res, 200, { status: 'success', message: 'created', data: linkData }));
      const data = await client.createHostedLink(linkReq);
      assert.deepEqual(data, linkData);
      const [req] = srv.seen;
      assert.equal(req.method, 'POST');
      assert.equal(req.url, '/api/v1/collection/hosted-link');
      assert.equal(req.headers.authorization, `Bearer ${ACCESS}`);
      assert.equal(req.headers['x-merchant-ref'], MERCHANT);
      assert.match(String(req.headers['content-type']), /^application\/json/);
      const body = JSON.parse(req.body);
      assert.equal(body.payment_method, 'HOSTED_PAY_LINK');
      assert.equal(body.payment_channel, 'BANK_TRANSFER');
      assert.equal(body.txn_merchant_ref, 'link-ref-1');
    });

    test('fills the documented constants of a hosted link the caller left out', async () => {
      srv.handle((_r, res) => json(res, 200, { status: 'success', message: 'created', data: linkData }));
      const partial = { ...linkReq } as Partial<HostedLinkRequest>;
      delete partial.payment_method;
      delete partial.payment_channel;
      delete partial.chain;
      await client.createHostedLink(partial as HostedLinkRequest);
      const body = JSON.parse(srv.seen[0].body);
      assert.equal(body.payment_method, 'HOSTED_PAY_LINK');
      assert.equal(body.payment_channel, 'BANK_TRANSFER');
      assert.equal(body.chain, '');
    });

    test('lists categories from data.data sending only x-merchant-ref by default', async () => {
      srv.handle((_r, res) => json(res, 200, { status: 'success', message: 'ok', data: { data: categories } }));
      const list = await client.listCategories();
      assert.deepEqual(list, categories);
      assert.equal(typeof list[1].code, 'string');
      const [req] = srv.seen;
      assert.equal(req.method, 'GET');
      assert.equal(req.url, '/api/v1/utility/categories');
      assert.equal(req.headers['x-merchant-ref'], MERCHANT);
      assert.equal(req.headers.authorization, undefined);
    });

    test('adds the Bearer access token to the category listing when categoriesBearer is set', async () => {
      await withClient({ categoriesBearer: true }, async (c) => {
        srv.handle((_r, res) => json(res, 200, { status: 'success', message: 'ok', data: { data: categories } }));
        await c.listCategories();
        assert.equal(srv.seen[0].headers.authorization, `Bearer ${ACCESS}`);
        assert.equal(srv.seen[0].headers['x-merchant-ref'], MERCHANT);
      });
    });

    test('keeps the path prefix of a base URL in front of /api/v1', async () => {
      await withClient({ baseUrl: `${srv.url}/provider/` }, async (c) => {
        srv.handle((_r, res) => json(res, 200, { status: 'success', message: 'ok', data: { data: categories } }));
        await c.listCategories();
        assert.equal(srv.seen[0].url, '/provider/api/v1/utility/categories');
        assert.equal(c.urlOf('swapConfirm'), `${srv.url}/provider/api/v1/user/wallet/swap/confirm`);
      });
    });

    test('accepts any documented success value of status, case-insensitively', async () => {
      srv.handle((_r, res) => json(res, 200, { status: 'SUCCESSFUL', message: 'ok', data: { data: categories } }));
      assert.equal((await client.listCategories()).length, 3);
    });

    test('reuses keep-alive connections for sequential calls instead of opening one per call', async () => {
      srv.handle((_r, res) => json(res, 200, { status: 'success', message: 'ok', data: { data: categories } }));
      for (let i = 0; i < 6; i += 1) await client.listCategories();
      const ports = new Set(srv.seen.map((s) => s.remotePort));
      assert.equal(srv.seen.length, 6);
      assert.ok(ports.size <= 2, `sequential calls used ${ports.size} connections`);
    });

    test('never has more requests in flight than maxConnections', async () => {
      let inFlight = 0;
      let maxInFlight = 0;
      srv.handle((_r, res) => {
        inFlight += 1;
        maxInFlight = Math.max(maxInFlight, inFlight);
        setTimeout(() => {
          inFlight -= 1;
          json(res, 200, { status: 'success', message: 'ok', data: { data: categories } });
        }, 30);
      });
      await withClient({ maxConnections: 2 }, async (c) => {
        await Promise.all(Array.from({ length: 6 }, () => c.listCategories()));
        assert.equal(srv.seen.length, 6);
        assert.equal(maxInFlight, 2);
      });
    });
  });

  describe('admission when a call gets its connection', () => {
    /** A server whose answers wait until the test lets them go; `inFlight` counts the unanswered. */
    const heldAnswers = () => {
      const waiting: Array<() => void> = [];
      const state = { inFlight: 0 };
      srv.handle(
        (_r, res) =>
          new Promise<void>((done) => {
            state.inFlight += 1;
            waiting.push(() => {
              state.inFlight -= 1;
              json(res, 200, { status: 'success', message: 'ok', data: { data: categories } });
              done();
            });
          }),
      );
      return { state, release: () => waiting.splice(0).forEach((go) => go()), waiting };
    };
    const tick = (ms = 200) => new Promise((r) => setTimeout(r, ms));

    test('asks a call\'s admit only once a connection is free, and then sends it', async () => {
      const answers = heldAnswers();
      await withClient({ maxConnections: 1 }, async (c) => {
        const first = c.listCategories();
        await eventuallyTrue(() => answers.state.inFlight === 1);
        const askedWithInFlight: number[] = [];
        const second = c.listCategories({ admit: () => void askedWithInFlight.push(answers.state.inFlight) });
        await tick(300);
        assert.deepEqual(askedWithInFlight, [], 'not asked while the only connection is busy');
        assert.equal(srv.seen.length, 1);
        answers.release();
        await first;
        await eventuallyTrue(() => srv.seen.length === 2);
        assert.deepEqual(askedWithInFlight, [0], 'asked once, with nothing in flight');
        answers.release();
        await second;
      });
    });

    test('a call its admit refuses is never sent, is not a provider call, and leaves the connection to the next', async () => {
      srv.handle((_r, res) => json(res, 200, { status: 'success', message: 'ok', data: { data: categories } }));
      await withClient({ maxConnections: 1 }, async (c) => {
        const told: unknown[] = [];
        c.observe((call) => told.push(call));
        const refusal = new Error('held: nothing sent');
        await assert.rejects(
          c.confirmSwap({ user_ref: 'user-1', auth_token: AUTH_TOKEN, wallet_pin: PIN }, {
            admit: () => {
              throw refusal;
            },
          }),
          (e: unknown) => e === refusal,
        );
        assert.equal(srv.seen.length, 0, 'nothing reached the provider');
        assert.deepEqual(told, [], 'no observer was told of a call');
        assert.equal((await c.listCategories()).length, 3, 'the connection went to the next call');
      });
    });

    test('counts a call\'s latency and slow notice from when it is sent, not while it waited for a connection', async () => {
      const answers = heldAnswers();
      await withClient({ maxConnections: 1 }, async (c) => {
        const calls: Array<{ phase?: string; latencyMs: number; queuedMs?: number }> = [];
        c.observe((call) => calls.push(call), { slowMs: 1_000 });
        const first = c.listCategories();
        await eventuallyTrue(() => answers.state.inFlight === 1);
        const second = c.listCategories();
        await tick(1_500); // the first is slow; the second only waits for the connection
        answers.release();
        await first;
        await eventuallyTrue(() => answers.state.inFlight === 1);
        answers.release();
        await second;
        assert.deepEqual(calls.map((x) => x.phase ?? 'final'), ['slow', 'final', 'final'], 'only the first was slow');
        const last = calls.at(-1)!;
        assert.ok(last.queuedMs !== undefined && last.queuedMs >= 1_000, `waited ${last.queuedMs} ms for its connection`);
        assert.ok(last.latencyMs < last.queuedMs, `latency ${last.latencyMs} ms counts from when it was sent`);
      });
    });

    test('a call whose wait for a connection is aborted is never sent', async () => {
      const answers = heldAnswers();
      await withClient({ maxConnections: 1 }, async (c) => {
        const first = c.listCategories();
        await eventuallyTrue(() => answers.state.inFlight === 1);
        const abort = new AbortController();
        let asked = false;
        const second = c.listCategories({ signal: abort.signal, admit: () => void (asked = true) });
        const reason = new Error('the activity was cancelled');
        abort.abort(reason);
        await assert.rejects(second, (e: unknown) => e === reason);
        answers.release();
        await first;
        await tick();
        assert.equal(asked, false);
        assert.equal(srv.seen.length, 1, 'only the first call reached the provider');
      });
    });
  });

  describe('answers the provider refuses', () => {
    test('turns a 400 into ProviderRejectedError carrying the provider message and request id', async () => {
      srv.handle((_r, res) => json(res, 400, { status: 'error', message: 'amount: must be positive' }, { 'x-request-id': 'req-123' }));
      const err = await failsWith(client.initSwap(swapInitReq), ProviderRejectedError);
      assert.equal(err.kind, 'rejected');
      assert.equal(err.endpoint, 'swapInit');
      assert.equal(err.httpStatus, 400);
      assert.equal(err.requestId, 'req-123');
      assert.equal(err.providerMessage, 'amount: must be positive');
      assert.match(err.message, /rejected \(HTTP 400\): amount: must be positive/);
    });

    test('turns a 409 on a reused reference into ProviderRejectedError', async () => {
      srv.handle((_r, res) => json(res, 409, { status: 'error', message: 'duplicate txn_merchant_ref' }));
      const err = await failsWith(client.createHostedLink(linkReq), ProviderRejectedError);
      assert.equal(err.httpStatus, 409);
      assert.equal(err.providerMessage, 'duplicate txn_merchant_ref');
    });

    test('treats a 200 whose status is not a success value as a rejection', async () => {
      srv.handle((_r, res) => json(res, 200, { status: 'failed', message: 'Incorrect wallet PIN' }));
      const err = await failsWith(
        client.confirmSwap({ user_ref: 'user-1', auth_token: AUTH_TOKEN, wallet_pin: PIN }),
        ProviderRejectedError,
      );
      assert.equal(err.httpStatus, 200);
      assert.equal(classifyConfirmRejection(err), 'wrong_pin');
    });

    test('reads the provider message of an error body in other common shapes', async () => {
      srv.handle((_r, res) => json(res, 422, { error: { message: 'phone is invalid' } }));
      const err = await failsWith(client.createHostedLink(linkReq), ProviderRejectedError);
      assert.equal(err.providerMessage, 'phone is invalid');
    });

    test('turns 401 and 403 into ProviderAuthError', async () => {
      for (const status of [401, 403]) {
        srv.handle((_r, res) => json(res, status, { status: 'error', message: 'Unauthorized' }));
        const err = await failsWith(client.createHostedLink(linkReq), ProviderAuthError);
        assert.equal(err.httpStatus, status);
        assert.equal(err.kind, 'auth');
      }
    });

    test('turns a 429 into ProviderRateLimitedError with Retry-After seconds in milliseconds', async () => {
      srv.handle((_r, res) => json(res, 429, { status: 'error', message: 'slow down' }, { 'retry-after': '3' }));
      const err = await failsWith(client.listCategories(), ProviderRateLimitedError);
      assert.equal(err.retryAfterMs, 3000);
      assert.equal(err.kind, 'rate_limited');
    });

    test('reads a Retry-After HTTP-date and caps a long one', async () => {
      const in5s = new Date(Date.now() + 5_000).toUTCString();
      srv.handle((_r, res) => json(res, 429, { status: 'error' }, { 'retry-after': in5s }));
      const err = await failsWith(client.initSwap(swapInitReq), ProviderRateLimitedError);
      assert.ok(err.retryAfterMs !== undefined && err.retryAfterMs > 0 && err.retryAfterMs <= 5_000, String(err.retryAfterMs));
      srv.handle((_r, res) => json(res, 429, { status: 'error' }, { 'retry-after': '86400' }));
      const capped = await failsWith(client.initSwap(swapInitReq), ProviderRateLimitedError);
      assert.equal(capped.retryAfterMs, ASSUMPTIONS.retryAfterCapMs);
    });

    test('leaves retryAfterMs unset for a 429 without Retry-After', async () => {
      srv.handle((_r, res) => json(res, 429, { status: 'error' }));
      const err = await failsWith(client.listCategories(), ProviderRateLimitedError);
      assert.equal(err.retryAfterMs, undefined);
    });
  });

  describe('server errors and unusable answers', () => {
    test('treats a 5xx on the category read as transient', async () => {
      srv.handle((_r, res) => json(res, 503, { status: 'error', message: 'maintenance' }));
      const err = await failsWith(client.listCategories(), ProviderTransientError);
      assert.equal(err.httpStatus, 503);
    });

    test('treats a 5xx on a POST as ambiguous: the provider may have acted', async () => {
      srv.handle((_r, res) => json(res, 500, { status: 'error', message: 'internal' }));
      const err = await failsWith(client.initSwap(swapInitReq), ProviderAmbiguousError);
      assert.equal(err.httpStatus, 500);
      assert.match(err.message, /outcome unknown/);
    });

    test('treats an HTML error page on a POST as ambiguous without quoting the page', async () => {
      srv.handle((_r, res) => {
        res.writeHead(502, { 'content-type': 'text/html' });
        res.end('<html><body><h1>502 Bad Gateway</h1>nginx</body></html>');
      });
      const err = await failsWith(client.createHostedLink(linkReq), ProviderAmbiguousError);
      assert.equal(err.httpStatus, 502);
      assert.ok(!err.message.includes('<html>'));
    });

    test('treats a 2xx with a non-JSON body as ambiguous on a POST and transient on a GET', async () => {
      srv.handle((_r, res) => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end('OK!!');
      });
      await failsWith(client.confirmSwap({ user_ref: 'user-1', auth_token: AUTH_TOKEN, wallet_pin: PIN }), ProviderAmbiguousError);
      await failsWith(client.listCategories(), ProviderTransientError);
    });

    test('treats a 2xx HTML page as unusable', async () => {
      srv.handle((_r, res) => {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end('<!doctype html><title>Login</title>');
      });
      const err = await failsWith(client.initSwap(swapInitReq), ProviderAmbiguousError);
      assert.match(err.message, /text\/html/);
    });

    test('treats a success envelope whose data breaks the contract as ambiguous on a POST, naming the field only', async () => {
      const { auth_token: _omit, ...noToken } = swapInitData;
      srv.handle((_r, res) => json(res, 200, { status: 'success', message: 'ok', data: noToken }));
      const err = await failsWith(client.initSwap(swapInitReq), ProviderAmbiguousError);
      assert.match(err.message, /data\.auth_token/);
    });

    test('treats a success envelope whose category data breaks the contract as transient', async () => {
      srv.handle((_r, res) => json(res, 200, { status: 'success', message: 'ok', data: categories }));
      await failsWith(client.listCategories(), ProviderTransientError);
    });

    test('refuses to follow a redirect', async () => {
      srv.handle((_r, res) => {
        res.writeHead(301, { location: 'https://elsewhere.invalid/' });
        res.end();
      });
      const err = await failsWith(client.listCategories(), ProviderRejectedError);
      assert.match(err.message, /redirects are not followed/);
      assert.equal(srv.seen.length, 1);
    });
  });

  describe('network failures', () => {
    test('treats a refused connection as transient even for a POST: nothing was sent', async () => {
      const closed = await startScripted();
      const url = closed.url;
      await closed.close();
      await withClient({ baseUrl: url }, async (c) => {
        const err = await failsWith(c.initSwap(swapInitReq), ProviderTransientError);
        assert.equal(err.networkCode, 'ECONNREFUSED');
        assert.match(err.message, /nothing was sent/);
      });
    });

    test('treats a POST whose answer never comes as ambiguous once the headers timeout passes', async () => {
      srv.handle(() => {
        /* never answer */
      });
      await withClient({ timeouts: { headersMs: 200 } }, async (c) => {
        const err = await failsWith(
          c.confirmSwap({ user_ref: 'user-1', auth_token: AUTH_TOKEN, wallet_pin: PIN }),
          ProviderAmbiguousError,
        );
        assert.equal(err.networkCode, 'UND_ERR_HEADERS_TIMEOUT');
        assertNoSecrets(err);
      });
    });

    test('treats the same silence on the category read as transient', async () => {
      srv.handle(() => {});
      await withClient({ timeouts: { headersMs: 200 } }, async (c) => {
        const err = await failsWith(c.listCategories(), ProviderTransientError);
        assert.equal(err.networkCode, 'UND_ERR_HEADERS_TIMEOUT');
      });
    });

    test('treats a body that stops arriving on a POST as ambiguous', async () => {
      srv.handle((_r, res) => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '500' });
        res.write('{"status":"success",');
      });
      await withClient({ timeouts: { bodyMs: 200 } }, async (c) => {
        await failsWith(c.initSwap(swapInitReq), ProviderAmbiguousError);
      });
    });

    test('treats a connection reset after the POST was written as ambiguous', async () => {
      srv.handle((_r, res) => {
        res.socket?.destroy();
      });
      const err = await failsWith(client.createHostedLink(linkReq), ProviderAmbiguousError);
      assert.ok(err.networkCode, 'has a network code');
      assert.equal(srv.seen.length, 1);
    });

    test('treats a connection reset on the category read as transient', async () => {
      srv.handle((_r, res) => {
        res.socket?.destroy();
      });
      await failsWith(client.listCategories(), ProviderTransientError);
    });
  });

  describe('secrets stay out of errors', () => {
    test('masks credentials, auth_token and PIN the provider echoes in its message', async () => {
      srv.handle((_r, res) =>
        json(res, 400, {
          status: 'error',
          message: `bad request: Authorization Bearer ${SECRET}; auth_token ${AUTH_TOKEN} with pin ${PIN} and ${ACCESS}`,
        }),
      );
      const err = await failsWith(
        client.confirmSwap({ user_ref: 'user-1', auth_token: AUTH_TOKEN, wallet_pin: PIN }),
        ProviderRejectedError,
      );
      assertNoSecrets(err);
      assert.match(err.message, /\*\*\*/);
    });

    test('masks token-like values in a message even when they are not ours', async () => {
      srv.handle((_r, res) => json(res, 400, { status: 'error', message: 'token=abc.def.ghi rejected; api_key: zzz' }));
      const err = await failsWith(client.initSwap(swapInitReq), ProviderRejectedError);
      assert.ok(!err.message.includes('abc.def.ghi'));
      assert.ok(!err.message.includes('zzz'));
    });

    test('keeps a very long provider message to a short excerpt', async () => {
      srv.handle((_r, res) => json(res, 400, { status: 'error', message: 'word '.repeat(500) }));
      const err = await failsWith(client.initSwap(swapInitReq), ProviderRejectedError);
      assert.ok(err.message.length < 400, `message length ${err.message.length}`);
    });

    test('keeps every failure kind free of secrets, JSON form included', async () => {
      const confirm = () => client.confirmSwap({ user_ref: 'user-1', auth_token: AUTH_TOKEN, wallet_pin: PIN });
      const cases: [Handler, () => Promise<unknown>][] = [
        [(_r, res) => json(res, 401, { status: 'error', message: `invalid key ${SECRET}` }), confirm],
        [(_r, res) => json(res, 429, { status: 'error', message: `token ${AUTH_TOKEN}` }, { 'retry-after': '1' }), confirm],
        [(_r, res) => json(res, 500, { status: 'error', message: `pin ${PIN} ${ACCESS}` }), confirm],
        [(_r, res) => json(res, 200, { status: 'declined', message: `wallet_pin=${PIN} auth_token=${AUTH_TOKEN}` }), confirm],
        [(_r, res) => json(res, 200, { status: 'success', message: 'ok', data: { auth_token: AUTH_TOKEN } }), () => client.initSwap(swapInitReq)],
        [(_r, res) => json(res, 403, { status: 'error', message: `Bearer ${ACCESS} not allowed` }), () => client.createHostedLink(linkReq)],
      ];
      for (const [answer, call] of cases) {
        srv.handle(answer);
        const err = await failsWith(call(), ProviderError);
        assertNoSecrets(err);
      }
    });
  });

  describe('requests that are never sent', () => {
    test('refuses a request that fails the contract without dialling the provider', async () => {
      const err = await failsWith(client.initSwap({ ...swapInitReq, amount: -5 }), ProviderRequestInvalidError);
      assert.match(err.message, /amount/);
      assert.equal(srv.seen.length, 0);
    });

    test('refuses an empty PIN without quoting anything', async () => {
      const err = await failsWith(
        client.confirmSwap({ user_ref: 'user-1', auth_token: AUTH_TOKEN, wallet_pin: '' }),
        ProviderRequestInvalidError,
      );
      assert.match(err.message, /wallet_pin/);
      assertNoSecrets(err);
      assert.equal(srv.seen.length, 0);
    });
  });
});

describe('the live-environment guard', () => {
  test('refuses a non-loopback base URL unless live is set', () => {
    assert.throws(() => new ProviderClient({ baseUrl: 'https://api.provider.example/', ...CREDS }), (e: unknown) => {
      assert.ok(e instanceof ConfigError);
      assert.match(e.message, /not a loopback address/);
      assert.ok(!e.message.includes(SECRET));
      return true;
    });
    assert.throws(() => new ProviderClient({ baseUrl: 'http://10.0.0.5:8080', ...CREDS, live: false }), ConfigError);
  });

  test('accepts a non-loopback base URL with live: true without dialling it', async () => {
    // A dispatcher that records every dispatch proves construction dials nothing.
    const dispatched: string[] = [];
    class Tripwire extends Dispatcher {
      override dispatch(opts: Dispatcher.DispatchOptions): boolean {
        dispatched.push(String(opts.path));
        throw new Error('must not dial');
      }
    }
    const c = new ProviderClient({ baseUrl: 'https://api.provider.example/', ...CREDS, live: true, dispatcher: new Tripwire() });
    assert.equal(c.urlOf('categories'), 'https://api.provider.example/api/v1/utility/categories');
    await c.close();
    assert.deepEqual(dispatched, []);
    const own = new ProviderClient({ baseUrl: 'https://api.provider.example/', ...CREDS, live: true });
    await own.close();
  });

  test('refuses base URLs carrying credentials, queries or odd schemes', () => {
    assert.throws(() => new ProviderClient({ baseUrl: 'http://user:pw@127.0.0.1:1/', ...CREDS }), /must not carry credentials/);
    assert.throws(() => new ProviderClient({ baseUrl: 'http://127.0.0.1:1/?a=1', ...CREDS }), /query or fragment/);
    assert.throws(() => new ProviderClient({ baseUrl: 'ftp://127.0.0.1/', ...CREDS }), /http or https/);
    assert.throws(() => new ProviderClient({ baseUrl: 'not a url', ...CREDS }), /not a valid URL/);
  });

  test('refuses empty credentials', () => {
    assert.throws(() => new ProviderClient({ baseUrl: 'http://127.0.0.1:1', ...CREDS, secretKey: '' }), /secretKey/);
  });
});

describe('configuration from the environment', () => {
  test('uses fallback credentials only when its caller (the embedded simulator) passes them', async () => {
    const srv = await startScripted();
    srv.handle((_r, res) => json(res, 200, { status: 'success', message: 'ok', data: { data: categories } }));
    assert.throws(() => providerClientFromEnv(loadEnv({}), srv.url), /MPS_SECRET_KEY: is required/);
    const c = providerClientFromEnv(loadEnv({}), srv.url, undefined, { secretKey: 's', accessToken: 'a', merchantRef: 'sim-merchant' });
    try {
      await c.listCategories();
      assert.equal(srv.seen[0].headers['x-merchant-ref'], 'sim-merchant');
    } finally {
      await c.close();
      await srv.close();
    }
  });

  test('reads MPS_* credentials and MPS_CATEGORIES_BEARER, using an injected dispatcher', async () => {
    const srv = await startScripted();
    srv.handle((_r, res) => json(res, 200, { status: 'success', message: 'ok', data: { data: categories } }));
    const agent = new Agent();
    const env = loadEnv({
      MPS_BASE_URL: srv.url,
      MPS_SECRET_KEY: SECRET,
      MPS_ACCESS_TOKEN: ACCESS,
      MPS_MERCHANT_REF: MERCHANT,
      MPS_CATEGORIES_BEARER: '1',
    });
    const c = providerClientFromEnv(env, srv.url, agent);
    try {
      await c.listCategories();
      assert.equal(srv.seen[0].headers['x-merchant-ref'], MERCHANT);
      assert.equal(srv.seen[0].headers.authorization, `Bearer ${ACCESS}`);
    } finally {
      await c.close();
      await agent.close();
      await srv.close();
    }
  });

  test('requires every credential when MPS_BASE_URL points at a provider', () => {
    const env = loadEnv({ MPS_BASE_URL: 'http://127.0.0.1:1', MPS_SECRET_KEY: SECRET });
    assert.throws(() => providerClientFromEnv(env, 'http://127.0.0.1:1'), /MPS_ACCESS_TOKEN/);
  });

  test('honours MPS_LIVE for a non-loopback base URL', async () => {
    const env = loadEnv({
      MPS_BASE_URL: 'https://api.provider.example',
      MPS_LIVE: '1',
      MPS_SECRET_KEY: SECRET,
      MPS_ACCESS_TOKEN: ACCESS,
      MPS_MERCHANT_REF: MERCHANT,
    });
    const c = providerClientFromEnv(env, 'https://api.provider.example');
    await c.close();
    const notLive = { ...env, MPS_LIVE: false };
    assert.throws(() => providerClientFromEnv(notLive, 'https://api.provider.example'), ConfigError);
  });
});

describe('helpers', () => {
  test('classifies confirmation rejections by the provider message', () => {
    assert.equal(classifyConfirmRejectionMessage('Incorrect wallet PIN'), 'wrong_pin');
    assert.equal(classifyConfirmRejectionMessage('auth_token is invalid, expired or already used'), 'token_invalid');
    assert.equal(classifyConfirmRejectionMessage('Insufficient balance'), 'other');
    const err = new ProviderRejectedError('x', { endpoint: 'swapConfirm', providerMessage: 'Token expired' });
    assert.equal(classifyConfirmRejection(err), 'token_invalid');
  });

  test('parses Retry-After forms and ignores nonsense', () => {
    assert.equal(parseRetryAfterMs('0'), 0);
    assert.equal(parseRetryAfterMs('2'), 2000);
    assert.equal(parseRetryAfterMs(['4']), 4000);
    assert.equal(parseRetryAfterMs('soon'), undefined);
    assert.equal(parseRetryAfterMs(undefined), undefined);
    assert.equal(parseRetryAfterMs(new Date(0).toUTCString()), 0);
    assert.equal(parseRetryAfterMs('Wed, 21 Oct 2015 07:28:10 GMT', Date.parse('Wed, 21 Oct 2015 07:28:00 GMT')), 10_000);
  });

  test('masks bearer values, secret assignments and long opaque strings in excerpts', () => {
    assert.equal(sanitizeExcerpt('Authorization: Bearer abc123'), 'Authorization: Bearer ***');
    assert.equal(sanitizeExcerpt('{"wallet_pin":"9999"}'), '{"wallet_pin":"***"}');
    assert.equal(sanitizeExcerpt(`id ${'a'.repeat(40)} end`), 'id *** end');
    assert.equal(sanitizeExcerpt('line\nbreak\ttab'), 'line break tab');
    assert.equal(sanitizeExcerpt('value s3cr3t here', ['s3cr3t']), 'value *** here');
    assert.equal(sanitizeExcerpt('auth_token is invalid, expired or already used'), 'auth_token is invalid, expired or already used');
  });
});
