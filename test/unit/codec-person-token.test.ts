/**
 * The codec server with `personTokens`: Temporal Web behind its OIDC login sends the signed-in
 * person's access token (passAccessToken), and the plain routes decode for a person who may read
 * the namespace named in X-Namespace; an expired, foreign or other-audience token is 401, a token
 * without read on that namespace 403, both before the body is read; the static codec token and the
 * capability URL keep working. The IdP here is a JWKS served on loopback with a key made by jose.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { defaultPayloadConverter } from '@temporalio/common';
import { AesGcmCodec } from '../../src/codec/aes-gcm-codec';
import { codecWebEndpoint, payloadToJson, personTokenVerifier, startCodecServer, type StartedCodecServer } from '../../src/codec/codec-server';
import { generateDevKeys } from '../../src/codec/keys';
import type * as JoseNs from 'jose' with { 'resolution-mode': 'import' };

const CODEC_TOKEN = 'codec-person-token-test-0123456789';
const ISSUER = 'http://127.0.0.1/idp-under-test';
const AUDIENCE = 'urn:merchant-payment-flows:temporal';
const MARKER = 'decoded-for-a-person';

describe('the codec endpoint authorises a signed-in person by their access token', () => {
  const keys = generateDevKeys('person');
  let jose: typeof JoseNs;
  let idpKey: JoseNs.CryptoKey;
  let otherKey: JoseNs.CryptoKey;
  let jwksServer: http.Server;
  let jwksUrl: string;
  let codec: StartedCodecServer;
  let plain: StartedCodecServer;
  let body: string;

  const token = (o: { permissions?: string[]; key?: JoseNs.CryptoKey; kid?: string; audience?: string; exp?: number | string; sub?: string }) =>
    new jose.SignJWT({ permissions: o.permissions ?? ['default:read'] })
      .setProtectedHeader({ alg: 'ES256', kid: o.kid ?? 'idp-1' })
      .setSubject(o.sub ?? 'viewer')
      .setIssuer(ISSUER)
      .setAudience(o.audience ?? AUDIENCE)
      .setIssuedAt(Math.floor(Date.now() / 1000) - 600)
      .setExpirationTime(o.exp ?? '5m')
      .sign(o.key ?? idpKey);

  const decode = (server: StartedCodecServer, headers: Record<string, string>, path = '/codec/decode') =>
    fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });

  before(async () => {
    jose = (await import('jose')) as typeof JoseNs;
    const pair = await jose.generateKeyPair('ES256', { extractable: true });
    idpKey = pair.privateKey;
    otherKey = (await jose.generateKeyPair('ES256')).privateKey;
    const jwk = { ...(await jose.exportJWK(pair.publicKey)), kid: 'idp-1', alg: 'ES256', use: 'sig' };
    jwksServer = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] })));
    await new Promise<void>((resolve) => jwksServer.listen(0, '127.0.0.1', resolve));
    jwksUrl = `http://127.0.0.1:${(jwksServer.address() as AddressInfo).port}/jwks`;
    codec = await startCodecServer({ port: 0, keys, authToken: CODEC_TOKEN, corsOrigins: ['http://127.0.0.1:1'], personTokens: { issuer: ISSUER, audience: AUDIENCE, jwksUrl } });
    plain = await startCodecServer({ port: 0, keys, authToken: CODEC_TOKEN, corsOrigins: ['http://127.0.0.1:1'] });
    const encrypted = await new AesGcmCodec(keys).encode([defaultPayloadConverter.toPayload({ note: MARKER })]);
    body = JSON.stringify({ payloads: encrypted.map(payloadToJson) });
  });

  after(async () => {
    await codec?.close();
    await plain?.close();
    jwksServer?.close();
  });

  test("a viewer's token decodes payloads of the namespace they may read", async () => {
    const res = await decode(codec, { authorization: `Bearer ${await token({})}`, 'x-namespace': 'default' });
    assert.equal(res.status, 200);
    const out = (await res.json()) as { payloads: Array<{ data: string }> };
    assert.match(Buffer.from(out.payloads[0]!.data, 'base64').toString(), new RegExp(MARKER));
  });

  test('an administrator of the whole cluster decodes any namespace', async () => {
    const res = await decode(codec, { authorization: `Bearer ${await token({ permissions: ['temporal-system:admin'], sub: 'administrator' })}`, 'x-namespace': 'elsewhere' });
    assert.equal(res.status, 200);
  });

  test('a token without read on the namespace named, or with no namespace named, is 403', async () => {
    const viewer = await token({});
    for (const headers of [{ 'x-namespace': 'payments-eu' }, {}] as Array<Record<string, string>>) {
      const res = await decode(codec, { authorization: `Bearer ${viewer}`, ...headers });
      assert.equal(res.status, 403);
      assert.match(((await res.json()) as { error: string }).error, /viewer may not read namespace/);
    }
    const workerOnly = await decode(codec, { authorization: `Bearer ${await token({ permissions: ['default:worker'], sub: 'mpf-worker' })}`, 'x-namespace': 'default' });
    assert.equal(workerOnly.status, 403, 'the worker role reads no payloads');
  });

  test('an expired token, one signed by another key and one for another audience are 401, naming why where it can', async () => {
    const cases: Array<[string, Record<string, string | number | JoseNs.CryptoKey>, RegExp]> = [
      ['expired', { exp: Math.floor(Date.now() / 1000) - 30 }, /expired/],
      ['another key', { key: otherKey, kid: 'elsewhere' }, /not signed by the identity provider/],
      ['another audience', { audience: 'urn:else' }, /invalid/],
    ];
    for (const [what, o, why] of cases) {
      const res = await decode(codec, { authorization: `Bearer ${await token(o)}`, 'x-namespace': 'default' });
      assert.equal(res.status, 401, what);
      assert.match(((await res.json()) as { error: string }).error, why, what);
    }
  });

  test('the static codec token and the capability URL keep working; without personTokens a person\'s token is refused', async () => {
    assert.equal((await decode(codec, { authorization: `Bearer ${CODEC_TOKEN}` })).status, 200);
    const web = new URL(codecWebEndpoint(codec.url, CODEC_TOKEN));
    assert.equal((await decode(codec, {}, `${web.pathname}/decode`)).status, 200);
    const res = await decode(plain, { authorization: `Bearer ${await token({})}`, 'x-namespace': 'default' });
    assert.equal(res.status, 401);
  });

  test("the CORS preflight allows what Temporal Web signed in sends: Authorization, Authorization-Extras (the person's ID token), X-Namespace", async () => {
    const res = await fetch(`${codec.url}/codec/decode`, {
      method: 'OPTIONS',
      headers: { origin: 'http://127.0.0.1:1', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,authorization-extras,content-type,x-namespace' },
    });
    assert.equal(res.status, 204);
    const allowed = (res.headers.get('access-control-allow-headers') ?? '').toLowerCase().split(/,\s*/);
    for (const h of ['authorization', 'authorization-extras', 'content-type', 'x-namespace']) assert.ok(allowed.includes(h), h);
  });

  test('a JWKS URL that is plain http off loopback is refused at start', () => {
    assert.throws(() => personTokenVerifier({ issuer: ISSUER, audience: AUDIENCE, jwksUrl: 'http://idp.example.com/jwks' }), /must be https/);
  });
});
