/**
 * People at the gateway's API: with GATEWAY_OIDC_* set, a person signed in at the identity
 * provider acts on /v1/admin/* with their access token and is recorded by their subject; the
 * token's permissions claim decides (admin on the namespace: operator; read: read_only, which
 * reads the lists and views and is refused every action); no person starts or cancels a flow;
 * forged, tampered, expired and other-issuer tokens are 401; an IdP whose keys cannot be fetched is 503 while API keys keep working; the gateway's /codec decodes for a person
 * who may read the namespace. The IdP is the topology's own, node-oidc-provider
 * (tools/cluster/idp-server.ts), run as a process of its own; people sign in on its login page
 * (tools/cluster/login.ts); the stack is the real one (Temporal dev server, simulator, worker).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { defaultPayloadConverter } from '@temporalio/common';
import type { FastifyInstance } from 'fastify';
import { KeyringSource, newKey } from '../../src/auth/keyring';
import { AesGcmCodec } from '../../src/codec/aes-gcm-codec';
import { payloadToJson } from '../../src/codec/codec-server';
import { generateDevKeys } from '../../src/codec/keys';
import { loadEnv } from '../../src/config/env';
import { buildGateway } from '../../src/starter/gateway/app';
import { personTokensFromEnv } from '../../src/starter/gateway/main';
import { freePort } from '../../src/temporal/ports';
import { prepareIdpSecrets, TEMPORAL_AUDIENCE, type PersonId } from '../../tools/cluster/idp';
import { personLogin } from '../../tools/cluster/login';
import { linkBody, uniqueRef } from '../helpers/fixtures';
import { gatewayCaller, type GatewayHarness, http, startGatewayStack, stopOwnTemporal } from '../helpers/gateway';
import { IdpProcess } from '../helpers/idp-process';
import { eventually } from '../helpers/stack';
import type * as JoseNs from 'jose' with { 'resolution-mode': 'import' };

const CODEC_TOKEN = 'gateway-person-codec-token-0123456789';
const operatorKey = newKey({ id: 'ops-key', role: 'operator', label: 'on call' });
const backendKey = newKey({ id: 'shop-backend', role: 'backend' });
const JWT = /eyJ[\w-]{10,}\.[\w-]{10,}\./;

describe('people sign in at the gateway\'s operator routes with their access token', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mpf-gw-person-'));
  let idp: IdpProcess;
  let h: GatewayHarness;
  let jose: typeof JoseNs;
  let idpKey: JoseNs.CryptoKey;
  const tokens = {} as Record<PersonId, string>;

  /** A token signed with the IdP's own key (what a real one is, but with the claims the test chooses). */
  const signed = async (o: { iss?: string; aud?: string; sub?: string; permissions?: string[]; exp?: number; key?: JoseNs.CryptoKey; kid?: string }) =>
    new jose.SignJWT({ permissions: o.permissions ?? ['default:admin'] })
      .setProtectedHeader({ alg: 'ES256', kid: o.kid ?? String(idp.secrets.signingKey.kid) })
      .setSubject(o.sub ?? 'operator')
      .setIssuer(o.iss ?? idp.issuer)
      .setAudience(o.aud ?? TEMPORAL_AUDIENCE)
      .setIssuedAt(Math.floor(Date.now() / 1000) - 600)
      .setExpirationTime(o.exp ?? Math.floor(Date.now() / 1000) + 300)
      .sign(o.key ?? idpKey);
  const asPerson = (token: string, method: string, urlPath: string, body?: unknown) =>
    http(method, `${h.gw.url}${urlPath}`, { headers: { authorization: `Bearer ${token}` }, ...(body !== undefined ? { body } : {}) });
  const asKey = (key: string, method: string, urlPath: string, body?: unknown) => gatewayCaller(h.gw.url, key).api(method, urlPath, body);

  /** A payment link notified for another amount: money may have moved, nothing settles it. */
  const linkNeedingReconciliation = async (): Promise<{ linkId: string; paymentRef: string }> => {
    const created = await asKey(backendKey.key, 'POST', '/v1/payment-links', linkBody(uniqueRef('person-recon')));
    assert.equal(created.status, 201, created.text);
    const linkId = created.json.link_id as string;
    const n = { event: 'collection.successful', data: { payment_ref: created.json.payment_ref, status: 'successful', notification_id: 'n-1', amount: 1 } };
    await h.stack.mpf.deliverNotification(linkId, n, JSON.stringify(n));
    await eventually(async () => (await asKey(backendKey.key, 'GET', `/v1/payment-links/${linkId}`)).json.state === 'needs_reconciliation', 15_000, 'needs_reconciliation');
    return { linkId, paymentRef: created.json.payment_ref as string };
  };

  before(async () => {
    jose = (await import('jose')) as typeof JoseNs;
    const secrets = prepareIdpSecrets(dir, false);
    idpKey = (await jose.importJWK(secrets.signingKey as JoseNs.JWK, 'ES256')) as JoseNs.CryptoKey;
    idp = new IdpProcess(dir, await freePort(), secrets);
    await idp.start();
    for (const user of ['viewer', 'operator', 'administrator'] as const) {
      tokens[user] = (await personLogin({ issuer: idp.issuer, user, password: secrets.passwords[user] })).accessToken;
    }
    // The settings as `mpf gateway` reads them from its environment.
    const personTokens = personTokensFromEnv(loadEnv({ GATEWAY_OIDC_ISSUER: idp.issuer, GATEWAY_OIDC_AUDIENCE: TEMPORAL_AUDIENCE }));
    assert.ok(personTokens);
    const keys = generateDevKeys('person');
    h = await startGatewayStack({
      keys,
      gateway: {
        keyring: new KeyringSource({ json: JSON.stringify([operatorKey.entry, backendKey.entry]) }),
        personTokens,
        codec: { keys, authToken: CODEC_TOKEN, corsOrigins: ['http://127.0.0.1:1'] },
      },
    }).catch(async (e: unknown) => {
      await idp.stop();
      throw e;
    });
  });

  after(async () => {
    await h?.stop();
    await idp?.stop();
    await stopOwnTemporal();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('an operator signed in at the IdP resolves a reconciliation, and the audit record names them by subject', async () => {
    const { linkId, paymentRef } = await linkNeedingReconciliation();
    const listed = await asPerson(tokens.operator, 'GET', '/v1/admin/reconciliations?kind=payment_link');
    assert.equal(listed.status, 200, listed.text);
    const r = await asPerson(tokens.operator, 'POST', `/v1/admin/flows/${linkId}/resolve`, { outcome: 'paid', provider_reference: paymentRef, operator: 'Omar', note: 'statement shows 1 NGN; refunded' });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.state, 'reconciled');
    assert.equal(r.json.reconciliation.operator, 'person operator');
    assert.match(r.json.reconciliation.note, /\[named in the request: Omar\]$/);
    const final = (await h.stack.client.workflow.getHandle(linkId).result()) as { reconciliation?: { operator?: string } };
    assert.equal(final.reconciliation?.operator, 'person operator', "the flow's own record names the person");
  });

  test('an operator pauses and resumes the provider as a person, recorded by subject in the guard\'s audit', async () => {
    const paused = await asPerson(tokens.operator, 'POST', '/v1/admin/provider/pause', { reason: 'person drill' });
    try {
      assert.equal(paused.status, 200, paused.text);
      assert.equal(paused.json.paused.by, 'person operator');
    } finally {
      const resumed = await asPerson(tokens.administrator, 'POST', '/v1/admin/provider/resume');
      assert.equal(resumed.status, 200, resumed.text);
      assert.deepEqual(resumed.json.audit.slice(-2).map((a: { action: string; by: string }) => `${a.action} by ${a.by}`), ['pause by person operator', 'resume by person administrator']);
    }
  });

  test('a viewer, and a machine client that only writes, are refused with 403 naming the permission they lack', async () => {
    const viewer = await asPerson(tokens.viewer, 'POST', '/v1/admin/provider/pause', { reason: 'not mine' });
    assert.equal(viewer.status, 403, viewer.text);
    assert.equal(viewer.json.error, 'forbidden');
    assert.match(viewer.json.message, /needs the role operator: a person needs default:admin or temporal-system:admin in the access token's permissions claim; person viewer holds default:read \(role read_only\)/);
    assert.match(String(viewer.headers['www-authenticate']), /insufficient_scope/);
    assert.equal((await asPerson(tokens.viewer, 'GET', '/v1/webhook_endpoints')).status, 403, 'an operator view with URLs in it stays the operator\'s');
    assert.equal((await asPerson(tokens.viewer, 'GET', '/v1/admin/reconciliations')).status, 200, 'the queue is a view a reader may see');

    const res = await fetch(`${idp.issuer}/token`, {
      method: 'POST',
      headers: { authorization: `Basic ${Buffer.from(`mpf-gateway:${idp.secrets.clientSecrets['mpf-gateway']}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials' }),
    });
    const machine = ((await res.json()) as { access_token: string }).access_token;
    const refused = await asPerson(machine, 'POST', '/v1/admin/provider/pause', { reason: 'a gateway may not' });
    assert.equal(refused.status, 403, refused.text);
    assert.match(refused.json.message, /holds default:write \(role read_only\)/);
    const status = await asKey(operatorKey.key, 'GET', '/v1/admin/provider');
    assert.equal(status.json.paused, undefined, 'nothing was paused');
  });

  test("the mpf CLI's x-api-key header carries a person's token too (MPF_API_KEY set to it), checked the same way", async () => {
    const listed = await asKey(tokens.operator, 'GET', '/v1/admin/reconciliations');
    assert.equal(listed.status, 200, listed.text);
    const viewer = await asKey(tokens.viewer, 'POST', '/v1/admin/provider/pause', { reason: 'not mine' });
    assert.equal(viewer.status, 403, viewer.text);
    assert.match(viewer.json.message, /person viewer holds default:read/);
  });

  test('a person reads the lists and views with the read permission, and never starts or cancels a flow', async () => {
    const swaps = await asPerson(tokens.viewer, 'GET', '/v1/swaps');
    assert.equal(swaps.status, 200, swaps.text);
    assert.equal((await asPerson(tokens.viewer, 'GET', '/v1/admin/provider')).status, 200);
    const cancelled = await asPerson(tokens.operator, 'POST', '/v1/swaps/swap-not-there/cancel');
    assert.equal(cancelled.status, 403, cancelled.text);
    assert.match(cancelled.json.message, /starting and cancelling flows takes the merchant backend's API key \(role backend\); a person's access token may not; person operator holds default:admin/);
  });

  test('forged, tampered, expired, other-issuer and other-audience tokens are refused with 401 naming why', async () => {
    const other = (await jose.generateKeyPair('ES256')).privateKey;
    const [header, , signature] = tokens.viewer.split('.');
    const adminClaims = Buffer.from(JSON.stringify({ ...jose.decodeJwt(tokens.viewer), permissions: ['default:admin'] })).toString('base64url');
    const cases: Array<[string, string, RegExp, string]> = [
      ['forged with the IdP\'s key id', await signed({ key: other }), /not signed by the identity provider/, 'unauthorized'],
      ["a viewer's token with the operator's permissions pasted in", `${header}.${adminClaims}.${signature}`, /not signed by the identity provider/, 'unauthorized'],
      ['expired, signed by the IdP', await signed({ exp: Math.floor(Date.now() / 1000) - 60 }), /the access token is expired/, 'token_expired'],
      ['another issuer, signed by the IdP\'s key', await signed({ iss: 'http://127.0.0.1:9/another-idp' }), /issued by another identity provider than http:\/\/127\.0\.0\.1/, 'unauthorized'],
      ['another issuer and another key', await signed({ iss: 'https://idp.example.com', key: other, kid: 'theirs' }), /issued by another identity provider/, 'unauthorized'],
      ['another audience', await signed({ aud: 'urn:some-other-api' }), /not for audience urn:merchant-payment-flows:temporal/, 'unauthorized'],
      ['not a JWT at all, but shaped like one', 'eyJub3Q.a.jwt', /not a signed JWT/, 'unauthorized'],
    ];
    for (const [what, token, why, code] of cases) {
      const r = await asPerson(token, 'POST', '/v1/admin/provider/pause', { reason: what });
      assert.equal(r.status, 401, `${what}: ${r.text}`);
      assert.equal(r.json.error, code, what);
      assert.match(r.json.message, why, what);
      assert.doesNotMatch(r.text, JWT, `${what}: the answer echoes no token`);
    }
    assert.equal((await asKey(operatorKey.key, 'GET', '/v1/admin/provider')).json.paused, undefined, 'nothing was paused');
  });

  test('API keys keep working unchanged, and a person\'s token is no API key on the backend routes', async () => {
    const byKey = await asKey(operatorKey.key, 'POST', '/v1/admin/provider/pause', { reason: 'key drill' });
    assert.equal(byKey.status, 200, byKey.text);
    assert.equal(byKey.json.paused.by, 'key ops-key (on call)');
    assert.equal((await asKey(operatorKey.key, 'POST', '/v1/admin/provider/resume')).status, 200);
    assert.equal((await asKey(backendKey.key, 'POST', '/v1/admin/provider/pause', { reason: 'no' })).status, 403);

    const started = await asPerson(tokens.operator, 'POST', '/v1/payment-links', linkBody(uniqueRef('person-start')));
    assert.equal(started.status, 403, started.text);
    assert.match(started.json.message, /starting and cancelling flows takes the merchant backend's API key/);
    const missing = await http('POST', `${h.gw.url}/v1/admin/provider/pause`, { body: { reason: 'x' } });
    assert.equal(missing.status, 401);
    assert.match(missing.json.message, /or a person's access token as Authorization: Bearer/);
  });

  test("the gateway's /codec decodes for a person who may read the namespace (Temporal Web's passAccessToken), and only for them", async () => {
    const encrypted = await new AesGcmCodec(h.stack.keys).encode([defaultPayloadConverter.toPayload({ note: 'for-people' })]);
    const body = { payloads: encrypted.map(payloadToJson) };
    const decode = (token: string, namespace = 'default') => http('POST', `${h.gw.url}/codec/decode`, { headers: { authorization: `Bearer ${token}`, 'x-namespace': namespace }, body });
    for (const user of ['viewer', 'operator'] as const) {
      const r = await decode(tokens[user]);
      assert.equal(r.status, 200, `${user}: ${r.text}`);
      assert.match(Buffer.from(r.json.payloads[0].data, 'base64').toString(), /for-people/);
    }
    const elsewhere = await decode(tokens.viewer, 'payments-eu');
    assert.equal(elsewhere.status, 403, elsewhere.text);
    assert.match(elsewhere.json.error, /viewer may not read namespace payments-eu/);
    assert.equal((await decode(await signed({ exp: Math.floor(Date.now() / 1000) - 60 }))).status, 401);
    assert.equal((await decode(CODEC_TOKEN)).status, 200, 'the codec token still works');
  });

  test('with the IdP down, people are answered 503 naming it while API keys keep working, and it recovers when the IdP is back', async () => {
    // A second gateway on the same stack that has not fetched the IdP's keys yet.
    const fresh: FastifyInstance = await buildGateway({
      mpf: h.stack.mpf,
      keyring: new KeyringSource({ json: JSON.stringify([operatorKey.entry, backendKey.entry]) }),
      personTokens: { issuer: idp.issuer, audience: TEMPORAL_AUDIENCE },
    });
    await fresh.listen({ host: '127.0.0.1', port: 0 });
    const freshUrl = `http://127.0.0.1:${(fresh.server.address() as AddressInfo).port}`;
    try {
      await idp.stop();
      const down = await http('GET', `${freshUrl}/v1/admin/provider`, { headers: { authorization: `Bearer ${tokens.operator}` } });
      assert.equal(down.status, 503, down.text);
      assert.equal(down.json.error, 'identity_provider_unavailable');
      assert.match(down.json.message, new RegExp(`the identity provider ${idp.issuer} is unavailable: its discovery document .* cannot be fetched .*API keys keep working`));
      assert.ok(Number(down.headers['retry-after']) > 0, 'Retry-After');
      const codecDown = await http('POST', `${h.gw.url}/codec/decode`, { headers: { authorization: `Bearer ${await signed({ key: (await jose.generateKeyPair('ES256')).privateKey, kid: 'rotated' })}`, 'x-namespace': 'default' }, body: { payloads: [] } });
      assert.ok([401, 503].includes(codecDown.status), `a key the gateway does not know, with the IdP down, is never let through: ${codecDown.status}`);
      // API keys do not need the IdP.
      const byKey = await http('GET', `${freshUrl}/v1/admin/provider`, { headers: { 'x-api-key': operatorKey.key } });
      assert.equal(byKey.status, 200, byKey.text);
      // The first gateway checked tokens before: it keeps the IdP's keys it fetched (for at most 10 minutes).
      assert.equal((await asPerson(tokens.operator, 'GET', '/v1/admin/provider')).status, 200);

      await idp.start();
      const back = await http('GET', `${freshUrl}/v1/admin/provider`, { headers: { authorization: `Bearer ${tokens.operator}` } });
      assert.equal(back.status, 200, back.text);
    } finally {
      await fresh.close();
      if (!idp.running) await idp.start();
    }
  });

  test('no token reaches the gateway\'s logs', () => {
    const logs = h.logs.join('\n');
    assert.ok(logs.includes('"person_sub":"operator"'), 'the person is named in the logs');
    assert.doesNotMatch(logs, JWT);
  });
});
