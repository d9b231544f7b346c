/**
 * Merchant events are kept by each flow in its memo (encrypted like every payload), so the events
 * API lists and reads them from visibility and describe with every worker stopped, newest first
 * across flows, in pages — the same events (ids, types, order, data) the flows' `events` query
 * answers. The client's query deadline is short: a list that asked a flow's query instead would
 * be a 503 here. A flow of a release before that (the kept bundle of test/upgrade/) is still read
 * by its query, which needs a worker.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { NativeConnection } from '@temporalio/worker';
import { ENCRYPTED_ENCODING } from '../../src/codec/aes-gcm-codec';
import { EVENTS_MEMO_FIELD, type FlowEvent } from '../../src/contract/merchant-events';
import { ProviderClient } from '../../src/provider/client';
import { SIMULATOR_DEFAULT_CREDENTIALS } from '../../src/simulator/options';
import { WorkerUnavailableError } from '../../src/starter/client/errors';
import { createMpfWorker, defaultVersioning } from '../../src/worker';
import { flowEventsQuery } from '../../src/workflows/event-types';
import { FLOW_STATE } from '../../src/workflows/search-attributes';
import { linkBody, swapBody, uniqueRef } from '../helpers/fixtures';
import { type GatewayHarness, startGatewayStack } from '../helpers/gateway';
import { eventually, startStack, type Stack } from '../helpers/stack';

interface Ev extends FlowEvent {
  flow_id: string;
}

describe('merchant events with every worker stopped', () => {
  const started = new Date(Date.now() - 1000).toISOString();
  let h: GatewayHarness;
  const flows: string[] = [];
  /** Each flow's events as its `events` query answered while the worker ran. */
  const queried = new Map<string, FlowEvent[]>();
  let running: string;

  before(async () => {
    h = await startGatewayStack({ client: { queryAnswerTimeoutMs: 3_000 } });
    // Interleaved, so that newest first across flows differs from flow after flow.
    const link = await h.api('POST', '/v1/payment-links', linkBody(uniqueRef('nw-link')));
    assert.equal(link.status, 201, link.text);
    const linkId = link.json.link_id as string;
    const swap = await h.api('POST', '/v1/swaps', swapBody(uniqueRef('nw-swap')));
    assert.equal(swap.status, 201, swap.text);
    const swapId = swap.json.swap_id as string;
    assert.equal((await h.api('POST', `/v1/payment-links/${linkId}/cancel`, {})).status, 200);
    assert.equal((await h.api('POST', `/v1/swaps/${swapId}/cancel`, {})).status, 200);
    const later = await h.api('POST', '/v1/payment-links', linkBody(uniqueRef('nw-later')));
    assert.equal(later.status, 201, later.text);
    const laterId = later.json.link_id as string;
    assert.equal((await h.api('POST', `/v1/payment-links/${laterId}/cancel`, {})).status, 200);
    const open = await h.api('POST', '/v1/swaps', swapBody(uniqueRef('nw-open')));
    assert.equal(open.status, 201, open.text);
    running = open.json.swap_id as string;
    flows.push(linkId, swapId, laterId, running);
    for (const id of [linkId, swapId, laterId]) await h.stack.client.workflow.getHandle(id).result();
    for (const id of flows) queried.set(id, await h.stack.client.workflow.getHandle(id).query(flowEventsQuery));
    await h.stack.stopWorker();
    // Visibility takes the last memo a moment after the flow wrote it.
    await eventually(async () => {
      const r = await h.api('GET', `/v1/events?created_from=${encodeURIComponent(started)}&limit=100`);
      return r.status === 200 && (r.json.items as Ev[]).length === [...queried.values()].flat().length;
    }, 30_000, 'every event listed');
  });
  after(async () => {
    await h?.stop();
  });

  test('the list holds every flow\'s events, newest first across flows, the same as the flows answered', async () => {
    const r = await h.api('GET', `/v1/events?created_from=${encodeURIComponent(started)}&limit=100`);
    assert.equal(r.status, 200, r.text);
    const items = r.json.items as Ev[];
    const [linkId, swapId, laterId] = flows;
    assert.deepEqual(
      items.map((e) => e.id),
      [`evt_${running}_1`, `evt_${laterId}_2`, `evt_${laterId}_1`, `evt_${swapId}_2`, `evt_${linkId}_2`, `evt_${swapId}_1`, `evt_${linkId}_1`],
    );
    for (let i = 1; i < items.length; i++) assert.ok(items[i - 1]!.timestamp >= items[i]!.timestamp, 'newest first');
    for (const [flowId, events] of queried) {
      const listed = items.filter((e) => e.flow_id === flowId).reverse().map(({ flow_id: _f, ...e }) => e);
      assert.deepEqual(listed, events, `${flowId}: the same events, in the same order, with the same data`);
    }
    assert.deepEqual(items.filter((e) => e.flow_id === swapId).map((e) => e.type), ['swap.cancelled', 'swap.awaiting_pin']);
  });

  test('pages of two walk the same list, each event once, and the last page has no token', async () => {
    const all = ((await h.api('GET', `/v1/events?created_from=${encodeURIComponent(started)}&limit=100`)).json.items as Ev[]).map((e) => e.id);
    const seen: string[] = [];
    let token: string | undefined;
    for (let i = 0; i < 10; i++) {
      const r = await h.api('GET', `/v1/events?created_from=${encodeURIComponent(started)}&limit=2${token ? `&page_token=${encodeURIComponent(token)}` : ''}`);
      assert.equal(r.status, 200, r.text);
      const items = r.json.items as Ev[];
      assert.ok(items.length <= 2);
      seen.push(...items.map((e) => e.id));
      token = r.json.next_page_token as string | undefined;
      if (!token) break;
    }
    assert.equal(token, undefined, 'the walk ends');
    assert.deepEqual(seen, all);
  });

  test('filters by flow and by type still apply', async () => {
    const [linkId] = flows;
    const one = await h.api('GET', `/v1/events?flow_id=${linkId}`);
    assert.equal(one.status, 200, one.text);
    assert.deepEqual((one.json.items as Ev[]).map((e) => e.type), ['payment_link.cancelled', 'payment_link.created']);
    const cancelled = await h.api('GET', `/v1/events?type=payment_link.cancelled&created_from=${encodeURIComponent(started)}`);
    assert.equal(cancelled.status, 200, cancelled.text);
    assert.deepEqual((cancelled.json.items as Ev[]).map((e) => e.flow_id), [flows[2], linkId]);
  });

  test('one event is read by its id, with its data as the flow emitted it', async () => {
    const [, swapId] = flows;
    const r = await h.api('GET', `/v1/events/evt_${swapId}_2`);
    assert.equal(r.status, 200, r.text);
    const want = queried.get(swapId!)![1]!;
    assert.equal(r.json.id, want.id);
    assert.equal(r.json.type, 'swap.cancelled');
    assert.equal(r.json.timestamp, want.timestamp);
    assert.deepEqual(r.json.data, want.data);
    assert.equal(r.json.flow_id, swapId);
    const missing = await h.api('GET', `/v1/events/evt_${swapId}_3`);
    assert.equal(missing.status, 404, missing.text);
  });

  test('the memo that keeps them is encrypted by the payload codec', async () => {
    const desc = await h.stack.client.workflowService.describeWorkflowExecution({
      namespace: h.stack.namespace,
      execution: { workflowId: flows[0] },
    });
    const field = desc.workflowExecutionInfo?.memo?.fields?.[EVENTS_MEMO_FIELD];
    assert.ok(field, 'the flow keeps its events in its memo');
    assert.equal(Buffer.from(field.metadata?.encoding ?? []).toString(), ENCRYPTED_ENCODING);
    assert.ok(!Buffer.from(field.data ?? []).toString('latin1').includes('payment_link.created'), 'no event type in plaintext');
  });
});

describe('merchant events of a flow started by a release before they were kept in its memo', () => {
  const OLD_BUNDLE = path.resolve(__dirname, '..', 'upgrade', '0.1.0-0b68658', 'workflow-bundle.js');
  let stack: Stack;

  before(async () => {
    stack = await startStack({ noWorker: true, client: { queryAnswerTimeoutMs: 3_000 } });
  });
  after(async () => {
    await stack?.stop();
  });

  test('are read by its query while a worker is up, and a list reaching it without one is a 503 naming it', async () => {
    const native = await NativeConnection.connect({ address: stack.address });
    const provider = new ProviderClient({ baseUrl: stack.sim.baseUrl, ...SIMULATOR_DEFAULT_CREDENTIALS });
    let linkId: string;
    try {
      const old = await createMpfWorker({
        connection: native,
        namespace: stack.namespace,
        taskQueue: stack.taskQueue,
        keys: stack.keys,
        provider,
        workflowBundle: { codePath: OLD_BUNDLE },
        versioning: { ...defaultVersioning(), promote: 'always' },
      });
      const running = old.run();
      try {
        const { link } = await stack.mpf.createLink(linkBody(uniqueRef('nw-old')));
        linkId = link.link_id;
        await stack.mpf.cancelLink(linkId, 'an older release');
        await stack.client.workflow.getHandle(linkId).result();
      } finally {
        old.shutdown();
        await running;
      }
    } finally {
      await native.close();
      await provider.close();
    }
    const desc = await stack.client.workflow.getHandle(linkId).describe();
    // The starter put the empty list in the start memo (mpf-start-memo-v1); the older release never
    // fills it, and the flow is past its first state: the list is not taken for "no events".
    assert.deepEqual(desc.memo?.[EVENTS_MEMO_FIELD], [], 'the older release keeps no events in its memo');
    assert.equal(desc.typedSearchAttributes.get(FLOW_STATE), 'cancelled');
    await assert.rejects(stack.mpf.listEvents({ flow_id: linkId }), (err: unknown) => err instanceof WorkerUnavailableError && err.flowId === linkId);
    await stack.startWorker();
    const page = await stack.mpf.listEvents({ flow_id: linkId });
    assert.deepEqual(page.items.map((e) => e.id), [`evt_${linkId}_2`, `evt_${linkId}_1`]);
    assert.deepEqual(page.items.map((e) => e.type), ['payment_link.cancelled', 'payment_link.created']);
    const one = await stack.mpf.getEvent(`evt_${linkId}_2`);
    assert.equal(one.type, 'payment_link.cancelled');
  });
});
