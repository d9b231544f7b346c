import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createDecipheriv } from 'node:crypto';
import { createSealer, isSealed } from '../../src/codec/seal';
import { generateDevKeys } from '../../src/codec/keys';

const PIN = '4321';
const TOKEN = 'auth-token-abcdef-0123456789';

describe('sealing secrets that pass through workflows', () => {
  const keys = generateDevKeys('seal1');
  const sealer = createSealer(keys);

  test('round-trips a PIN and an auth_token and never shows them in the sealed form', () => {
    for (const secret of [PIN, TOKEN, 'ünïcødé ✓', '']) {
      const sealed = sealer.seal(secret);
      assert.match(sealed, /^sealed:v1:seal1:[A-Za-z0-9_-]+$/);
      assert.ok(secret === '' || !sealed.includes(secret));
      assert.ok(isSealed(sealed));
      assert.equal(sealer.unseal(sealed), secret);
    }
  });

  test('seals the same value differently each time', () => {
    assert.notEqual(sealer.seal(PIN), sealer.seal(PIN));
  });

  test('refuses a sealed value whose ciphertext was altered without echoing it', () => {
    const sealed = sealer.seal(TOKEN);
    const body = sealed.slice('sealed:v1:seal1:'.length);
    const raw = Buffer.from(body, 'base64url');
    raw[14] = (raw[14] as number) ^ 0x80;
    const tampered = `sealed:v1:seal1:${raw.toString('base64url')}`;
    assert.throws(
      () => sealer.unseal(tampered),
      (e: Error) =>
        /failed authentication/.test(e.message) && !e.message.includes(raw.toString('base64url')) && !e.message.includes(TOKEN),
    );
  });

  test('refuses a sealed value moved to another key id of the same ring', () => {
    const material = keys.split(':')[1];
    const ring = createSealer(`a:${material},b:${material}`);
    const moved = ring.seal(PIN).replace('sealed:v1:a:', 'sealed:v1:b:');
    assert.throws(() => ring.unseal(moved), /key id "b".*failed authentication/);
  });

  test('names the unknown key id when the value was sealed with a key it does not hold', () => {
    const foreign = createSealer(generateDevKeys('other')).seal(PIN);
    assert.throws(() => sealer.unseal(foreign), /sealed with key id "other", which is not in PAYLOAD_ENCRYPTION_KEYS/);
  });

  test('refuses values that are not sealed strings without echoing them', () => {
    for (const bad of [PIN, 'sealed:v1:seal1:', 'sealed:v2:seal1:AAAA', 'sealed:v1:seal1:AAAA']) {
      assert.throws(
        () => sealer.unseal(bad),
        (e: Error) => e.name === 'SealError' && (bad === '' || !e.message.includes(bad)),
      );
    }
    assert.equal(isSealed(PIN), false);
  });

  test('after rotation seals with the new key and still unseals values sealed with the old key', () => {
    const oldKeys = generateDevKeys('old');
    const sealedOld = createSealer(oldKeys).seal(TOKEN);
    const rotated = createSealer(`${generateDevKeys('new')},${oldKeys}`);
    assert.equal(rotated.unseal(sealedOld), TOKEN);
    assert.match(rotated.seal(TOKEN), /^sealed:v1:new:/);
  });

  test('uses a key distinct from the payload key (sealed values do not open with the raw payload key)', () => {
    // Same key material, but a sealer derives its key by HKDF: a value sealed by one ring opens only through HKDF.
    const material = Buffer.from(keys.split(':')[1] as string, 'base64');
    const sealed = sealer.seal(PIN);
    const raw = Buffer.from(sealed.split(':')[3] as string, 'base64url');
    const d = createDecipheriv('aes-256-gcm', material, raw.subarray(0, 12));
    d.setAAD(Buffer.from('sealed:v1:seal1'));
    d.setAuthTag(raw.subarray(raw.length - 16));
    assert.throws(() => Buffer.concat([d.update(raw.subarray(12, raw.length - 16)), d.final()]));
  });
});
