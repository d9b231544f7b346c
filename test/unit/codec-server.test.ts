import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { AesGcmCodec } from '../../src/codec/aes-gcm-codec';
import {
  codecWebEndpoint,
  codecWebToken,
  payloadFromJson,
  payloadToJson,
  startCodecServer,
  type StartedCodecServer,
} from '../../src/codec/codec-server';
import { generateDevKeys } from '../../src/codec/keys';
import { createSealer } from '../../src/codec/seal';

const TOKEN = 'codec-operator-token-0123456789';
const UI_ORIGIN = 'http://localhost:8233';
const MARKER = 'PLAINTEXT-MARKER-codec-server';
const PIN = '9876!'; // '!' is outside base64url, so it can only appear if the PIN leaked

describe('codec server over HTTP', () => {
  const keys = generateDevKeys('srv');
  const codec = new AesGcmCodec(keys);
  let server: StartedCodecServer;
  let encryptedBody: string;

  before(async () => {
    server = await startCodecServer({ port: 0, keys, authToken: TOKEN, corsOrigins: [UI_ORIGIN] });
    const payload = defaultPayloadConverter.toPayload({ note: MARKER, wallet_pin: createSealer(keys).seal(PIN) });
    encryptedBody = JSON.stringify({ payloads: (await codec.encode([payload])).map(payloadToJson) });
  });
  after(async () => server?.close());

  const post = (op: string, body: string, headers: Record<string, string> = {}): Promise<Response> =>
    fetch(`${server.url}/codec/${op}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });

  test('answers 401 to a decode request without a token', async () => {
    const res = await post('decode', encryptedBody);
    assert.equal(res.status, 401);
    assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer/);
    assert.ok(!(await res.text()).includes(MARKER));
  });

  test('answers 401 to a decode request with a wrong token or a non-Bearer scheme', async () => {
    for (const authorization of [`Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(0, -1)}`, `Basic ${TOKEN}`, TOKEN, 'Bearer ']) {
      const res = await post('decode', encryptedBody, { authorization });
      assert.equal(res.status, 401, authorization);
    }
  });

  test('decodes encrypted payloads for a caller with the token, leaving sealed fields sealed', async () => {
    const res = await post('decode', encryptedBody, { authorization: `Bearer ${TOKEN}`, 'x-namespace': 'default' });
    assert.equal(res.status, 200);
    const body = (await res.json()) as { payloads: { metadata: Record<string, string>; data?: string }[] };
    assert.equal(body.payloads.length, 1);
    assert.equal(Buffer.from(body.payloads[0]?.metadata.encoding ?? '', 'base64').toString(), 'json/plain');
    const value = defaultPayloadConverter.fromPayload(payloadFromJson(body.payloads[0] as never)) as {
      note: string;
      wallet_pin: string;
    };
    assert.equal(value.note, MARKER);
    assert.match(value.wallet_pin, /^sealed:v1:srv:/);
    assert.ok(!Buffer.from(body.payloads[0]?.data ?? '', 'base64').toString().includes(PIN));
  });

  test('decodes for Temporal Web at its capability path, which never shows the Bearer token', async () => {
    const endpoint = codecWebEndpoint(server.url, TOKEN);
    assert.ok(!endpoint.includes(TOKEN));
    assert.match(endpoint, /\/codec\/web\/[A-Za-z0-9_-]{43}$/);
    const res = await fetch(`${endpoint}/decode`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-namespace': 'default', origin: UI_ORIGIN },
      body: encryptedBody,
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('access-control-allow-origin'), UI_ORIGIN);
    const body = (await res.json()) as { payloads: { metadata: Record<string, string>; data?: string }[] };
    const value = defaultPayloadConverter.fromPayload(payloadFromJson(body.payloads[0] as never)) as { note: string };
    assert.equal(value.note, MARKER);
  });

  test('refuses a capability path with another token, the Bearer token itself, or another server\'s token', async () => {
    for (const token of [`${codecWebToken(TOKEN)}x`, TOKEN, codecWebToken(`${TOKEN}-other`), 'x']) {
      const res = await fetch(`${server.url}/codec/web/${token}/decode`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: encryptedBody });
      assert.equal(res.status, 401, token);
      assert.ok(!(await res.text()).includes(MARKER));
    }
  });

  test('encodes payloads that its own decode and the worker codec can read back', async () => {
    const plain = JSON.stringify({ payloads: [payloadToJson(defaultPayloadConverter.toPayload('hello'))] });
    const res = await post('encode', plain, { authorization: `Bearer ${TOKEN}` });
    assert.equal(res.status, 200);
    const body = (await res.json()) as { payloads: never[] };
    const encoded = payloadFromJson(body.payloads[0] as never);
    assert.equal(Buffer.from(encoded.metadata?.encoding ?? []).toString(), 'binary/encrypted');
    const [decoded] = await codec.decode([encoded]);
    assert.equal(defaultPayloadConverter.fromPayload(decoded as Payload), 'hello');
  });

  test('explains a payload encrypted with a key it does not hold with 422', async () => {
    const foreign = await new AesGcmCodec(generateDevKeys('gone')).encode([defaultPayloadConverter.toPayload(MARKER)]);
    const res = await post('decode', JSON.stringify({ payloads: foreign.map(payloadToJson) }), {
      authorization: `Bearer ${TOKEN}`,
    });
    assert.equal(res.status, 422);
    assert.match(((await res.json()) as { error: string }).error, /key id "gone"/);
  });

  test('answers a body with no payloads (what the Temporal CLI sends when there is nothing) with no payloads', async () => {
    for (const op of ['decode', 'encode']) {
      for (const body of ['{}', JSON.stringify({ payloads: null })]) {
        const res = await post(op, body, { authorization: `Bearer ${TOKEN}` });
        assert.equal(res.status, 200, `${op} ${body}`);
        assert.deepEqual(await res.json(), { payloads: [] });
      }
    }
  });

  test('rejects a payloads field that is not an array with 400', async () => {
    const res = await post('decode', JSON.stringify({ payloads: 'x' }), { authorization: `Bearer ${TOKEN}` });
    assert.equal(res.status, 400);
    assert.match(((await res.json()) as { error: string }).error, /payloads/);
  });

  test('refuses an unauthenticated large body with 401 before reading it', async () => {
    const size = 12 * 1024 * 1024;
    const started = Date.now();
    const answer = await new Promise<{ status: number; sentBytes: number }>((resolve, reject) => {
      const req = httpRequest(`${server.url}/codec/decode`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': String(size) },
      });
      let sentBytes = 0;
      req.on('response', (res) => {
        res.resume();
        resolve({ status: res.statusCode ?? 0, sentBytes });
        req.destroy();
      });
      req.on('error', (e) => (sentBytes > 0 ? undefined : reject(e)));
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      chunk.write('{"payloads":[');
      sentBytes += chunk.length;
      req.write(chunk); // only the first 64 KB: the rest never comes
      setTimeout(() => {
        req.destroy();
        reject(new Error('no answer while the body was still unsent'));
      }, 5_000).unref();
    });
    assert.equal(answer.status, 401);
    assert.ok(answer.sentBytes < size, 'answered before the body was sent');
    assert.ok(Date.now() - started < 5_000);
  });

  test('refuses an authenticated body over 4 MB with 413', async () => {
    const res = await post('decode', JSON.stringify({ payloads: [{ metadata: {}, data: 'A'.repeat(5 * 1024 * 1024) }] }), {
      authorization: `Bearer ${TOKEN}`,
    });
    assert.equal(res.status, 413);
  });

  test('answers the CORS preflight from Temporal Web, allowing Authorization and X-Namespace', async () => {
    const res = await fetch(`${server.url}/codec/decode`, {
      method: 'OPTIONS',
      headers: {
        origin: UI_ORIGIN,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization,content-type,x-namespace',
      },
    });
    assert.equal(res.status, 204);
    assert.equal(res.headers.get('access-control-allow-origin'), UI_ORIGIN);
    assert.match(res.headers.get('access-control-allow-methods') ?? '', /POST/);
    const allowed = (res.headers.get('access-control-allow-headers') ?? '').toLowerCase();
    for (const h of ['authorization', 'content-type', 'x-namespace']) assert.ok(allowed.includes(h), h);
    assert.equal(res.headers.get('access-control-allow-credentials'), 'true');
  });

  test('grants no CORS to an origin that is not configured', async () => {
    const pre = await fetch(`${server.url}/codec/decode`, {
      method: 'OPTIONS',
      headers: { origin: 'http://evil.example', 'access-control-request-method': 'POST' },
    });
    assert.equal(pre.headers.get('access-control-allow-origin'), null);
    const res = await post('decode', encryptedBody, { authorization: `Bearer ${TOKEN}`, origin: 'http://evil.example' });
    assert.equal(res.headers.get('access-control-allow-origin'), null);
  });

  test('adds the CORS header to answers for the configured origin, 401s included', async () => {
    const res = await post('decode', encryptedBody, { origin: UI_ORIGIN });
    assert.equal(res.status, 401);
    assert.equal(res.headers.get('access-control-allow-origin'), UI_ORIGIN);
  });

  test('refuses to start with a short token', async () => {
    await assert.rejects(startCodecServer({ port: 0, keys, authToken: 'short', corsOrigins: [] }), /at least 16/);
  });
});
