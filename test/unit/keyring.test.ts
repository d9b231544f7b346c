/** The keyring's rules, without a server: entries checked, keys matched by digest, expiry, roles, and operators named by their key. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Keyring, keyDigest, legacyEntry, newKey, parseKeyring, ROLE_ACCESS } from '../../src/auth/keyring';
import { asResolvedBy } from '../../src/starter/gateway/routes/reconciliation';

describe('the keyring', () => {
  test('matches a presented key by its SHA-256, names its id and role, and refuses it once expired', () => {
    const { key, entry } = newKey({ id: 'checkout', role: 'backend', label: 'checkout service' });
    assert.equal(entry.sha256, keyDigest(key));
    assert.ok(!JSON.stringify(entry).includes(key), 'the entry holds the key in plaintext');
    const ring = new Keyring([entry, { ...newKey({ id: 'old', role: 'backend' }).entry, expires_at: '2020-01-01T00:00:00Z' }]);
    assert.deepEqual(ring.check(key), { kind: 'ok', key: { id: 'checkout', role: 'backend', label: 'checkout service' } });
    assert.deepEqual(ring.check(`${key}x`), { kind: 'unknown' });
    const expiring = new Keyring([{ ...entry, expires_at: '2030-01-01T00:00:00Z' }]);
    assert.equal(expiring.check(key, Date.parse('2029-12-31T23:59:59Z')).kind, 'ok');
    assert.equal(expiring.check(key, Date.parse('2030-01-01T00:00:00Z')).kind, 'expired');
  });

  test('gives read_only reads, backend writes, and the admin routes to operators only', () => {
    assert.deepEqual(ROLE_ACCESS.read_only, ['read']);
    assert.ok(!ROLE_ACCESS.backend.includes('admin'));
    assert.ok(ROLE_ACCESS.operator.includes('admin'));
    assert.equal(legacyEntry('a-legacy-key-0123456789').role, 'operator', 'GATEWAY_API_KEY keeps every right');
  });

  test('refuses bad entries naming the entry, never the secret', () => {
    const { key, entry } = newKey({ id: 'x1', role: 'backend' });
    const bad = (entries: unknown, why: RegExp) => assert.throws(() => parseKeyring(JSON.stringify(entries), 'test'), (e: Error) => why.test(e.message) && !e.message.includes(key));
    bad([{ ...entry, role: 'root' }], /entry x1: role must be one of/);
    bad([entry, entry], /entry x1: the id is used by another entry/);
    bad([{ ...entry, sha256: 'abc' }], /entry x1: sha256 must be/);
    bad([{ ...entry, key }], /entry x1: holds a key in plaintext/);
    bad([{ ...entry, expires_at: 'soon' }], /entry x1: expires_at must be/);
    bad([{ role: 'backend' }], /entry #1: id must be/);
    assert.throws(() => parseKeyring('{"id":"x"}', 'test'), /must be a JSON array/);
    assert.throws(() => legacyEntry('short'), /at least 16 characters/);
  });

  test('names the operator of a resolution by the key that made it, keeping a name from the body in the note', () => {
    const body = { outcome: 'confirmed' as const, provider_reference: 'PR-1', operator: 'Bob', note: 'seen on the statement' };
    const r = asResolvedBy(body, { id: 'ops-ada', label: 'Ada', role: 'operator' });
    assert.equal(r.operator, 'key ops-ada (Ada)');
    assert.equal(r.note, 'seen on the statement [named in the request: Bob]');
    assert.equal(r.outcome, 'confirmed');
  });
});
