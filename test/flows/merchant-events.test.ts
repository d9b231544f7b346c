import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { temporal } from '@temporalio/proto';
import { Webhook } from 'standardwebhooks';
import { loadEnv } from '../../src/config/env';
import { merchantEventsFromEnv, NO_MERCHANT_EVENTS } from '../../src/merchant-events/config';
import { startEventListener, type ReceivedDelivery, type RunningListener } from '../../src/merchant-events/listener';
import { generateSecret } from '../../src/merchant-events/signing';
import type { InputError } from '../../src/starter/client/errors';
import { MpfClient } from '../../src/starter/client/mpf-client';
import { EVENT_DELIVERY_WORKFLOW_TYPE, type EventDeliveryInput, EVENT_TYPES, eventTypeFor, FLOW_EVENT_TYPES } from '../../src/contract/merchant-events';
import { eventDeliveryWorkflowId } from '../../src/workflows/event-types';
import { flowId } from '../../src/workflows/flow-ids';
import { eventSchemaIssues } from '../../src/contract/merchant-event-schemas';
import type { LinkView, SwapView } from '../../src/workflows/messages';
import { linkBody, SIM_PIN, swapBody, uniqueRef } from '../helpers/fixtures';
import { eventually, startStack, type Stack } from '../helpers/stack';
import { parseAllowedHosts } from '../../src/config/webhook-egress';

const CANARY_PIN = 'canary-PIN-4711';
const SECRET = generateSecret();

/** Pays a link the way the customer does on the simulator's hosted checkout: the form's POST. */
async function payOnCheckout(checkoutUrl: string, paymentRef: string): Promise<number> {
  const res = await request(`${checkoutUrl}/pay`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ payment_ref: paymentRef, action: 'complete' }).toString(),
  });
  await res.body.dump();
  return res.statusCode;
}

const ofFlow = (l: RunningListener, flowId: string): ReceivedDelivery[] => l.deliveries.filter((d) => d.event?.id.startsWith(`evt_${flowId}_`));

describe('which state change is which event (one table)', () => {
  test('every state change named by the issue maps to its event type, and steps inside a flow emit none', () => {
    assert.equal(eventTypeFor('swap', 'initializing', 'awaiting_pin'), 'swap.awaiting_pin');
    assert.equal(eventTypeFor('swap', 'confirming', 'awaiting_pin'), 'swap.pin_rejected');
    assert.equal(eventTypeFor('swap', 'confirming', 'confirmed'), 'swap.confirmed');
    assert.equal(eventTypeFor('swap', 'awaiting_pin', 'confirming'), undefined);
    assert.equal(eventTypeFor('swap', 'confirming', 'confirming'), undefined);
    assert.equal(eventTypeFor('payment_link', 'creating', 'awaiting_payment'), 'payment_link.created');
    assert.equal(eventTypeFor('payment_link', 'awaiting_payment', 'paid'), 'payment_link.paid');
    assert.equal(eventTypeFor('payment_link', 'needs_reconciliation', 'reconciled'), 'payment_link.reconciled');
    // Leaving needs_reconciliation is `reconciled` whatever the state it was resolved to.
    assert.equal(eventTypeFor('swap', 'needs_reconciliation', 'confirmed'), 'swap.reconciled');
    // A state added later emits <kind>.<state> without a change here.
    assert.equal(eventTypeFor('payment_link', 'awaiting_payment', 'refunded'), 'payment_link.refunded');
    for (const t of ['swap.awaiting_pin', 'swap.confirmed', 'swap.pin_rejected', 'swap.expired', 'swap.failed', 'swap.cancelled', 'swap.needs_reconciliation', 'swap.reconciled', 'payment_link.created', 'payment_link.paid', 'payment_link.failed', 'payment_link.expired', 'payment_link.cancelled', 'payment_link.needs_reconciliation', 'payment_link.reconciled']) {
      assert.ok(EVENT_TYPES.includes(t), t);
    }
  });
});

describe('merchant event configuration', () => {
  const base = { PAYLOAD_ENCRYPTION_KEYS: 'k1:x' };
  test('endpoints without a signing secret are refused, naming MERCHANT_WEBHOOK_SECRET', () => {
    assert.throws(() => loadEnv({ ...base, MERCHANT_WEBHOOK_URL: 'http://127.0.0.1:9/hooks' }), /MERCHANT_WEBHOOK_SECRET: is required/);
  });
  test('a malformed secret is refused without echoing it', () => {
    assert.throws(
      () => loadEnv({ ...base, MERCHANT_WEBHOOK_URL: 'http://127.0.0.1:9/', MERCHANT_WEBHOOK_SECRET: 'not-a-real-secret-value' }),
      (err: Error) => /MERCHANT_WEBHOOK_SECRET: must be whsec_/.test(err.message) && !err.message.includes('not-a-real-secret-value'),
    );
  });
  test('a URL that is not http(s) is refused, naming the variable', () => {
    assert.throws(() => loadEnv({ ...base, MERCHANT_WEBHOOK_URL: 'ftp://example.test/x', MERCHANT_WEBHOOK_SECRET: SECRET }), /MERCHANT_WEBHOOK_URL: must be a comma-separated list of http\(s\) URLs/);
  });
  test('production refuses a loopback endpoint', () => {
    assert.throws(
      () => loadEnv({ ...base, NODE_ENV: 'production', MPS_BASE_URL: 'http://127.0.0.1:1', MERCHANT_WEBHOOK_URLS: 'http://localhost:9/', MERCHANT_WEBHOOK_SECRET: SECRET }),
      /MERCHANT_WEBHOOK_URLS: names a loopback address/,
    );
  });
  test('several endpoints (both variables, comma-separated), several secrets, and the schedule are read; _FILE works like everywhere', async () => {
    const fs = await import('node:fs');
    const os = await import('node:os');
    const path = await import('node:path');
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'mpf-ev-')), 'secret');
    const second = generateSecret();
    fs.writeFileSync(file, `${SECRET} ${second}\n`);
    const cfg = merchantEventsFromEnv(
      loadEnv({
        ...base,
        MERCHANT_WEBHOOK_URL: 'http://127.0.0.1:9/a, http://127.0.0.1:9/b',
        MERCHANT_WEBHOOK_URLS: 'http://127.0.0.1:9/b,http://127.0.0.1:9/c',
        MERCHANT_WEBHOOK_SECRET_FILE: file,
        MERCHANT_WEBHOOK_RETRY_SECONDS: '60',
        MERCHANT_WEBHOOK_RETRY_INITIAL_SECONDS: '0.2',
      }),
    );
    assert.deepEqual(cfg.urls, ['http://127.0.0.1:9/a', 'http://127.0.0.1:9/b', 'http://127.0.0.1:9/c']);
    assert.deepEqual(cfg.secrets, [SECRET, second]);
    assert.equal(cfg.schedule.retry_for_ms, 60_000);
    assert.equal(cfg.schedule.initial_interval_ms, 200);
    assert.equal(merchantEventsFromEnv(loadEnv(base)).schedule.retry_for_ms, 3 * 86_400_000, 'the default retry period is 3 days');
  });
});

describe('merchant events of real flows (real Temporal, simulator over HTTP)', () => {
  let stack: Stack;
  let listener: RunningListener;

  before(async () => {
    listener = await startEventListener({ secrets: [SECRET] });
    stack = await startStack({
      simulator: { pins: { 'user-canary': CANARY_PIN } },
      events: { ...NO_MERCHANT_EVENTS, secrets: [SECRET], schedule: { ...NO_MERCHANT_EVENTS.schedule, initial_interval_ms: 200 } },
    });
  });
  after(async () => {
    await stack?.stop();
    await listener?.close();
  });

  test("a link paid on the simulator's hosted checkout produces a signed payment_link.paid event that the package verifies", async () => {
    const { link } = await stack.mpf.createLink(linkBody(uniqueRef('ev-paid'), { webhook_url: listener.url }));
    assert.equal(link.state, 'awaiting_payment');
    assert.equal(await payOnCheckout(stack.sim.checkoutUrl, link.payment_ref!), 303);
    const paid = await eventually(async () => ofFlow(listener, link.link_id).find((d) => d.event?.type === 'payment_link.paid'), 30_000, 'payment_link.paid');
    // Verified by the receiver, and here once more straight with the package.
    assert.ok(paid.verified);
    const event = new Webhook(SECRET).verify(paid.body, paid.headers) as { id: string; type: string; data: Record<string, unknown> };
    assert.equal(event.type, 'payment_link.paid');
    assert.equal(paid.headers['webhook-id'], event.id);
    assert.equal(event.id, `evt_${link.link_id}_2`);
    assert.equal(event.data.link_id, link.link_id);
    assert.equal(event.data.payment_ref, link.payment_ref);
    assert.equal(event.data.previous_state, 'awaiting_payment');
    // A forged signature is refused by the same package.
    assert.throws(() => new Webhook(generateSecret()).verify(paid.body, paid.headers), /No matching signature/);
    assert.deepEqual(
      ofFlow(listener, link.link_id).map((d) => d.event!.type),
      ['payment_link.created', 'payment_link.paid'],
    );

    // The flow's view lists its events with their deliveries (merged by the client).
    const final = (await stack.client.workflow.getHandle(link.link_id).result()) as LinkView;
    assert.equal(final.state, 'paid');
    const view = await eventually(async () => {
      const v = await stack.mpf.getLink(link.link_id);
      return v.events?.every((e) => e.deliveries?.[0]?.state === 'delivered') && v;
    }, 15_000, 'deliveries in the view');
    assert.deepEqual(view.events!.map((e) => e.type), ['payment_link.created', 'payment_link.paid']);
    const d = view.events![1]!.deliveries![0]!;
    assert.equal(d.endpoint, new URL(listener.url).host);
    assert.equal(d.attempts, 1);
    assert.equal(d.last_status, 200);
    assert.ok(d.delivered_at);
  });

  test('a delivery workflow already running under the flow\'s delivery id (a flow reset in Temporal) is handed the flow\'s events, and the flow goes on', async () => {
    const ref = uniqueRef('ev-existing');
    const linkId = flowId('payment_link', ref);
    const schedule = { ...NO_MERCHANT_EVENTS.schedule, initial_interval_ms: 200, idle_close_ms: 60_000 };
    const input: EventDeliveryInput = { flow_id: linkId, endpoints: [listener.url], schedule, events: [] };
    await stack.client.workflow.start(EVENT_DELIVERY_WORKFLOW_TYPE, { workflowId: eventDeliveryWorkflowId(linkId), taskQueue: stack.taskQueue, args: [input] });
    const { link } = await stack.mpf.createLink(linkBody(ref, { webhook_url: listener.url }));
    assert.equal(link.link_id, linkId);
    // The outbox met the running one (WorkflowExecutionAlreadyStartedError) and signalled it the event.
    await eventually(async () => ofFlow(listener, linkId).find((d) => d.event?.type === 'payment_link.created'), 30_000, 'payment_link.created through the running delivery workflow');
    assert.equal(await payOnCheckout(stack.sim.checkoutUrl, link.payment_ref!), 303);
    const final = (await stack.client.workflow.getHandle(linkId).result()) as LinkView;
    assert.equal(final.state, 'paid');
    await eventually(async () => ofFlow(listener, linkId).find((d) => d.event?.type === 'payment_link.paid'), 30_000, 'payment_link.paid');
  });

  test("a flow's event settings come with its first provider activity: no local activity of its own in its history, events delivered to its webhook_url", async () => {
    const txn = uniqueRef('ev-handover');
    const started = await stack.mpf.startSwap(swapBody(txn, { webhook_url: listener.url }));
    assert.equal((await stack.mpf.submitPin(started.swap.swap_id, { wallet_pin: SIM_PIN }))?.outcome, 'confirmed');
    await eventually(async () => ofFlow(listener, started.swap.swap_id).some((d) => d.event?.type === 'swap.confirmed'), 30_000, 'swap.confirmed');
    assert.deepEqual(
      ofFlow(listener, started.swap.swap_id).map((d) => d.event!.type),
      ['swap.awaiting_pin', 'swap.confirmed'],
    );
    const history = await stack.client.workflow.getHandle(started.swap.swap_id).fetchHistory();
    const markers = (history.events ?? []).map((e) => e.markerRecordedEventAttributes?.markerName).filter(Boolean);
    assert.ok(!markers.includes('core_local_activity'), `markers: ${markers.join(', ')}`);
    assert.ok(markers.includes('core_patch'), 'the merchant-events patch is still recorded');
  });

  test('no PIN, pin_token, notification token, auth_token or secret appears in any event body (canary values)', async () => {
    const txn = uniqueRef('ev-canary');
    const started = await stack.mpf.startSwap(swapBody(txn, { user_ref: 'user-canary', webhook_url: listener.url }));
    const rejected = await stack.mpf.submitPin(started.swap.swap_id, { wallet_pin: 'wrong-PIN-0000' });
    assert.equal(rejected?.outcome, 'pin_rejected');
    assert.equal((await stack.mpf.submitPin(started.swap.swap_id, { wallet_pin: CANARY_PIN }))?.outcome, 'confirmed');
    const swapId = started.swap.swap_id;
    const bodies = await eventually(async () => {
      const got = ofFlow(listener, swapId);
      return got.length >= 3 && got;
    }, 30_000, 'three swap events');
    assert.deepEqual(bodies.map((d) => d.event!.type), ['swap.awaiting_pin', 'swap.pin_rejected', 'swap.confirmed']);
    assert.deepEqual(bodies.map((d) => d.event!.id), [1, 2, 3].map((n) => `evt_${swapId}_${n}`));
    const final = (await stack.client.workflow.getHandle(swapId).result()) as SwapView;
    assert.equal(final.state, 'confirmed');

    // The values that must never leave: the PINs, the pin_token, the notification token the
    // provider was handed (from the simulator's ledger), the provider credentials, our secret.
    const init = (await stack.control.ledger({ endpoint: 'swap.init' })).requests.find((r) => (r.body as { txn_ref?: string }).txn_ref === txn);
    const notificationToken = String((init!.body as { notification_url: string }).notification_url).split('/').pop()!;
    assert.ok(notificationToken.length >= 40, 'the notification token was found');
    const canaries = [CANARY_PIN, 'wrong-PIN-0000', started.pin_token, notificationToken, SECRET, SECRET.slice(6), 'sim-secret-key', 'sim-access-token', 'sealed:v1', 'auth_token', 'notification_url'];
    for (const d of bodies) {
      for (const c of canaries) assert.ok(!d.body.includes(c) && !JSON.stringify(d.headers).includes(c), `${d.event!.type} carries ${c.slice(0, 12)}…`);
    }
    assert.equal(bodies[1]!.event!.data.pin_attempts_left, 2);
  });

  test('a webhook_url that is not an http(s) URL is refused, naming the field, and nothing starts', async () => {
    const txn = uniqueRef('ev-bad-url');
    await assert.rejects(stack.mpf.startSwap(swapBody(txn, { webhook_url: 'javascript:alert(1)' })), (err: InputError) => err.field === 'webhook_url');
    await assert.rejects(stack.client.workflow.getHandle(`swap-${txn}`).describe(), /not found/i);
  });

  test('production refuses a per-flow webhook_url unless MERCHANT_WEBHOOK_ALLOWED_HOSTS lists its host, and a loopback one unless its address is listed', async () => {
    const prod = new MpfClient({ client: stack.client, taskQueue: stack.taskQueue, keys: stack.keys, publicUrl: 'https://pay.example.test', production: true });
    await assert.rejects(prod.createLink(linkBody(uniqueRef('ev-prod'), { webhook_url: 'https://hooks.shop.example/x' })), (err: InputError) =>
      err.field === 'webhook_url' && /not enabled/.test(err.message),
    );
    const anyName = new MpfClient({ client: stack.client, taskQueue: stack.taskQueue, keys: stack.keys, publicUrl: 'https://pay.example.test', production: true, webhookEgress: parseAllowedHosts('*') });
    for (const url of ['http://127.0.0.1:9/hooks', 'http://localhost:9/hooks', 'http://localhost.:9/hooks']) {
      await assert.rejects(anyName.createLink(linkBody(uniqueRef('ev-prod'), { webhook_url: url })), (err: InputError) =>
        err.field === 'webhook_url' && /address that is not allowed/.test(err.message),
      );
    }
    // 127.0.0.1 listed: that literal only; a name of loopback is still refused.
    const listed = new MpfClient({ client: stack.client, taskQueue: stack.taskQueue, keys: stack.keys, publicUrl: 'https://pay.example.test', production: true, webhookEgress: parseAllowedHosts('127.0.0.1') });
    for (const url of ['http://localhost:9/hooks', 'http://localhost.:9/hooks', 'http://127.0.0.2:9/hooks']) {
      await assert.rejects(listed.createLink(linkBody(uniqueRef('ev-prod'), { webhook_url: url })), (err: InputError) =>
        err.field === 'webhook_url' && /not allowed|not on the deployment's list/.test(err.message),
        url,
      );
    }
  });

  test('real flows of both kinds emit every event type, and each delivered event validates against its schema', { timeout: 180_000 }, async () => {
    // A client of the same deployment with short waits: a swap in doubt settles in 3 s, a link lives 3 s.
    const quick = new MpfClient({ client: stack.client, taskQueue: stack.taskQueue, keys: stack.keys, publicUrl: stack.notificationBaseUrl, swapSettleWaitSeconds: 3, linkLifetimeSeconds: 3 });
    const hook = { webhook_url: listener.url };
    const flows: string[] = [];
    const resolution = (outcome: string, ref: string | undefined) => ({ outcome, provider_reference: ref!, operator: 'ops', note: 'checked at the provider' });

    // swap: needs_reconciliation (the provider confirms, its answer is lost, no notification comes), then reconciled.
    const doubt = (await quick.startSwap(swapBody(uniqueRef('ev-all-doubt'), hook))).swap;
    flows.push(doubt.swap_id);
    await stack.control.setFaults({ rules: [{ endpoint: 'swap.confirm', kind: 'apply_then_fail', times: 1 }], notifications: { delayMs: 600_000 } });
    try {
      assert.equal((await quick.submitPin(doubt.swap_id, { wallet_pin: SIM_PIN }))?.outcome, 'needs_reconciliation');
    } finally {
      await stack.control.clearFaults();
    }
    await quick.resolveFlow(doubt.swap_id, resolution('confirmed', doubt.payment_ref));
    // swap: expired (a 2 s provider window, for this swap only).
    await stack.control.setConfig({ swapExpiresInSeconds: 2 });
    const expiring = await stack.mpf.startSwap(swapBody(uniqueRef('ev-all-expire'), hook)).finally(() => stack.control.setConfig({ swapExpiresInSeconds: 300 }));
    flows.push(expiring.swap.swap_id);

    await Promise.all([
      (async () => {
        // swap: pin_rejected twice, then failed (attempts exhausted).
        const { swap } = await stack.mpf.startSwap(swapBody(uniqueRef('ev-all-fail'), hook));
        flows.push(swap.swap_id);
        for (let i = 0; i < 3; i++) await stack.mpf.submitPin(swap.swap_id, { wallet_pin: 'wrong-PIN-0000' });
      })(),
      (async () => {
        const { swap } = await stack.mpf.startSwap(swapBody(uniqueRef('ev-all-confirm'), hook));
        flows.push(swap.swap_id);
        assert.equal((await stack.mpf.submitPin(swap.swap_id, { wallet_pin: SIM_PIN }))?.outcome, 'confirmed');
      })(),
      (async () => {
        const { swap } = await stack.mpf.startSwap(swapBody(uniqueRef('ev-all-cancel'), hook));
        flows.push(swap.swap_id);
        await stack.mpf.cancelSwap(swap.swap_id);
      })(),
      (async () => {
        const { link } = await stack.mpf.createLink(linkBody(uniqueRef('ev-all-paid'), hook));
        flows.push(link.link_id);
        assert.equal(await payOnCheckout(stack.sim.checkoutUrl, link.payment_ref!), 303);
      })(),
      (async () => {
        const { link } = await stack.mpf.createLink(linkBody(uniqueRef('ev-all-failed'), hook));
        flows.push(link.link_id);
        await stack.control.failLink(link.payment_ref!);
      })(),
      (async () => {
        const { link } = await stack.mpf.createLink(linkBody(uniqueRef('ev-all-cancel'), hook));
        flows.push(link.link_id);
        await stack.mpf.cancelLink(link.link_id);
      })(),
      (async () => {
        const { link } = await quick.createLink(linkBody(uniqueRef('ev-all-expire'), hook));
        flows.push(link.link_id);
      })(),
      (async () => {
        // payment_link: needs_reconciliation (paid for another amount), then reconciled.
        const { link } = await stack.mpf.createLink(linkBody(uniqueRef('ev-all-recon'), hook));
        flows.push(link.link_id);
        const n = { event: 'collection.successful', data: { payment_ref: link.payment_ref, status: 'successful', notification_id: `n-${link.link_id}`, amount: 1 } };
        await stack.mpf.deliverNotification(link.link_id, n, JSON.stringify(n));
        await eventually(async () => (await stack.mpf.getLink(link.link_id)).state === 'needs_reconciliation', 15_000, 'needs_reconciliation');
        await stack.mpf.resolveFlow(link.link_id, resolution('paid', link.payment_ref));
      })(),
      (async () => {
        // swap: terminated in Temporal while it awaits the PIN (carried on by the workers' sweep).
        const { swap } = await stack.mpf.startSwap(swapBody(uniqueRef('ev-all-term'), hook));
        await stack.client.workflow.getHandle(swap.swap_id).terminate('test: break-glass');
        await eventually(async () => (await stack.mpf.getSwap(swap.swap_id)).events?.some((e) => e.type === 'swap.terminated'), 60_000, 'swap.terminated');
        flows.push(swap.swap_id);
      })(),
      (async () => {
        // payment_link: terminated in Temporal while the provider creates it (slowly, for this link only).
        const ref = uniqueRef('ev-all-term');
        await stack.control.setRefFaults(ref, [{ endpoint: 'link.create', kind: 'latency', latencyMs: [3_000, 3_000] }]);
        const creating = stack.mpf.createLink(linkBody(ref, hook));
        const linkId = `paylink-${ref}`;
        await eventually(async () => (await stack.mpf.getLink(linkId).catch(() => undefined))?.state === 'creating', 15_000, 'creating');
        await stack.client.workflow.getHandle(linkId).terminate('test: break-glass');
        assert.equal((await creating).link.state, 'terminated');
        await eventually(async () => (await stack.mpf.getLink(linkId)).events?.some((e) => e.type === 'payment_link.terminated'), 60_000, 'payment_link.terminated');
        flows.push(linkId);
      })(),
    ]);
    // Every flow has ended, and its last event reached the listener.
    for (const id of flows) {
      const final = (await stack.client.workflow.getHandle(id).result()) as SwapView | LinkView;
      const last = final.events!.at(-1)!.id;
      await eventually(async () => listener.deliveries.some((d) => d.event?.id === last), 30_000, `${id}'s last event`);
    }

    const delivered = flows.flatMap((id) => ofFlow(listener, id));
    assert.ok(delivered.every((d) => d.verified), 'every delivery is signed');
    for (const d of delivered) assert.deepEqual(eventSchemaIssues(d.event), [], `${d.event!.type} (${d.event!.id}) against its schema`);
    assert.deepEqual([...new Set(delivered.map((d) => d.event!.type))].sort(), [...FLOW_EVENT_TYPES].sort(), 'every flow event type was emitted (the provider guard\'s: test/flows/provider-guard.test.ts)');
  });

  test('a flow without any endpoint still lists its events, and starts no delivery workflow', async () => {
    const { link } = await stack.mpf.createLink(linkBody(uniqueRef('ev-none')));
    await stack.mpf.cancelLink(link.link_id);
    const final = (await stack.client.workflow.getHandle(link.link_id).result()) as LinkView;
    assert.deepEqual(final.events!.map((e) => e.type), ['payment_link.created', 'payment_link.cancelled']);
    // Nothing to deliver to (no endpoint configured, none registered): no child, no signal.
    await assert.rejects(stack.client.workflow.getHandle(`events-${link.link_id}`).describe(), { name: 'WorkflowNotFoundError' });
    const { events } = await stack.client.workflow.getHandle(link.link_id).fetchHistory();
    const types = new Set((events ?? []).map((e) => e.eventType));
    assert.ok(!types.has(temporal.api.enums.v1.EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED), 'no delivery child');
    assert.ok(!types.has(temporal.api.enums.v1.EventType.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED), 'no signal to one');
  });
});
