/**
 * A real `mpf gateway` process configured from its environment with GATEWAY_OIDC_ISSUER and
 * GATEWAY_OIDC_AUDIENCE, against the topology's identity provider (node-oidc-provider) run as a
 * process of its own: it says where people's tokens are taken, the operator's token lists the
 * reconciliations and the viewer's is refused, its /codec decodes for a signed-in person; started
 * while the IdP is down it starts anyway, warns, serves API keys and answers people 503 until the
 * IdP is back. No token appears in its output.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { defaultPayloadConverter } from '@temporalio/common';
import { newKey } from '../../src/auth/keyring';
import { AesGcmCodec } from '../../src/codec/aes-gcm-codec';
import { payloadToJson } from '../../src/codec/codec-server';
import { generateDevKeys } from '../../src/codec/keys';
import { freePort } from '../../src/temporal/ports';
import { prepareIdpSecrets, TEMPORAL_AUDIENCE, type PersonId } from '../../tools/cluster/idp';
import { personLogin } from '../../tools/cluster/login';
import { http } from '../helpers/http';
import { IdpProcess } from '../helpers/idp-process';
import { type MpfProcess, spawnMpf } from '../helpers/processes';
import { getTestTemporal } from '../helpers/temporal';

const operatorKey = newKey({ id: 'ops-key', role: 'operator' });
const CODEC_TOKEN = 'person-login-codec-token-0123456789';
const JWT = /eyJ[\w-]{10,}\.[\w-]{10,}\./;

describe("`mpf gateway` with GATEWAY_OIDC_* takes people's access tokens", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mpf-gw-login-'));
  const keys = generateDevKeys('login');
  const gateways: MpfProcess[] = [];
  let idp: IdpProcess;
  let temporalAddress: string;
  const tokens = {} as Record<PersonId, string>;

  const startGateway = async (): Promise<{ url: string; gw: MpfProcess }> => {
    const gw = spawnMpf(['gateway', '--port', '0'], {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      LOG_LEVEL: 'info',
      TEMPORAL_ADDRESS: temporalAddress,
      TEMPORAL_TASK_QUEUE: `person-login-${process.pid}`,
      PAYLOAD_ENCRYPTION_KEYS: keys,
      GATEWAY_API_KEYS: JSON.stringify([operatorKey.entry]),
      CODEC_AUTH_TOKEN: CODEC_TOKEN,
      GATEWAY_OIDC_ISSUER: idp.issuer,
      GATEWAY_OIDC_AUDIENCE: TEMPORAL_AUDIENCE,
    });
    gateways.push(gw);
    const [, url] = (await gw.waitFor(/listening on (http:\/\/\S+)/, 60_000)) as unknown as [string, string];
    return { url, gw };
  };
  const asPerson = (url: string, token: string, p: string) => http('GET', `${url}${p}`, { headers: { authorization: `Bearer ${token}` } });

  before(async () => {
    temporalAddress = (await getTestTemporal()).address;
    const secrets = prepareIdpSecrets(dir, false);
    idp = new IdpProcess(dir, await freePort(), secrets);
    await idp.start();
    for (const user of ['viewer', 'operator'] as const) tokens[user] = (await personLogin({ issuer: idp.issuer, user, password: secrets.passwords[user] })).accessToken;
  });

  after(async () => {
    for (const gw of gateways) await gw.kill('SIGTERM');
    await idp?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('it says where people are taken, lets the operator in, refuses the viewer, and decodes /codec for a person', async () => {
    const { url, gw } = await startGateway();
    await gw.waitFor(/people's access tokens from http:\/\/127\.0\.0\.1:\d+ \(audience urn:merchant-payment-flows:temporal, claim permissions, namespace default\) accepted on the API and \/codec; the console at \/console\/ signs people in as client mpf-console/);
    const ok = await asPerson(url, tokens.operator, '/v1/admin/reconciliations?limit=1');
    assert.equal(ok.status, 200, ok.text);
    // The viewer reads the queue, but may not act: pausing the provider is the operator's.
    assert.equal((await asPerson(url, tokens.viewer, '/v1/admin/reconciliations?limit=1')).status, 200);
    const viewer = await http('POST', `${url}/v1/admin/provider/pause`, { headers: { authorization: `Bearer ${tokens.viewer}` }, body: { reason: 'a viewer tries' } });
    assert.equal(viewer.status, 403, viewer.text);
    assert.match(viewer.json.message, /person viewer holds default:read \(role read_only\)/);

    const encrypted = await new AesGcmCodec(keys).encode([defaultPayloadConverter.toPayload('decoded for a person')]);
    const decoded = await http('POST', `${url}/codec/decode`, { headers: { authorization: `Bearer ${tokens.viewer}`, 'x-namespace': 'default' }, body: { payloads: encrypted.map(payloadToJson) } });
    assert.equal(decoded.status, 200, decoded.text);
    assert.match(Buffer.from(decoded.json.payloads[0].data, 'base64').toString(), /decoded for a person/);
    assert.match(gw.output(), /"person_sub":"operator"/, "the person's request is logged by subject");
    assert.doesNotMatch(gw.output(), JWT, 'no token in its output');
  });

  test('started while the IdP is down it starts, warns, serves API keys and answers people 503 until the IdP is back', async () => {
    await idp.stop();
    try {
      const { url, gw } = await startGateway();
      await gw.waitFor(/WARNING: the identity provider http:\/\/127\.0\.0\.1:\d+ is unavailable: .*people's access tokens are answered 503 until it is reachable; API keys keep working/);
      const byKey = await http('GET', `${url}/v1/admin/reconciliations?limit=1`, { headers: { 'x-api-key': operatorKey.key } });
      assert.equal(byKey.status, 200, byKey.text);
      const down = await asPerson(url, tokens.operator, '/v1/admin/reconciliations?limit=1');
      assert.equal(down.status, 503, down.text);
      assert.equal(down.json.error, 'identity_provider_unavailable');
      await idp.start();
      const back = await asPerson(url, tokens.operator, '/v1/admin/reconciliations?limit=1');
      assert.equal(back.status, 200, back.text);
      assert.doesNotMatch(gw.output(), JWT, 'no token in its output');
    } finally {
      if (!idp.running) await idp.start();
    }
  });
});
