/**
 * A flow started by our starter carries its kind, reference and first state (typed search
 * attributes) and its empty events list (memo) in its start, so its first workflow task does not
 * upsert them (mpf-start-carried-v1, mpf-start-memo-v1): one patch marker (the newest,
 * mpf-start-memo-v1, which stands for the older ones), no upsert of what the start set, and
 * operators see the same search attributes, memo events and timeline as before. A flow started without them (Temporal Web, `temporal
 * workflow start`, an older starter) upserts them itself, as before.
 * Real dev server, simulator and worker.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { temporal } from '@temporalio/proto';
import { EVENTS_MEMO_FIELD, type FlowEvent } from '../../src/contract/merchant-events';
import { flowEventsQuery } from '../../src/workflows/event-types';
import { cancelLinkUpdate, LINK_WORKFLOW_TYPE, linkCreatedUpdate, linkWorkflowId, type LinkWorkflowInput } from '../../src/workflows/messages';
import { START_MEMO_PATCH } from '../../src/workflows/patches';
import { FLOW_KIND, FLOW_REF, FLOW_STATE } from '../../src/workflows/search-attributes';
import { linkBody, uniqueRef } from '../helpers/fixtures';
import { startStack, type Stack } from '../helpers/stack';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** The search-attribute names each upsert of the history set, in order. */
function upsertedNames(events: readonly HistoryEvent[]): string[][] {
  return events.flatMap((e) => {
    const fields = e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields;
    return fields ? [Object.keys(fields).sort()] : [];
  });
}

/** The patch ids of the history's patch markers (the SDK writes them as plain JSON). */
const patchMarkers = (events: readonly HistoryEvent[]): string[] =>
  events.flatMap((e) => {
    const data = e.markerRecordedEventAttributes?.markerName === 'core_patch' ? e.markerRecordedEventAttributes.details?.['patch-data']?.payloads?.[0]?.data : undefined;
    return data ? [String((JSON.parse(Buffer.from(data).toString()) as { id?: string }).id)] : [];
  });
const memoUpserts = (events: readonly HistoryEvent[]) => events.filter((e) => e.workflowPropertiesModifiedEventAttributes).length;

describe('what a flow\'s start carries is not upserted again', () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack();
  });
  after(async () => stack?.stop());

  /** Ends a link (cancelled), and returns its history, its description and its events as its query answers. */
  const closed = async (linkId: string) => {
    const handle = stack.client.workflow.getHandle(linkId);
    await handle.executeUpdate(cancelLinkUpdate, { args: [{ reason: 'test' }] });
    await handle.result();
    const events = (await handle.fetchHistory()).events ?? [];
    const desc = await handle.describe();
    const queried = await handle.query(flowEventsQuery);
    return { events, desc, queried };
  };

  const sameAsOperatorsSee = (desc: Awaited<ReturnType<typeof closed>>['desc'], queried: FlowEvent[], ref: string) => {
    assert.equal(desc.typedSearchAttributes.get(FLOW_KIND), 'payment_link');
    assert.equal(desc.typedSearchAttributes.get(FLOW_REF), ref);
    assert.equal(desc.typedSearchAttributes.get(FLOW_STATE), 'cancelled');
    assert.deepEqual(desc.memo?.[EVENTS_MEMO_FIELD], queried, 'the memo keeps the events the flow answers');
    assert.deepEqual(queried.map((e) => e.type), ['payment_link.created', 'payment_link.cancelled']);
  };

  test('a link created through the starter records one patch marker and does not upsert the kind, reference and first state its start set', { timeout: 120_000 }, async () => {
    const ref = uniqueRef('carried');
    const { link } = await stack.mpf.createLink(linkBody(ref));
    const { events, desc, queried } = await closed(link.link_id);

    const started = events[0]?.workflowExecutionStartedEventAttributes;
    assert.deepEqual(Object.keys(started?.searchAttributes?.indexedFields ?? {}).sort(), ['MpfCustomerRef', 'MpfFlowKind', 'MpfState', 'MpfTxnRef']);
    assert.deepEqual(patchMarkers(events), [START_MEMO_PATCH]);
    // The SDK's TemporalChangeVersion for the patch, then one MpfState per state change.
    assert.deepEqual(upsertedNames(events), [['TemporalChangeVersion'], ['MpfState'], ['MpfState']]);
    assert.ok(started?.memo?.fields?.[EVENTS_MEMO_FIELD], 'the start carries the empty events list');
    assert.equal(memoUpserts(events), queried.length, 'one per event: the empty list came with the start');
    sameAsOperatorsSee(desc, queried, ref);

    const detail = await stack.mpf.getLinkDetail(link.link_id);
    assert.deepEqual(
      detail.timeline.filter((t) => t.kind === 'state').map((t) => t.name),
      ['creating', 'awaiting_payment', 'cancelled'],
      'the timeline still shows the first state, from the start',
    );
  });

  test('a link started without them (as from Temporal Web) upserts them itself, as before', { timeout: 120_000 }, async () => {
    const ref = uniqueRef('bare');
    const input: LinkWorkflowInput = {
      request: { ...linkBody(ref), currency: 'NGN', notification_url: 'http://127.0.0.1:9/notify' } as LinkWorkflowInput['request'],
      lifetime_seconds: 600,
      late_notification_grace_seconds: 0,
    };
    const handle = await stack.client.workflow.start(LINK_WORKFLOW_TYPE, { taskQueue: stack.taskQueue, workflowId: linkWorkflowId(ref), args: [input] });
    await handle.executeUpdate(linkCreatedUpdate);
    const { events, desc, queried } = await closed(handle.workflowId);

    assert.deepEqual(patchMarkers(events), [START_MEMO_PATCH]);
    assert.deepEqual(upsertedNames(events), [['TemporalChangeVersion'], ['MpfFlowKind', 'MpfState', 'MpfTxnRef'], ['MpfState'], ['MpfState']]);
    assert.equal(events[0]?.workflowExecutionStartedEventAttributes?.memo?.fields?.[EVENTS_MEMO_FIELD], undefined, 'no list in this start');
    assert.equal(memoUpserts(events), queried.length, 'one per event: until the first, readers ask its query');
    sameAsOperatorsSee(desc, queried, ref);
    const detail = await stack.mpf.getLinkDetail(handle.workflowId);
    assert.deepEqual(detail.timeline.filter((t) => t.kind === 'state').map((t) => t.name), ['creating', 'awaiting_payment', 'cancelled']);
  });
});
