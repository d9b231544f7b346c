import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { bearerToken, secretDigest, secretMatches } from '../../src/auth/secrets';

describe('checking a presented secret', () => {
  const expected = secretDigest('the-right-secret-0123456789');

  test('accepts the secret itself and refuses any other, shorter, longer or differently cased one', () => {
    assert.equal(secretMatches('the-right-secret-0123456789', expected), true);
    for (const other of ['the-right-secret-012345678', 'the-right-secret-01234567890', 'THE-RIGHT-SECRET-0123456789', 'x']) {
      assert.equal(secretMatches(other, expected), false, other);
    }
  });

  test('never accepts an absent or empty secret, even against the digest of an empty one', () => {
    assert.equal(secretMatches(undefined, expected), false);
    assert.equal(secretMatches('', secretDigest('')), false);
    assert.equal(secretMatches(undefined, secretDigest('')), false);
  });

  test('reads the token of a Bearer header and nothing else', () => {
    assert.equal(bearerToken('Bearer abc.DEF_123'), 'abc.DEF_123');
    assert.equal(bearerToken('bearer \tabc '), 'abc');
    for (const h of [undefined, '', 'Bearer ', 'Bearer', 'Basic abc', 'abc', 'Bearer a b']) assert.equal(bearerToken(h), undefined, String(h));
  });
});
