/**
 * When a reader takes the events list a flow keeps in its memo (timeline.ts memoEventsOf), and
 * when it must ask the flow's `events` query instead: since mpf-start-memo-v1 the starter puts the
 * empty list in the start memo, and a worker of a release before the events memo never fills it.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { EVENTS_MEMO_FIELD, type FlowEvent } from '../../src/contract/merchant-events';
import { memoEventsOf } from '../../src/starter/client/timeline';

const created: FlowEvent = { id: 'evt_paylink-r1_1', type: 'payment_link.created', timestamp: '2026-11-29T10:00:00.000Z', data: { object: 'payment_link', state: 'awaiting_payment' } } as unknown as FlowEvent;

describe("a flow's events kept in its memo", () => {
  test('an empty list is "no events yet" while the flow is in its first state', () => {
    assert.deepEqual(memoEventsOf({ [EVENTS_MEMO_FIELD]: [] }, { kind: 'payment_link', state: 'creating' }), []);
    assert.deepEqual(memoEventsOf({ [EVENTS_MEMO_FIELD]: [] }, { kind: 'swap', state: 'initializing' }), []);
  });

  test('an empty list past the first state is not trusted: its query is asked (a worker of an older release ran it)', () => {
    assert.equal(memoEventsOf({ [EVENTS_MEMO_FIELD]: [] }, { kind: 'payment_link', state: 'awaiting_payment' }), undefined);
    assert.equal(memoEventsOf({ [EVENTS_MEMO_FIELD]: [] }, { kind: 'swap', state: 'confirmed' }), undefined);
  });

  test('a list with events is taken in any state, and no list at all is asked for', () => {
    assert.deepEqual(memoEventsOf({ [EVENTS_MEMO_FIELD]: [created] }, { kind: 'payment_link', state: 'cancelled' }), [created]);
    assert.equal(memoEventsOf({}, { kind: 'payment_link', state: 'creating' }), undefined);
    assert.equal(memoEventsOf(undefined), undefined);
  });

  test('without the state (a reader that has none) the list is taken as it is', () => {
    assert.deepEqual(memoEventsOf({ [EVENTS_MEMO_FIELD]: [] }), []);
    assert.deepEqual(memoEventsOf({ [EVENTS_MEMO_FIELD]: [] }, { kind: 'swap', state: undefined }), []);
  });
});
