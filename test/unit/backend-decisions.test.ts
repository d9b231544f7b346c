/**
 * The pure decisions behind Idempotency-Key records and reconciliation: which claim wins, what a
 * mismatch names, when a stale claim may be taken over, and what a resolution may carry.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { canonicalJson, idempotencyWorkflowId } from '../../src/starter/client/idempotency';
import { decideClaim, type IdempotencyClaim } from '../../src/workflows/idempotency';
import { checkResolveInput } from '../../src/workflows/reconciliation';

const claim = (over: Partial<IdempotencyClaim> = {}): IdempotencyClaim => ({
  route: 'POST /v1/swaps',
  fields: { amount: 'h1', txn_ref: 'h2' },
  key_id: 'k1',
  claim_id: 'c1',
  stale_after_ms: 60_000,
  ...over,
});

describe('Idempotency-Key records', () => {
  test('the first claim wins; a second one is in progress, then a replay once answered', () => {
    const first = decideClaim(undefined, claim(), 1_000);
    assert.deepEqual(first.answer, { kind: 'claimed', takeover: false });
    assert.equal(decideClaim(first.record, claim({ claim_id: 'c2' }), 2_000).answer.kind, 'in_progress');
    const answered = { ...first.record, answer: { status: 201, body: { ok: 1 } }, in_progress: false };
    assert.deepEqual(decideClaim(answered, claim({ claim_id: 'c3' }), 3_000).answer, { kind: 'replay', answer: { status: 201, body: { ok: 1 } }, first_at: new Date(1_000).toISOString() });
  });

  test('another body names the fields that differ, another route names the route, another hashing key asks to rehash', () => {
    const { record } = decideClaim(undefined, claim(), 0);
    assert.deepEqual(decideClaim(record, claim({ fields: { amount: 'other', txn_ref: 'h2', extra: 'h3' } }), 1).answer, { kind: 'mismatch', fields: ['amount', 'extra'] });
    assert.deepEqual(decideClaim(record, claim({ route: 'POST /v1/payment-links' }), 1).answer, { kind: 'mismatch', route: 'POST /v1/swaps', fields: [] });
    assert.deepEqual(decideClaim(record, claim({ key_id: 'k2' }), 1).answer, { kind: 'rekey', key_id: 'k1' });
  });

  test('a claim left in progress past stale_after_ms, or released, is taken over by the same request', () => {
    const { record } = decideClaim(undefined, claim(), 0);
    assert.deepEqual(decideClaim(record, claim({ claim_id: 'c2' }), 60_001).answer, { kind: 'claimed', takeover: true });
    assert.equal(decideClaim(record, claim({ claim_id: 'c2' }), 60_001).record.claim_id, 'c2');
    assert.deepEqual(decideClaim({ ...record, in_progress: false }, claim({ claim_id: 'c2' }), 10).answer, { kind: 'claimed', takeover: true });
  });

  test('record ids depend on scope and key only, and never contain the key', () => {
    const a = idempotencyWorkflowId('api:x', 'order-1');
    assert.match(a, /^idem-[0-9a-f]{64}$/);
    assert.notEqual(a, idempotencyWorkflowId('api:y', 'order-1'));
    assert.ok(!a.includes('order-1'));
    assert.equal(canonicalJson({ b: 1, a: { d: [1, 'x'], c: null } }), canonicalJson({ a: { c: null, d: [1, 'x'] }, b: 1 }));
  });
});

describe('a resolution', () => {
  const good = { outcome: 'confirmed', provider_reference: 'SIMSWP-123', operator: 'Ada (ops)', note: 'statement checked' };
  test('is accepted with the outcome of its kind, and refused naming the field otherwise', () => {
    assert.equal(checkResolveInput(good, 'swap'), undefined);
    assert.equal(checkResolveInput({ ...good, outcome: 'paid' }, 'payment_link'), undefined);
    for (const [input, kind, field] of [
      [{ ...good, outcome: 'paid' }, 'swap', 'outcome'],
      [{ ...good, outcome: 'confirmed' }, 'payment_link', 'outcome'],
      [{ ...good, provider_reference: '' }, 'swap', 'provider_reference'],
      [{ ...good, operator: 'two\nlines' }, 'swap', 'operator'],
      [{ ...good, note: 'x'.repeat(1001) }, 'swap', 'note'],
      [{ ...good, note: 'pin token 3q2-7wEHe3q2-7wEHe3q2-7wEHe3q2-7wEH' }, 'swap', 'note'],
      [{ ...good, note: 'sealed:v1:k1:abc' }, 'swap', 'note'],
      [{ ...good, wallet_pin: '1234' }, 'swap', 'wallet_pin'],
      ['confirmed', 'swap', 'body'],
    ] as const) {
      assert.equal(checkResolveInput(input, kind)?.field, field, JSON.stringify(input));
    }
  });
});
