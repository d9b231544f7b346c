/**
 * The gateway's log hygiene without Temporal: URLs lose notification tokens, query strings and
 * fragments; request headers never reach a log line; and a route that fails unexpectedly answers
 * a generic 500 while the log keeps only the error, not the request's secrets.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { buildGateway } from '../../src/starter/gateway/app';
import { sanitizeUrl } from '../../src/starter/gateway/logging';
import type { MpfClient } from '../../src/starter/client/mpf-client';
import { createWorkerPino } from '../../src/observability/worker-logger';

const API_KEY = 'logging-test-api-key-0123456789';
const TOKEN = 'Zx9_secretNotificationToken-0123456789abcdefABCDEF';

describe('gateway logs', () => {
  test('strip the token of notification URLs and Temporal Web codec URLs, query strings and fragments', () => {
    assert.equal(sanitizeUrl(`/codec/web/${TOKEN}/decode`), '/codec/web/[redacted]/decode');
    assert.equal(sanitizeUrl(`/v1/notifications/paylink/paylink-o1/${TOKEN}`), '/v1/notifications/paylink/paylink-o1/[redacted]');
    assert.equal(sanitizeUrl(`/v1/notifications/swap/swap-1/${TOKEN}/extra?x=1`), '/v1/notifications/swap/swap-1/[redacted]?[redacted]');
    assert.equal(sanitizeUrl(`/pin/swap-1#token=${TOKEN}`), '/pin/swap-1#[redacted]');
    assert.equal(sanitizeUrl(`/pin/swap-1%23token=${TOKEN}`), '/pin/swap-1#[redacted]');
    assert.equal(sanitizeUrl(`/pin/swap-1?token=${TOKEN}`), '/pin/swap-1?[redacted]');
    assert.equal(sanitizeUrl('/v1/swaps/swap-1'), '/v1/swaps/swap-1');
  });

  test('never contain headers, bodies, tokens or the API key, and a failing route answers a generic 500', async () => {
    const lines: string[] = [];
    // A client whose every call fails: the routes reach it only after authentication.
    const boom = (): never => {
      throw new Error('temporal is down');
    };
    const mpf = {
      verifyToken: boom,
      getSwap: boom,
      startSwap: boom,
      listCategories: boom,
      setPublicUrl: () => undefined,
      pinGate: () => ({ close: async () => undefined }),
    } as unknown as MpfClient;
    const app = await buildGateway({ mpf, apiKey: API_KEY, logger: { level: 'trace', stream: { write: (l: string) => void lines.push(l) } } });
    try {
      const cats = await app.inject({ method: 'GET', url: '/v1/categories', headers: { 'x-api-key': API_KEY, cookie: `session=${TOKEN}` } });
      assert.equal(cats.statusCode, 500);
      assert.deepEqual(cats.json(), { error: 'internal', message: 'internal error; the gateway logged the details' });
      const pin = await app.inject({
        method: 'POST',
        url: '/v1/swaps/swap-1/pin',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        payload: JSON.stringify({ wallet_pin: '918273' }),
      });
      assert.equal(pin.statusCode, 500);
      const notification = await app.inject({ method: 'POST', url: `/v1/notifications/swap/swap-1/${TOKEN}`, payload: 'x' });
      assert.equal(notification.statusCode, 500);
      const missing = await app.inject({ method: 'GET', url: `/nowhere/${TOKEN}?wallet_pin=918273` });
      assert.equal(missing.statusCode, 404);
      assert.ok(!missing.body.includes(TOKEN));
      const badJson = await app.inject({
        method: 'POST',
        url: '/v1/swaps',
        headers: { 'x-api-key': API_KEY, 'content-type': 'application/json' },
        payload: '{"wallet_pin": 918273x}',
      });
      assert.equal(badJson.statusCode, 400);
      assert.ok(!badJson.body.includes('918273'));
    } finally {
      await app.close();
    }
    const text = lines.join('');
    assert.match(text, /temporal is down/, 'the error itself is logged');
    assert.match(text, /\/v1\/notifications\/swap\/swap-1\/\[redacted\]/);
    for (const secret of [TOKEN, API_KEY, '918273', 'authorization', 'x-api-key']) {
      assert.ok(!text.toLowerCase().includes(secret.toLowerCase()), `the log holds ${secret.slice(0, 6)}…`);
    }
  });

  test('share one format with the worker: ISO time, service and pid, no hostname', async () => {
    const gatewayLines: string[] = [];
    const app = await buildGateway({ mpf: { setPublicUrl: () => undefined, pinGate: () => ({ close: async () => undefined }) } as unknown as MpfClient, apiKey: API_KEY, logger: { level: 'info', stream: { write: (l: string) => void gatewayLines.push(l) } } });
    try {
      await app.inject({ method: 'GET', url: '/healthz' });
    } finally {
      await app.close();
    }
    const workerLines: string[] = [];
    createWorkerPino({ level: 'info', destination: { write: (l: string) => void workerLines.push(l) } }).info('hello');
    const shape = (line: string): string[] => {
      const o = JSON.parse(line) as Record<string, unknown>;
      assert.match(String(o.time), /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/, `ISO time in ${line}`);
      assert.equal(o.hostname, undefined, `no hostname in ${line}`);
      assert.equal(o.pid, process.pid);
      return ['level', 'time', 'service', 'pid', 'msg'].filter((k) => k in o);
    };
    assert.ok(gatewayLines.length > 0);
    assert.deepEqual(shape(gatewayLines[0]!), shape(workerLines[0]!));
    assert.equal(JSON.parse(gatewayLines[0]!).service, 'mpf-gateway');
    assert.equal(JSON.parse(workerLines[0]!).service, 'mpf-worker');
  });
});
