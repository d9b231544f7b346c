/**
 * The one reader of the provider's notifications (src/contract/notifications.ts): what the
 * receiver deduplicates by and what a flow cross-checks come from the same place.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { notificationFacts, notificationIdOf, readNotification } from '../../src/contract/notifications';
import { notificationDedupKey } from '../../src/starter/client/mpf-client';

describe('a provider notification, read', () => {
  test('gives the outcome, the id and the facts of a JSON body, data first', () => {
    const raw = JSON.stringify({ event: 'collection.completed', id: 'evt-1', payment_ref: 'top-ref', data: { payment_ref: 'PR-1', amount: 2500, currency: 'NGN', notification_id: 'n-9' } });
    assert.deepEqual(readNotification(raw), {
      payload: JSON.parse(raw),
      outcome: 'paid',
      id: 'n-9',
      payment_ref: 'PR-1',
      amount: 2500,
      currency: 'NGN',
    });
  });

  test('keeps a body that is not JSON as its text, with no id and no facts', () => {
    const r = readNotification('status=paid');
    assert.equal(r.payload, 'status=paid');
    assert.equal(r.id, undefined);
    assert.deepEqual(notificationFacts(r.payload), {});
  });

  test('takes a fact from the top level when data lacks it or has the wrong type', () => {
    assert.deepEqual(notificationFacts({ payment_ref: 'PR-2', amount: 5, data: { amount: '5' } }), { payment_ref: 'PR-2', amount: 5, currency: undefined });
  });

  test('is deduplicated by its own id, else by a hash of the raw body', () => {
    assert.equal(notificationDedupKey({ event_id: 'e-1' }, '{}'), 'id:e-1');
    assert.equal(notificationIdOf({ id: 'x'.repeat(201) }), undefined, 'an id past 200 characters is not trusted');
    assert.match(notificationDedupKey({ status: 'paid' }, '{"status":"paid"}'), /^sha256:[0-9a-f]{64}$/);
    assert.notEqual(notificationDedupKey('a', 'a'), notificationDedupKey('b', 'b'));
  });
});
