/**
 * The console's roles and the demo's local sign-in, without a server: who is support, finance or
 * operator from a verified token; the local issuer's tokens verified through PersonTokens with its
 * local key set; a one-time code used once; the local sign-in refused in production and live.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { PersonTokens } from '../../src/auth/person-tokens';
import { LocalSignIn } from '../../src/starter/console/local-sign-in';
import { consoleRoleOf } from '../../src/starter/console/roles';

describe("the console's roles and the demo's local sign-in", () => {
  test('operator follows the admin permission, finance needs the read permission and the finance role, support is read otherwise', () => {
    const role = (permissions: string[], roles?: string[]) => consoleRoleOf({ subject: 's', permissions, ...(roles ? { roles } : {}) }, 'default');
    assert.equal(role(['default:admin']), 'operator');
    assert.equal(role(['temporal-system:admin']), 'operator');
    assert.equal(role(['default:admin'], ['finance']), 'operator');
    assert.equal(role(['default:read'], ['finance']), 'finance');
    assert.equal(role(['default:read'], ['support']), 'support');
    assert.equal(role(['default:read']), 'support');
    assert.equal(role(['default:write']), 'support');
    assert.equal(role(['other:read'], ['finance']), undefined, 'finance in the claim is no permission on the namespace');
    assert.equal(role(['default:worker']), undefined);
  });

  test("the local issuer's tokens verify through PersonTokens with the role's permissions, and a code signs in once", async () => {
    const local = new LocalSignIn('default', {});
    const tokens = new PersonTokens(local.tokenSettings);
    for (const [r, permission] of [['support', 'default:read'], ['finance', 'default:read'], ['operator', 'default:admin']] as const) {
      const { accessToken } = await local.mint(r);
      const v = await tokens.verify(accessToken);
      assert.ok(v.ok, JSON.stringify(v));
      assert.deepEqual(v.person.permissions, [permission]);
      assert.equal(consoleRoleOf(v.person, 'default'), r);
    }
    const stranger = await new PersonTokens(new LocalSignIn('default', {}).tokenSettings).verify((await local.mint('operator')).accessToken);
    assert.equal(stranger.ok, false, "another gateway's key does not verify this one's tokens");
    const code = local.issueCode('finance');
    assert.equal(local.redeem(code), 'finance');
    assert.equal(local.redeem(code), undefined, 'used once');
    assert.equal(local.redeem('made-up'), undefined);
  });

  test('the local sign-in is refused under NODE_ENV=production and MPS_LIVE', () => {
    assert.throws(() => new LocalSignIn('default', { NODE_ENV: 'production' }), /refused under NODE_ENV=production or MPS_LIVE/);
    assert.throws(() => new LocalSignIn('default', { MPS_LIVE: '1' }), /refused under NODE_ENV=production or MPS_LIVE/);
    assert.doesNotThrow(() => new LocalSignIn('default', { MPS_LIVE: '0' }));
  });
});
