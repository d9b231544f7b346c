/**
 * The production topology's identity provider (node-oidc-provider, a process of `mpf cluster up`):
 * its people sign in with their passwords on its login page and get JWT access tokens for the
 * Temporal API with Temporal's `permissions` claim; its machine clients (workers, gateways, admin
 * tools) get theirs with client credentials; every token verifies against its JWKS; wrong
 * passwords, unknown users and wrong client secrets are refused. `mpf cluster up` is started once
 * for this file (1 worker, 1 gateway), as users start it (MPF_CLUSTER_AUTH unset: every call to the
 * Temporal API authorised by these tokens, the default); if it cannot start, every test fails
 * (never skips).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { renewingToken } from '../../src/temporal/tokens';
import { IDP_MACHINE_CLIENTS, IDP_PEOPLE, idpSecretFiles, TEMPORAL_AUDIENCE, type MachineClientId, type PersonId } from '../../tools/cluster/idp';
import { LoginRefused, personLogin } from '../../tools/cluster/login';
import type { ClusterInfo } from '../../tools/cluster/state';
import { http } from '../helpers/gateway';
import { cleanUpCluster, startClusterForTest, type MpfProcess } from '../helpers/processes';
import type * as JoseNs from 'jose' with { 'resolution-mode': 'import' };

const UP_TIMEOUT_MS = 15 * 60_000;

let stateDir: string;
let up: MpfProcess;
let info: ClusterInfo;

type Jose = typeof JoseNs;
const secretOf = (file: string) => fs.readFileSync(path.join(info.secretsDir, file), 'utf8').trim();
const password = (p: PersonId) => secretOf(idpSecretFiles.password(p));
const clientSecret = (c: MachineClientId) => secretOf(idpSecretFiles.clientSecret(c));

/** The token's claims, once its signature, issuer, audience and lifetime are verified against the IdP's JWKS. */
async function verified(token: string): Promise<Record<string, unknown>> {
  const jose = (await import('jose')) as Jose;
  const { payload } = await jose.jwtVerify(token, jose.createRemoteJWKSet(new URL(info.idp!.jwksUrl)), { issuer: info.idp!.issuer, audience: TEMPORAL_AUDIENCE });
  return payload;
}

describe('the identity provider of mpf cluster up (node-oidc-provider): people and machine clients get JWTs with Temporal permissions', () => {
  before(
    async () => {
      const cluster = startClusterForTest({ prefix: 'cluster-auth', workers: 1, gateways: 1, env: { MPF_CLUSTER_AUTH: undefined }, timeoutMs: UP_TIMEOUT_MS });
      ({ up, stateDir } = cluster);
      info = await cluster.ready;
    },
    { timeout: UP_TIMEOUT_MS + 60_000 },
  );

  after(() => cleanUpCluster(up, stateDir));

  test('up starts the IdP on loopback, prints it, and keeps the passwords and client secrets in 0600 files, never printed', async () => {
    assert.ok(info.idp, 'cluster.json names the identity provider');
    assert.equal(info.auth, true, 'by default the Temporal API authorises every call by the IdP\'s tokens');
    assert.match(info.idp.issuer, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.match(up.output(), new RegExp(`identity provider\\s+${info.idp.issuer.replace(/[.]/g, '\\.')}`));
    const discovery = await http('GET', `${info.idp.issuer}/.well-known/openid-configuration`);
    assert.equal(discovery.status, 200);
    assert.equal(discovery.json.issuer, info.idp.issuer);
    assert.ok((discovery.json.grant_types_supported as string[]).includes('client_credentials'));
    for (const f of [...IDP_PEOPLE.map((p) => idpSecretFiles.password(p.id)), ...IDP_MACHINE_CLIENTS.map((c) => idpSecretFiles.clientSecret(c.id)), idpSecretFiles.signingKey]) {
      const st = fs.statSync(path.join(info.secretsDir, f));
      assert.equal(st.mode & 0o777, 0o600, f);
      assert.ok(!up.output().includes(secretOf(f)), `${f} is never printed`);
    }
  });

  test("each person signs in on the IdP's login page and gets a JWT for the Temporal API carrying their permissions", async () => {
    const want: Record<PersonId, string[]> = { viewer: ['default:read'], operator: ['default:admin'], administrator: ['temporal-system:admin', 'default:admin'], support: ['default:read'], finance: ['default:read'] };
    for (const p of IDP_PEOPLE) {
      const t = await personLogin({ issuer: info.idp!.issuer, user: p.id, password: password(p.id) });
      const claims = await verified(t.accessToken);
      assert.equal(claims.sub, p.id);
      assert.deepEqual(claims.permissions, want[p.id]);
      assert.ok(t.expiresAt > Date.now());
    }
  });

  test('a wrong password, an unknown user and a password of another person are refused', async () => {
    const issuer = info.idp!.issuer;
    await assert.rejects(personLogin({ issuer, user: 'operator', password: 'not-the-password' }), LoginRefused);
    await assert.rejects(personLogin({ issuer, user: 'mallory', password: password('operator') }), LoginRefused);
    await assert.rejects(personLogin({ issuer, user: 'operator', password: password('viewer') }), /unknown user or wrong password/);
  });

  test('the machine clients get theirs with client credentials (workers worker+write, gateways write, admin tools the cluster), and a wrong secret is refused naming the settings', async () => {
    for (const c of IDP_MACHINE_CLIENTS) {
      const t = await renewingToken({ issuer: info.idp!.issuer, clientId: c.id, clientSecret: clientSecret(c.id) });
      try {
        const claims = await verified(t.current());
        assert.equal(claims.sub, c.id);
        assert.deepEqual(claims.permissions, c.permissions);
      } finally {
        t.stop();
      }
    }
    await assert.rejects(renewingToken({ issuer: info.idp!.issuer, clientId: 'mpf-gateway', clientSecret: clientSecret('mpf-worker') }), /refused a token to client mpf-gateway.*TEMPORAL_OIDC_CLIENT_SECRET/);
  });
});
