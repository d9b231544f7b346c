/**
 * Tokens v2 (flow-tokens.ts) on their own: the format, what verifies locally and what must fall
 * back to the memo (another flow, another purpose, truncated, tampered, old, from the future, a
 * key that left the ring), rotation, and derivation from the memo's seed.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { generateDevKeys } from '../../src/codec/keys';
import { FlowTokens, TOKEN_LOCAL_WINDOW_SECONDS, TOKEN_V2_LENGTH } from '../../src/starter/client/flow-tokens';
import { PinTokens } from '../../src/starter/client/pin-tokens';

const k1 = generateDevKeys('k1');
const k2 = generateDevKeys('k2');
const FLOW = 'swap-order-1001';

/** `token` with the character at `i` replaced by another base64url character. */
const flip = (token: string, i: number): string => token.slice(0, i) + (token[i] === 'A' ? 'B' : 'A') + token.slice(i + 1);

describe('tokens v2', () => {
  test('are 64 base64url characters: a 16-byte nonce starting with the issue time, then a 32-byte MAC', () => {
    const now = Date.UTC(2026, 10, 23, 12, 0, 0);
    const { token, seed } = new FlowTokens(k1).issue('pin', FLOW, now);
    assert.equal(token.length, TOKEN_V2_LENGTH);
    assert.match(token, /^[A-Za-z0-9_-]{64}$/);
    const raw = Buffer.from(token, 'base64url');
    assert.equal(raw.length, 48);
    assert.equal(raw.readUInt32BE(0), now / 1000);
    assert.equal(seed.key, 'k1');
    assert.deepEqual(Buffer.from(seed.nonce, 'base64url'), raw.subarray(0, 16));
  });

  test('verify locally for their flow and purpose only', () => {
    const tokens = new FlowTokens(k1);
    const pin = tokens.issue('pin', FLOW).token;
    const notify = tokens.issue('notify', FLOW).token;
    assert.equal(tokens.verifyLocally('pin', FLOW, pin), true);
    assert.equal(tokens.verifyLocally('notify', FLOW, notify), true);
    assert.equal(tokens.verifyLocally('notify', FLOW, pin), false, 'a pin_token is no notification token');
    assert.equal(tokens.verifyLocally('pin', FLOW, notify), false);
    assert.equal(tokens.verifyLocally('pin', 'swap-order-1002', pin), false, "another flow's token");
    assert.equal(tokens.verifyLocally('pin', `${FLOW}x`, pin), false);
  });

  test('two tokens of one flow id differ (a reused id does not revive an old link), and both are genuine', () => {
    const tokens = new FlowTokens(k1);
    const a = tokens.issue('pin', FLOW);
    const b = tokens.issue('pin', FLOW);
    assert.notEqual(a.token, b.token);
    const sha = (s: string) => createHash('sha256').update(s).digest('hex');
    assert.notEqual(sha(a.token), sha(b.token), "the old token does not match the new flow's memo hash");
  });

  test('truncated, extended, tampered, made-up and v1-shaped tokens do not verify locally', () => {
    const tokens = new FlowTokens(k1);
    const { token } = tokens.issue('pin', FLOW);
    for (const bad of [token.slice(0, 63), token.slice(0, 43), `${token}A`, `${token}=`, ` ${token}`, 'A'.repeat(64), '', 'f'.repeat(43)]) {
      assert.equal(tokens.verifyLocally('pin', FLOW, bad), false, bad);
    }
    for (let i = 0; i < token.length; i++) assert.equal(tokens.verifyLocally('pin', FLOW, flip(token, i)), false, `flipped at ${i}`);
    const v1 = new PinTokens(k1).derive(FLOW, new PinTokens(k1).newSeed())!;
    assert.equal(tokens.verifyLocally('pin', FLOW, v1), false);
  });

  test('verify with every key of the ring (rotation), and not once their key left it', () => {
    const { token } = new FlowTokens(k1).issue('notify', FLOW);
    assert.equal(new FlowTokens(`${k2},${k1}`).verifyLocally('notify', FLOW, token), true, 'new key prepended, old kept');
    assert.equal(new FlowTokens(k2).verifyLocally('notify', FLOW, token), false, 'old key gone: the memo decides');
  });

  test('verify locally only within the window after their issue (older ones and ones from the far future go to the memo)', () => {
    const tokens = new FlowTokens(k1);
    const issued = Date.now();
    const { token } = tokens.issue('pin', FLOW, issued);
    assert.equal(tokens.verifyLocally('pin', FLOW, token, issued + (TOKEN_LOCAL_WINDOW_SECONDS - 5) * 1000), true);
    assert.equal(tokens.verifyLocally('pin', FLOW, token, issued + (TOKEN_LOCAL_WINDOW_SECONDS + 5) * 1000), false);
    assert.equal(tokens.verifyLocally('pin', FLOW, token, issued - 60_000), true, 'a little clock skew between gateways');
    assert.equal(tokens.verifyLocally('pin', FLOW, token, issued - 3_600_000), false);
    assert.equal(new FlowTokens(k1, { localWindowSeconds: 0 }).verifyLocally('pin', FLOW, token, issued + 2_000), false);
  });

  test("derive again from the memo's seed, and not once the seed's key left the ring", () => {
    const tokens = new FlowTokens(`${k1},${k2}`);
    const { token, seed } = tokens.issue('pin', FLOW);
    assert.equal(tokens.derive('pin', FLOW, seed), token);
    assert.equal(new FlowTokens(`${k2},${k1}`).derive('pin', FLOW, seed), token);
    assert.equal(new FlowTokens(k2).derive('pin', FLOW, seed), undefined);
    assert.notEqual(tokens.derive('notify', FLOW, seed), token);
    assert.equal(tokens.derive('pin', FLOW, { nonce: 'short', key: 'k1' }), undefined);
  });
});
