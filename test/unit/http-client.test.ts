/**
 * The gateway client of src/http-client (also the light package @merchant-payment-flows/client)
 * against a scripted loopback HTTP server: which answers and failures it retries, how long it
 * waits (Retry-After, jittered backoff, deadline, timeout), the Idempotency-Key it sends once per
 * logical POST, and the error class each gateway error code becomes — every code the gateway's
 * sources answer has its class. The retries against a real gateway, and the package as installed,
 * are test/e2e/client-package.test.ts.
 */
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import {
  createGatewayClient,
  createMpfClient,
  ERROR_CLASSES,
  MpfApiError,
  MpfConnectionError,
  MpfDuplicateError,
  MpfError,
  MpfIdempotencyKeyInUseError,
  MpfInvalidRequestError,
  MpfTimeoutError,
  MpfWorkerUnavailableError,
  type RetryInfo,
  retryingFetch,
  type SwapStartRequest,
} from '../../src/http-client';

const ROOT = path.join(__dirname, '..', '..');
const BODY: SwapStartRequest = { user_ref: 'u-1', from_currency: 'USD', to_currency: 'NGN', amount: 10, txn_ref: 'order-1' };
const STARTED = { swap_id: 'swap-order-1', state: 'awaiting_pin', txn_ref: 'order-1', user_ref: 'u-1', from_currency: 'USD', to_currency: 'NGN', amount: 10, pin_attempts_used: 0, pin_attempts_left: 3, notifications: [], updated_at: '2026-01-01T00:00:00Z', pin_url: 'http://x/pin', pin_token: 't' };

/** What the scripted server does with one request: answer, hang, or drop the connection. */
type Step = { status: number; body?: unknown; headers?: Record<string, string> } | 'drop' | 'hang';

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  at: number;
}

let server: http.Server;
let base: string;
let script: Step[] = [];
let seen: Seen[] = [];

before(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body, at: Date.now() });
      const step = script.shift() ?? { status: 200, body: {} };
      if (step === 'drop') return req.socket.destroy();
      if (step === 'hang') return;
      res.writeHead(step.status, { 'content-type': 'application/json', 'x-request-id': `req-${seen.length}`, ...(step.headers ?? {}) });
      res.end(step.body === undefined ? '' : JSON.stringify(step.body));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

beforeEach(() => {
  script = [];
  seen = [];
});

const unavailable = (retryAfter = '0') => ({ status: 503, body: { error: 'worker_unavailable', message: 'no worker answered within 10 s', flow_id: 'swap-order-1', last_known_state: 'initializing' }, headers: { 'retry-after': retryAfter } });

/** A client with fast backoff, recording its retries. */
function client(opts: Parameters<typeof createMpfClient>[0] extends infer O ? Partial<O> : never = {}) {
  const retries: RetryInfo[] = [];
  const mpf = createMpfClient({ baseUrl: base, apiKey: 'k', initialDelayMs: 10, maxDelayMs: 40, onRetry: (i) => retries.push(i), ...opts });
  return { mpf, retries };
}

describe('retries', () => {
  test('a start answered 503 then 201 is retried once, with the same generated Idempotency-Key, and answers the swap', async () => {
    script = [unavailable(), { status: 201, body: STARTED }];
    const { mpf, retries } = client();
    const started = await mpf.startSwap(BODY);
    assert.equal(started.swap_id, 'swap-order-1');
    assert.equal(seen.length, 2);
    const keys = seen.map((s) => s.headers['idempotency-key']);
    assert.match(keys[0] as string, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, 'a UUID');
    assert.equal(keys[1], keys[0], 'the retry carries the same key');
    assert.deepEqual(seen.map((s) => JSON.parse(s.body)), [BODY, BODY], 'and the same body');
    assert.equal(seen[0]!.headers['x-api-key'], 'k');
    assert.deepEqual(retries.map((r) => [r.attempt, r.status, r.code, r.idempotencyKey]), [[1, 503, 'worker_unavailable', keys[0]]]);
  });

  test('onRetry is told, before each wait, the status, code, reason, attempt, delay and Retry-After; then the call answers 200', async () => {
    const paused = { status: 503, body: { error: 'provider_unavailable', message: 'no swap is started: paused by key ops (drill)' }, headers: { 'retry-after': '1' } };
    script = [paused, { status: 503, body: { error: 'temporal_unavailable', message: 'Temporal did not answer' } }, { status: 200, body: { swap_id: 'swap-x' } }];
    const told: Array<{ info: RetryInfo; requestsSoFar: number }> = [];
    const mpf = createMpfClient({ baseUrl: base, apiKey: 'secret-api-key', initialDelayMs: 10, maxDelayMs: 40, onRetry: (info) => told.push({ info, requestsSoFar: seen.length }) });
    const view = await mpf.getSwap('swap-x');
    assert.equal(view.swap_id, 'swap-x');
    assert.equal(seen.length, 3);
    assert.deepEqual(
      told.map(({ info: { attempt, status, code, reason, retryAfterSeconds } }) => ({ attempt, status, code, reason, retryAfterSeconds })),
      [
        { attempt: 1, status: 503, code: 'provider_unavailable', reason: 'no swap is started: paused by key ops (drill)', retryAfterSeconds: 1 },
        { attempt: 2, status: 503, code: 'temporal_unavailable', reason: 'Temporal did not answer', retryAfterSeconds: undefined },
      ],
    );
    assert.deepEqual(told.map((t) => t.requestsSoFar), [1, 2], 'told before the wait, not after the next attempt');
    assert.ok(told[0]!.info.delayMs >= 1000, `the first wait honours Retry-After: ${told[0]!.info.delayMs} ms`);
    assert.ok(seen[1]!.at - seen[0]!.at >= told[0]!.info.delayMs - 5, 'and the client waited what it said');
    assert.ok(told[1]!.info.delayMs < 1000, 'the second, without Retry-After, is the backoff');
    assert.ok(!JSON.stringify(told).includes('secret-api-key'), 'nothing of the request\'s headers');

    // No answer at all: the connection's code and what happened, in words.
    script = ['hang', { status: 200, body: { swap_id: 'swap-x' } }];
    told.length = 0;
    const slow = createMpfClient({ baseUrl: base, timeoutMs: 200, initialDelayMs: 10, onRetry: (info) => told.push({ info, requestsSoFar: seen.length }) });
    await slow.getSwap('swap-x');
    assert.equal(told.length, 1);
    assert.equal(told[0]!.info.status, undefined);
    assert.equal(told[0]!.info.code, 'timeout');
    assert.match(told[0]!.info.reason ?? '', /^no answer within \d+ ms$/);
    assert.equal(told[0]!.info.retryAfterSeconds, undefined);
  });

  test('each logical start gets its own key; a key the caller gives is sent unchanged on every attempt', async () => {
    script = [{ status: 201, body: STARTED }, { status: 201, body: STARTED }, unavailable(), unavailable(), { status: 201, body: STARTED }];
    const { mpf } = client();
    await mpf.startSwap(BODY);
    await mpf.startSwap(BODY);
    assert.notEqual(seen[0]!.headers['idempotency-key'], seen[1]!.headers['idempotency-key']);
    await mpf.startSwap(BODY, { idempotencyKey: 'order-1-start' });
    assert.deepEqual(seen.slice(2).map((s) => s.headers['idempotency-key']), ['order-1-start', 'order-1-start', 'order-1-start']);
  });

  test('waits at least the Retry-After the gateway asks for', async () => {
    script = [unavailable('1'), { status: 201, body: STARTED }];
    const { mpf, retries } = client();
    await mpf.startSwap(BODY);
    assert.ok(seen[1]!.at - seen[0]!.at >= 1000, `waited ${seen[1]!.at - seen[0]!.at} ms`);
    assert.ok(retries[0]!.delayMs >= 1000);
  });

  test('429 and 504 are retried; a dropped connection (socket destroyed) and a refused one are retried', async () => {
    script = [{ status: 429, body: { error: 'rate_limited', message: 'slow down' }, headers: { 'retry-after': '0' } }, { status: 504, body: { error: 'pending', message: 'p', flow_id: 'swap-order-1' } }, 'drop', { status: 201, body: STARTED }];
    const { mpf, retries } = client();
    await mpf.startSwap(BODY);
    assert.deepEqual(retries.map((r) => r.status ?? r.code), [429, 504, 'UND_ERR_SOCKET']);
    assert.equal(new Set(seen.map((s) => s.headers['idempotency-key'])).size, 1);

    // Nothing listens on the port: refused, retried, then the typed connection error with the key to retry with later.
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const refused = createMpfClient({ baseUrl: `http://127.0.0.1:${port}`, maxRetries: 2, initialDelayMs: 5 });
    const err = await refused.startSwap(BODY).then(() => undefined, (e: unknown) => e);
    assert.ok(err instanceof MpfConnectionError && !(err instanceof MpfTimeoutError), String(err));
    assert.equal(err.code, 'connection_error');
    assert.match(err.message, /ECONNREFUSED.*\(3 attempts/);
    assert.match(err.idempotencyKey ?? '', /^[0-9a-f-]{36}$/);
  });

  test('a 409 idempotency_key_in_use is retried while the gateway gives Retry-After, and not without it', async () => {
    const inUse = (headers: Record<string, string>) => ({ status: 409, body: { error: 'idempotency_key_in_use', message: 'still running', field: 'Idempotency-Key' }, headers });
    script = [inUse({ 'retry-after': '0' }), { status: 201, body: STARTED }];
    const { mpf } = client();
    await mpf.startSwap(BODY);
    assert.equal(seen.length, 2);
    script = [inUse({})];
    await assert.rejects(mpf.startSwap(BODY), MpfIdempotencyKeyInUseError);
    assert.equal(seen.length, 3);
  });

  test('stops after maxRetries: the last 503 is the typed error, with its code, status, request id, flow and Retry-After', async () => {
    script = [unavailable(), unavailable(), unavailable()];
    const { mpf } = client({ maxRetries: 2 });
    const err = await mpf.startSwap(BODY).then(() => undefined, (e: unknown) => e);
    assert.ok(err instanceof MpfWorkerUnavailableError, String(err));
    assert.ok(err instanceof MpfApiError && err instanceof MpfError && err instanceof Error);
    assert.equal(seen.length, 3);
    assert.deepEqual([err.code, err.status, err.requestId, err.flowId, err.lastKnownState, err.retryAfterSeconds], ['worker_unavailable', 503, 'req-3', 'swap-order-1', 'initializing', 0]);
    assert.equal(err.idempotencyKey, seen[0]!.headers['idempotency-key'], 'the key to call again with');
    assert.equal(err.name, 'MpfWorkerUnavailableError');
  });

  test('a Retry-After past the deadline is not waited for: the call ends at once with the answer', async () => {
    script = [unavailable('30')];
    const { mpf } = client({ deadlineMs: 2_000 });
    const t0 = Date.now();
    await assert.rejects(mpf.startSwap(BODY), MpfWorkerUnavailableError);
    assert.ok(Date.now() - t0 < 1_000, `took ${Date.now() - t0} ms`);
    assert.equal(seen.length, 1);
  });

  test('an attempt without an answer within timeoutMs is retried; past maxRetries it is MpfTimeoutError', async () => {
    script = ['hang', { status: 201, body: STARTED }];
    const { mpf, retries } = client({ timeoutMs: 300 });
    assert.equal((await mpf.startSwap(BODY)).swap_id, 'swap-order-1');
    assert.equal(retries[0]?.code, 'timeout');
    assert.equal(seen[1]!.headers['idempotency-key'], seen[0]!.headers['idempotency-key']);
    seen = [];
    script = ['hang', 'hang'];
    const err = await client({ timeoutMs: 150, maxRetries: 1 }).mpf.getSwap('swap-x').then(() => undefined, (e: unknown) => e);
    assert.ok(err instanceof MpfTimeoutError, String(err));
    assert.equal(err.code, 'timeout');
    assert.equal(err.idempotencyKey, undefined, 'a GET has no key');
  });

  test('the jittered backoff is 50-100 % of initialDelayMs × 2^n, capped at maxDelayMs', async () => {
    const delays = async (random: number): Promise<number[]> => {
      script = [unavailable(), unavailable(), unavailable(), unavailable(), { status: 200, body: STARTED }];
      const retries: RetryInfo[] = [];
      const fetch = retryingFetch({ maxRetries: 4, initialDelayMs: 10, maxDelayMs: 50, onRetry: (i) => retries.push(i), random: () => random });
      await createGatewayClient({ baseUrl: base, fetch }).GET('/v1/swaps/{swap_id}', { params: { path: { swap_id: 'swap-x' } } });
      return retries.map((r) => r.delayMs);
    };
    assert.deepEqual(await delays(0), [5, 10, 20, 25]);
    assert.deepEqual(await delays(1), [10, 20, 40, 50]);
  });

  test('400 is not retried: MpfInvalidRequestError names the field; the caller signal ends a call without retrying', async () => {
    script = [{ status: 400, body: { error: 'invalid_request', message: 'amount: must be positive', field: 'amount' } }];
    const { mpf } = client();
    const err = await mpf.startSwap({ ...BODY, amount: -1 }).then(() => undefined, (e: unknown) => e);
    assert.ok(err instanceof MpfInvalidRequestError);
    assert.deepEqual([err.field, err.status, err.message, seen.length], ['amount', 400, 'amount: must be positive', 1]);

    script = ['hang'];
    const abort = new AbortController();
    setTimeout(() => abort.abort(new Error('caller gave up')), 100);
    await assert.rejects(mpf.getSwap('swap-x', { signal: abort.signal }), /caller gave up/);
    assert.equal(seen.length, 2, 'not retried');
  });

  test('the bare typed client (createGatewayClient without retry) retries nothing and adds no key', async () => {
    script = [unavailable()];
    const gw = createGatewayClient({ baseUrl: base, apiKey: 'k' });
    const r = await gw.POST('/v1/swaps', { body: BODY });
    assert.equal(r.response.status, 503);
    assert.equal(seen.length, 1);
    assert.equal(seen[0]!.headers['idempotency-key'], undefined);
  });

  test('the PIN goes with the pin_token, never the API key; a GET carries no Idempotency-Key', async () => {
    script = [{ status: 200, body: { outcome: 'confirmed', state: 'confirmed' } }, { status: 200, body: STARTED }];
    const { mpf } = client();
    assert.deepEqual(await mpf.submitPin('swap-order-1', 'the-pin-token', '1234'), { outcome: 'confirmed', state: 'confirmed' });
    assert.equal(seen[0]!.url, '/v1/swaps/swap-order-1/pin');
    assert.equal(seen[0]!.headers.authorization, 'Bearer the-pin-token');
    assert.equal(seen[0]!.headers['x-api-key'], undefined);
    assert.deepEqual(JSON.parse(seen[0]!.body), { wallet_pin: '1234' });
    await mpf.getSwap('swap-order-1');
    assert.equal(seen[1]!.headers['idempotency-key'], undefined);
  });

  test("resolveFlow posts the resolution with an Idempotency-Key and a person's token as Authorization: Bearer (no x-api-key); 409 not_resolvable is its class", async () => {
    const resolution = { outcome: 'confirmed' as const, provider_reference: 'SWP-1', note: 'checked the statement' };
    script = [{ status: 200, body: { ...STARTED, state: 'reconciled' } }, { status: 409, body: { error: 'not_resolvable', message: 'it is confirmed', swap: STARTED } }];
    const mpf = createMpfClient({ baseUrl: base, bearerToken: 'a.person.token', initialDelayMs: 10 });
    assert.equal((await mpf.resolveFlow('swap-order-1', resolution)).state, 'reconciled');
    assert.equal(seen[0]!.method, 'POST');
    assert.equal(seen[0]!.url, '/v1/admin/flows/swap-order-1/resolve');
    assert.equal(seen[0]!.headers.authorization, 'Bearer a.person.token');
    assert.equal(seen[0]!.headers['x-api-key'], undefined);
    assert.match(seen[0]!.headers['idempotency-key'] as string, /^[0-9a-f-]{36}$/);
    assert.deepEqual(JSON.parse(seen[0]!.body), resolution);
    await assert.rejects(mpf.resolveFlow('swap-order-1', resolution), (err: unknown) => err instanceof ERROR_CLASSES.not_resolvable && err.swap?.state === 'awaiting_pin');
  });
});

describe('errors', () => {
  /** An answer as openapi-fetch hands it on: the response, and its body already read. */
  const from = (status: number, body: unknown, key?: string) =>
    MpfApiError.from(new Response(null, { status, headers: { 'x-request-id': 'r-1', 'retry-after': '7' } }), body, key);

  test('each error code becomes its class, carrying what the body says; a duplicate carries the existing swap', () => {
    const dup = from(409, { error: 'duplicate', message: 'exists', swap: STARTED }, 'key-1');
    assert.ok(dup instanceof MpfDuplicateError);
    assert.equal(dup.swap?.swap_id, 'swap-order-1');
    assert.deepEqual([dup.code, dup.status, dup.requestId, dup.idempotencyKey, dup.retryAfterSeconds], ['duplicate', 409, 'r-1', 'key-1', 7]);
    for (const [code, Class] of Object.entries(ERROR_CLASSES)) {
      const err = from(400, { error: code, message: `m-${code}` });
      assert.ok(err instanceof Class, code);
      assert.equal(err.code, code);
      assert.equal(err.message, `m-${code}`);
    }
  });

  test('a code this version does not know is a plain MpfApiError; a body that is not the error shape is http_<status>', () => {
    const unknown = from(418, { error: 'teapot', message: 'short and stout' });
    assert.equal(unknown.constructor, MpfApiError);
    assert.equal(unknown.code, 'teapot');
    const html = from(502, '<html>bad gateway</html>');
    assert.equal(html.code, 'http_502');
  });

  test('every error code the gateway answers has its own class (read from the gateway sources)', () => {
    const dir = path.join(ROOT, 'src', 'starter', 'gateway');
    const files = [...fs.readdirSync(dir).map((f) => path.join(dir, f)), ...fs.readdirSync(path.join(dir, 'routes')).map((f) => path.join(dir, 'routes', f))].filter((f) => f.endsWith('.ts'));
    const codes = new Set<string>();
    for (const f of files) {
      const text = fs.readFileSync(f, 'utf8');
      for (const m of text.matchAll(/sendError\([^,]+,[^,]+,\s*(?:[^']*\?\s*)?'([a-z_]+)'(?:\s*:\s*'([a-z_]+)')?/g)) [m[1], m[2]].forEach((c) => c && codes.add(c));
      for (const m of text.matchAll(/error: (?:z\.literal\()?'([a-z_]+)'/g)) codes.add(m[1]!);
      for (const m of text.matchAll(/error: z\.enum\(\[([^\]]+)\]/g)) for (const c of m[1]!.matchAll(/'([a-z_]+)'/g)) codes.add(c[1]!);
    }
    // /readyz answers its own health body (not an error of the API): not for the client.
    for (const c of ['no_worker_polling']) codes.delete(c);
    assert.ok(codes.size >= 20 && codes.has('temporal_persistence_unavailable') && codes.has('idempotency_key_in_use'), `read the sources: ${[...codes].join(', ')}`);
    assert.deepEqual([...codes].filter((c) => !(c in ERROR_CLASSES)).sort(), [], 'codes without a class in src/http-client/errors.ts');
  });
});
