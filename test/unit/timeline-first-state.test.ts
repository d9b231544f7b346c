/**
 * The timeline's first state (`initializing`, `creating`): from the MpfState the flow's start set
 * when the starter carried it, else from the flow's own first upsert — never twice, when a worker
 * of an older release upserted it again over what the start set.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { temporal } from '@temporalio/proto';
import { timelineOf } from '../../src/starter/client/timeline';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

const keyword = (v: string) => ({ metadata: { type: Buffer.from('Keyword') }, data: Buffer.from(JSON.stringify(v)) });
const at = (s: number) => ({ seconds: 1_795_000_000 + s, nanos: 0 }) as unknown as HistoryEvent['eventTime'];
const started = (fields: Record<string, string>): HistoryEvent => ({
  eventTime: at(0),
  workflowExecutionStartedEventAttributes: { searchAttributes: { indexedFields: Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, keyword(v)])) } },
});
const upsert = (s: number, fields: Record<string, string>): HistoryEvent => ({
  eventTime: at(s),
  upsertWorkflowSearchAttributesEventAttributes: { searchAttributes: { indexedFields: Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, keyword(v)])) } },
});
const states = (events: HistoryEvent[]) => timelineOf('payment_link', events, undefined, undefined).filter((t) => t.kind === 'state').map((t) => t.name);
const carried = { MpfFlowKind: 'payment_link', MpfTxnRef: 'r1', MpfState: 'creating' };

describe('the timeline\'s first state', () => {
  test('comes from the start when the start carried it and the flow did not upsert it', () => {
    assert.deepEqual(states([started(carried), upsert(2, { MpfState: 'awaiting_payment' }), upsert(3, { MpfState: 'cancelled' })]), ['creating', 'awaiting_payment', 'cancelled']);
  });

  test('comes once from the flow\'s own upsert when it upserted its kind too (an older worker, or a start without them)', () => {
    const own = [upsert(1, carried), upsert(2, { MpfState: 'awaiting_payment' })];
    assert.deepEqual(states([started(carried), ...own]), ['creating', 'awaiting_payment']);
    assert.deepEqual(states([started({}), ...own]), ['creating', 'awaiting_payment']);
  });
});
