/**
 * What a person's access token is worth at the gateway (src/auth/person-tokens.ts): the role its
 * permissions claim maps to on the gateway's namespace, how an action by them is recorded, and the
 * GATEWAY_OIDC_* settings refused at start-up naming the variable.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { gatewayRoleOf, looksLikeJwt, mayRead, personActor, PersonTokens } from '../../src/auth/person-tokens';
import { loadEnv } from '../../src/config/env';
import { personTokensFromEnv } from '../../src/starter/gateway/main';

describe("a person's access token at the gateway", () => {
  test('admin on the namespace or on the whole cluster makes an operator; read or write only read_only; worker alone nothing', () => {
    assert.equal(gatewayRoleOf(['default:admin'], 'default'), 'operator');
    assert.equal(gatewayRoleOf(['temporal-system:admin'], 'default'), 'operator');
    assert.equal(gatewayRoleOf(['default:read'], 'default'), 'read_only');
    assert.equal(gatewayRoleOf(['default:write'], 'default'), 'read_only', 'a person never holds backend');
    assert.equal(gatewayRoleOf(['default:worker'], 'default'), undefined);
    assert.equal(gatewayRoleOf(['payments-eu:admin'], 'default'), undefined, "another namespace's admin is nothing here");
    assert.equal(gatewayRoleOf(['default:ADMIN'], 'default'), 'operator', 'roles are read case-insensitively, as Temporal does');
    assert.equal(gatewayRoleOf(['admin', ':admin', 'default:root'], 'default'), undefined, 'malformed entries grant nothing');
  });

  test('reading payloads needs read, write or admin on the namespace named, or the whole cluster', () => {
    assert.equal(mayRead(['default:read'], 'default'), true);
    assert.equal(mayRead(['default:worker'], 'default'), false);
    assert.equal(mayRead(['default:read'], undefined), false);
    assert.equal(mayRead(['temporal-system:admin'], undefined), true);
  });

  test('an action is recorded as person <name> (sub <subject>), or person <subject> when the token names no one else', () => {
    assert.equal(personActor({ subject: 'operator', permissions: [] }), 'person operator');
    assert.equal(personActor({ subject: '00u1abcd', name: 'ada@example.com', permissions: [] }), 'person ada@example.com (sub 00u1abcd)');
    assert.equal(personActor({ subject: 'x'.repeat(300), permissions: [] }).length, 100);
  });

  test('only a JWT-shaped bearer is taken for a person: API keys never are', () => {
    assert.equal(looksLikeJwt('mpfk_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG'), false);
    assert.equal(looksLikeJwt('eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln'), true);
    assert.equal(looksLikeJwt('a.b.c.d'), false);
    assert.equal(looksLikeJwt(undefined), false);
  });

  test('GATEWAY_OIDC_* unset is off; half-set, or plain http off loopback, is refused naming the variable', () => {
    assert.equal(personTokensFromEnv(loadEnv({})), undefined);
    assert.throws(() => loadEnv({ GATEWAY_OIDC_ISSUER: 'https://idp.example.com' }), /GATEWAY_OIDC_AUDIENCE: is required with GATEWAY_OIDC_ISSUER/);
    assert.throws(() => loadEnv({ GATEWAY_OIDC_AUDIENCE: 'api://x' }), /GATEWAY_OIDC_AUDIENCE: is set but GATEWAY_OIDC_ISSUER is not/);
    assert.throws(() => loadEnv({ GATEWAY_OIDC_ISSUER: 'http://idp.example.com', GATEWAY_OIDC_AUDIENCE: 'api://x' }), /GATEWAY_OIDC_ISSUER: must be https/);
    assert.throws(() => loadEnv({ GATEWAY_OIDC_ISSUER: 'https://idp.example.com', GATEWAY_OIDC_AUDIENCE: 'api://x', GATEWAY_OIDC_JWKS_URL: 'http://keys.example.com/jwks' }), /GATEWAY_OIDC_JWKS_URL: must be https/);
    const s = personTokensFromEnv(loadEnv({ GATEWAY_OIDC_ISSUER: 'https://idp.example.com/oauth2/default', GATEWAY_OIDC_AUDIENCE: 'api://x', GATEWAY_OIDC_PERMISSIONS_CLAIM: 'roles' }));
    assert.deepEqual(s, { issuer: 'https://idp.example.com/oauth2/default', audience: 'api://x', permissionsClaim: 'roles' });
  });

  test('an IdP that cannot be reached is a reason, not an exception, and a token is then 503 naming the IdP', async () => {
    const tokens = new PersonTokens({ issuer: 'http://127.0.0.1:9/idp', audience: 'api://x', timeoutMs: 2_000 });
    assert.match((await tokens.check()) ?? '', /discovery document \(http:\/\/127\.0\.0\.1:9\/idp\/\.well-known\/openid-configuration\) cannot be fetched/);
    const claims = Buffer.from(JSON.stringify({ iss: 'http://127.0.0.1:9/idp', aud: 'api://x', sub: 's', exp: Math.floor(Date.now() / 1000) + 60 })).toString('base64url');
    const header = Buffer.from(JSON.stringify({ alg: 'ES256', kid: 'k' })).toString('base64url');
    const v = await tokens.verify(`${header}.${claims}.c2ln`);
    assert.equal(v.ok, false);
    assert.equal(!v.ok && v.status, 503);
    assert.match(!v.ok ? v.error : '', /the identity provider http:\/\/127\.0\.0\.1:9\/idp is unavailable/);
  });
});
