/**
 * The worker's metric recorders without a server: the flows' sink counts each occurrence of a run
 * once (a workflow task executed again repeats its sink calls), counters start at 0 with the labels
 * they are counted with, and the instrumented provider client counts and times each call by
 * endpoint and error kind through the activity Context's metric meter.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { MetricMeter, MetricTags } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import type { WorkflowInfo } from '@temporalio/workflow';
import { instrumentProvider, recordEventDelivery } from '../../src/observability/activity-metrics';
import { flowMetricSinks, initWorkerCounters } from '../../src/metrics/flow-metric-sink';
import type { ProviderClient, SendOptions } from '../../src/provider/client';
import { ProviderAmbiguousError, ProviderRejectedError } from '../../src/provider/errors';

interface Recorded {
  kind: 'counter' | 'histogram';
  name: string;
  value: number;
  tags: MetricTags;
}

/** A MetricMeter that records what it is given. */
function recordingMeter(out: Recorded[], base: MetricTags = {}): MetricMeter {
  return {
    createCounter: (name) => ({ name, kind: 'counter', valueType: 'int', add: (value: number, tags: MetricTags = {}) => void out.push({ kind: 'counter', name, value, tags: { ...base, ...tags } }), withTags: () => { throw new Error('unused'); } }),
    createHistogram: (name) => ({ name, kind: 'histogram', valueType: 'float', record: (value: number, tags: MetricTags = {}) => void out.push({ kind: 'histogram', name, value, tags: { ...base, ...tags } }), withTags: () => { throw new Error('unused'); } }),
    createGauge: () => { throw new Error('unused'); },
    withTags: (tags) => recordingMeter(out, { ...base, ...tags }),
  } as MetricMeter;
}

const info = (runId: string) => ({ workflowId: 'swap-r1', runId, namespace: 'default', taskQueue: 'tq', workflowType: 'swapWorkflow' }) as WorkflowInfo;

describe('the flows\' metric sink', () => {
  test('counts an occurrence of a run once however often the workflow code repeats it, tagged as the SDK tags workflow metrics', () => {
    const out: Recorded[] = [];
    const count = flowMetricSinks(() => recordingMeter(out)).mpfMetrics.count.fn;
    void count(info('run-1'), 'flowsFinished', { flow_kind: 'swap', state: 'confirmed' }, 'finished:4');
    void count(info('run-1'), 'flowsFinished', { flow_kind: 'swap', state: 'confirmed' }, 'finished:4'); // the task executed again
    void count(info('run-2'), 'flowsFinished', { flow_kind: 'swap', state: 'confirmed' }, 'finished:4'); // another run
    void count(info('run-1'), 'pinAttempts', { outcome: 'pin_rejected' }, 'pin:1');
    void count(info('run-1'), 'pinAttempts', { outcome: 'confirmed' }, 'pin:2');
    assert.deepEqual(
      out.map((r) => [r.name, r.value, r.tags.outcome ?? r.tags.state]),
      [['mpf_flows_finished', 1, 'confirmed'], ['mpf_flows_finished', 1, 'confirmed'], ['mpf_pin_attempts', 1, 'pin_rejected'], ['mpf_pin_attempts', 1, 'confirmed']],
    );
    assert.deepEqual(out[0]!.tags, { namespace: 'default', taskQueue: 'tq', workflowType: 'swapWorkflow', flow_kind: 'swap', state: 'confirmed' });
    assert.equal(flowMetricSinks().mpfMetrics.count.callDuringReplay, false);
  });

  test('creates every counter series at 0 with the labels it will be counted with', () => {
    const out: Recorded[] = [];
    initWorkerCounters({ namespace: 'default', taskQueue: 'tq' }, recordingMeter(out));
    assert.ok(out.every((r) => r.value === 0 && r.kind === 'counter'));
    const has = (name: string, tags: MetricTags) => out.some((r) => r.name === name && Object.entries(tags).every(([k, v]) => r.tags[k] === v));
    assert.ok(has('mpf_reconciliations', { flow_kind: 'payment_link', workflowType: 'paymentLinkWorkflow', taskQueue: 'tq' }));
    assert.ok(has('mpf_flows_finished', { flow_kind: 'swap', state: 'needs_reconciliation', workflowType: 'swapWorkflow' }));
    assert.ok(has('mpf_pin_attempts', { outcome: 'failed', workflowType: 'swapWorkflow' }));
    assert.ok(has('mpf_provider_calls', { endpoint: 'swapConfirm', error_kind: 'ambiguous', activityType: 'confirmSwap' }));
  });
});

describe('the instrumented provider client', () => {
  const fake = {
    initSwap: async () => ({ ok: true }),
    confirmSwap: async (req: { wallet_pin: string }) => {
      if (req.wallet_pin === '0000') throw new ProviderRejectedError('Incorrect wallet PIN', { endpoint: 'swapConfirm', httpStatus: 400 });
      throw new ProviderAmbiguousError('reset after writing', { endpoint: 'swapConfirm' });
    },
    createHostedLink: async () => ({}),
    listCategories: async () => [],
  } as unknown as ProviderClient;

  test('counts and times each call by endpoint and error kind in the activity meter, and passes results and errors through', async () => {
    const out: Recorded[] = [];
    const env = new MockActivityEnvironment({ activityType: 'confirmSwap' }, { metricMeter: recordingMeter(out) });
    const client = instrumentProvider(fake);
    assert.deepEqual(await env.run(() => client.initSwap({} as never)), { ok: true });
    await assert.rejects(env.run(() => client.confirmSwap({ wallet_pin: '0000' } as never)), ProviderRejectedError);
    await assert.rejects(env.run(() => client.confirmSwap({ wallet_pin: '1234' } as never)), ProviderAmbiguousError);
    const counted = out.filter((r) => r.name === 'mpf_provider_calls').map((r) => `${String(r.tags.endpoint)}/${String(r.tags.error_kind)}`);
    assert.deepEqual(counted, ['swapInit/none', 'swapConfirm/rejected', 'swapConfirm/ambiguous']);
    const timed = out.filter((r) => r.name === 'mpf_provider_call_duration_seconds');
    assert.equal(timed.length, 3);
    assert.ok(timed.every((r) => r.value >= 0 && r.value < 5));
  });

  test('times a call from when it is sent, not while it waited for its connection, and counts no call its admission refused', async () => {
    const out: Recorded[] = [];
    const env = new MockActivityEnvironment({ activityType: 'confirmSwap' }, { metricMeter: recordingMeter(out) });
    const sending = {
      // Waits 1 s for its connection, then is sent and answered at once.
      listCategories: async (send: SendOptions) => {
        await new Promise((r) => setTimeout(r, 1_000));
        await send.admit?.();
        return [];
      },
      confirmSwap: async (_req: unknown, send: SendOptions) => {
        await send.admit?.();
        return { status: 'success', message: 'ok' };
      },
    } as unknown as ProviderClient;
    const client = instrumentProvider(sending);
    await env.run(() => client.listCategories());
    const held = new Error('held by the provider guard, nothing sent');
    await assert.rejects(
      env.run(() =>
        client.confirmSwap({} as never, {
          admit: () => {
            throw held;
          },
        }),
      ),
      (e: unknown) => e === held,
    );
    assert.deepEqual(out.filter((r) => r.name === 'mpf_provider_calls').map((r) => r.tags.endpoint), ['categories'], 'the held confirmation is not a provider call');
    const [timed] = out.filter((r) => r.name === 'mpf_provider_call_duration_seconds');
    assert.ok(timed && timed.value < 1, `timed ${timed?.value} s: from sending, not from the wait`);
  });

  test('records nothing outside an activity (a client used directly), and the event-delivery hook likewise', async () => {
    const out: Recorded[] = [];
    await instrumentProvider(fake).listCategories();
    recordEventDelivery({ eventType: 'swap.confirmed', result: 'delivered', seconds: 0.1 });
    assert.equal(out.length, 0);
    const env = new MockActivityEnvironment({}, { metricMeter: recordingMeter(out) });
    await env.run(async () => recordEventDelivery({ eventType: 'swap.confirmed', result: 'delivered', seconds: 0.1 }));
    assert.deepEqual(out.map((r) => r.name), ['mpf_event_deliveries', 'mpf_event_delivery_duration_seconds']);
  });
});
