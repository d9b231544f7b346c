/**
 * Webhook endpoints as an API (`/v1/webhook_endpoints`) on a real gateway, worker and Temporal:
 * kept in the deployment's record and read by every delivery when it is sent, so running flows
 * follow the changes; a secret per endpoint, shown once, rolled with an overlap; operators only.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { KeyringSource, newKey } from '../../src/auth/keyring';
import { NO_MERCHANT_EVENTS } from '../../src/merchant-events/config';
import { type RunningListener, startEventListener } from '../../src/merchant-events/listener';
import { verifyDelivery } from '../../src/merchant-events/signing';
import { webhookEndpointsWorkflowId } from '../../src/contract/webhook-endpoints';
import { notificationSignal } from '../../src/workflows/messages';
import { linkBody, SIM_PIN, swapBody, uniqueRef } from '../helpers/fixtures';
import { gatewayCaller, type GatewayHarness, startGatewayStack } from '../helpers/gateway';
import { eventually } from '../helpers/stack';

const operator = newKey({ id: 'hooks-operator', role: 'operator' });
const backend = newKey({ id: 'hooks-backend', role: 'backend' });

interface Receiver {
  listener: RunningListener;
  /** The secrets it verifies with (filled in once the endpoint's secret is known). */
  secrets: string[];
  /** The types of the verified events of one flow it received. */
  types(flowId: string): string[];
}

describe('webhook endpoints as an API', () => {
  let h: GatewayHarness;
  const receivers: Receiver[] = [];
  const as = (key: string) => gatewayCaller(h.gw.url, key);
  const ops = (method: string, path: string, body?: unknown) => as(operator.key).api(method, path, body);

  const receiver = async (): Promise<Receiver> => {
    const secrets: string[] = [];
    const listener = await startEventListener({ secrets });
    const r: Receiver = {
      listener,
      secrets,
      types: (flowId) => listener.deliveries.filter((d) => d.verified && d.id.startsWith(`evt_${flowId}_`)).map((d) => d.event!.type),
    };
    receivers.push(r);
    return r;
  };
  /** An endpoint at a new receiver, which verifies with its secret. */
  const endpoint = async (enabled_events: string[]): Promise<{ id: string; secret: string; rx: Receiver }> => {
    const rx = await receiver();
    const r = await ops('POST', '/v1/webhook_endpoints', { url: rx.listener.url, enabled_events });
    assert.equal(r.status, 201, r.text);
    rx.secrets.push(r.json.secret as string);
    return { id: r.json.id as string, secret: r.json.secret as string, rx };
  };
  const startSwap = async (): Promise<string> => {
    const r = await as(backend.key).api('POST', '/v1/swaps', swapBody(uniqueRef('hooks')));
    assert.equal(r.status, 201, r.text);
    return r.json.swap_id as string;
  };
  const cancel = async (swapId: string): Promise<void> => {
    const r = await as(backend.key).api('POST', `/v1/swaps/${swapId}/cancel`, {});
    assert.equal(r.status, 200, r.text);
  };
  const settle = () => new Promise((r) => setTimeout(r, 1_500));
  /** Whether the flow's delivery workflow (`events-<flow_id>`) was ever started. */
  const deliveryStarted = async (flowId: string): Promise<boolean> =>
    h.stack.client.workflow
      .getHandle(`events-${flowId}`)
      .describe()
      .then(
        () => true,
        (err: Error) => {
          if (err.name === 'WorkflowNotFoundError') return false;
          throw err;
        },
      );

  /** The local activities a flow's history recorded (each a marker: eventTargets, eventSettings). */
  const localActivityMarkers = async (flowId: string): Promise<number> => {
    const history = await h.stack.client.workflow.getHandle(flowId).fetchHistory();
    return (history.events ?? []).filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity').length;
  };

  before(async () => {
    h = await startGatewayStack({
      events: { ...NO_MERCHANT_EVENTS, schedule: { ...NO_MERCHANT_EVENTS.schedule, initial_interval_ms: 200, max_interval_ms: 1_000 } },
      webhookEndpointsTtlMs: 0,
      gateway: { keyring: new KeyringSource({ json: JSON.stringify([operator.entry, backend.entry]) }) },
    });
  });
  after(async () => {
    await h?.stop();
    for (const r of receivers) await r.listener.close();
  });

  test('a created endpoint shows its secret once: never in a later GET or list, the logs, or the record in Temporal in plaintext', async () => {
    const created = await ops('POST', '/v1/webhook_endpoints', { url: 'https://hooks.example.com/mpf?token=abc', enabled_events: ['swap.confirmed'], description: 'orders' });
    assert.equal(created.status, 201, created.text);
    const { id, secret } = created.json as { id: string; secret: string };
    assert.match(id, /^we_[0-9a-f]{24}$/);
    assert.match(secret, /^whsec_/);
    assert.equal(created.json.status, 'enabled');
    const got = await ops('GET', `/v1/webhook_endpoints/${id}`);
    assert.equal(got.status, 200, got.text);
    assert.equal(got.json.description, 'orders');
    assert.deepEqual(got.json.enabled_events, ['swap.confirmed']);
    assert.equal(got.json.secret, undefined);
    const list = await ops('GET', '/v1/webhook_endpoints');
    assert.ok((list.json.items as Array<{ id: string }>).some((e) => e.id === id));
    assert.ok(!list.text.includes('whsec_') && !got.text.includes(secret));
    assert.ok(!h.logs.join('\n').includes(secret), 'not in the gateway log');
    const record = h.stack.client.workflow.getHandle(webhookEndpointsWorkflowId(h.stack.taskQueue));
    const history = await h.stack.client.workflowService.getWorkflowExecutionHistory({ namespace: h.stack.namespace, execution: { workflowId: record.workflowId } });
    const raw = JSON.stringify(history.history, (_k, v: unknown) => (v instanceof Uint8Array ? Buffer.from(v).toString('latin1') : v));
    assert.ok(!raw.includes(secret) && !raw.includes(secret.slice('whsec_'.length)), 'the history holds it encrypted only');
    const desc = await record.describe();
    assert.ok(!JSON.stringify(desc.memo ?? {}).includes('whsec_') && !JSON.stringify(desc.raw.workflowExecutionInfo?.searchAttributes ?? {}).includes('whsec_'));
    const retried = await ops('POST', `/v1/webhook_endpoints/${id}/roll_secret`, { expires_in_seconds: 0 });
    assert.equal(retried.status, 200, retried.text);
    assert.notEqual(retried.json.secret, secret);
    assert.equal((await ops('GET', `/v1/webhook_endpoints/${id}`)).json.secret, undefined);
    assert.equal((await ops('DELETE', `/v1/webhook_endpoints/${id}`)).json.deleted, true);
    assert.equal((await ops('GET', `/v1/webhook_endpoints/${id}`)).status, 404);
  });

  test('bad input is refused naming the field, and an unknown endpoint is 404', async () => {
    const cases: Array<[string, string, unknown, string]> = [
      ['POST', '/v1/webhook_endpoints', { url: 'ftp://hooks.example.com/', enabled_events: ['*'] }, 'url'],
      ['POST', '/v1/webhook_endpoints', { url: 'http://169.254.169.254/latest', enabled_events: ['*'] }, 'url'],
      ['POST', '/v1/webhook_endpoints', { url: 'https://hooks.example.com/', enabled_events: ['swap.nope'] }, 'enabled_events.0'],
      ['POST', '/v1/webhook_endpoints', { url: 'https://hooks.example.com/', enabled_events: [] }, 'enabled_events'],
      ['GET', '/v1/webhook_endpoints/not-an-id', undefined, 'endpoint_id'],
      ['POST', `/v1/webhook_endpoints/we_${'0'.repeat(24)}/roll_secret`, { expires_in_seconds: -1 }, 'expires_in_seconds'],
    ];
    for (const [method, path, body, field] of cases) {
      const r = await ops(method, path, body);
      assert.equal(r.status, 400, `${method} ${path} ${JSON.stringify(body)}: ${r.text}`);
      assert.equal(r.json.field, field, r.text);
    }
    const chosen = await ops('POST', '/v1/webhook_endpoints', { url: 'https://hooks.example.com/', enabled_events: ['*'], secret: 'whsec_x' });
    assert.equal(chosen.status, 400, 'a secret is never chosen by the caller');
    assert.match(chosen.json.message as string, /secret/);
    assert.equal((await ops('POST', `/v1/webhook_endpoints/we_${'0'.repeat(24)}/disable`)).status, 404);
  });

  test('a backend key is refused every webhook endpoint route with 403', async () => {
    const be = as(backend.key);
    assert.equal((await be.api('GET', '/v1/webhook_endpoints')).status, 403);
    assert.equal((await be.api('POST', '/v1/webhook_endpoints', { url: 'https://hooks.example.com/', enabled_events: ['*'] })).status, 403);
    assert.equal((await be.api('POST', `/v1/webhook_endpoints/we_${'0'.repeat(24)}/roll_secret`, {})).status, 403);
  });

  test('a running swap started before an endpoint was added delivers its next event to the new endpoint', async () => {
    const swapId = await startSwap();
    await settle(); // its swap.awaiting_pin had nowhere to go
    assert.equal(await deliveryStarted(swapId), false, 'no delivery workflow while no endpoint takes its events');
    const { rx } = await endpoint(['swap.cancelled']);
    await cancel(swapId);
    await eventually(async () => rx.types(swapId).includes('swap.cancelled'), 30_000, 'swap.cancelled at the new endpoint');
    assert.deepEqual(rx.types(swapId), ['swap.cancelled']);
  });

  test("a swap confirmed after an endpoint was added delivers swap.confirmed there, known from the confirmation's own answer", async () => {
    const swapId = await startSwap();
    await settle();
    assert.equal(await deliveryStarted(swapId), false, 'no delivery workflow while no endpoint takes its events');
    const { id, rx } = await endpoint(['swap.confirmed']);
    assert.equal((await h.stack.mpf.submitPin(swapId, { wallet_pin: SIM_PIN }))?.outcome, 'confirmed');
    await eventually(async () => rx.types(swapId).includes('swap.confirmed'), 30_000, 'swap.confirmed at the new endpoint');
    assert.deepEqual(rx.types(swapId), ['swap.confirmed']);
    // The confirmation's answer said where its event goes: no eventTargets local activity was asked.
    assert.equal(await localActivityMarkers(swapId), 0, 'no local activity in the swap\'s history');
    await ops('DELETE', `/v1/webhook_endpoints/${id}`);
  });

  test("a payment link paid after an endpoint was added delivers payment_link.paid there, known from the notification's own reading", async () => {
    const r = await as(backend.key).api('POST', '/v1/payment-links', linkBody(uniqueRef('hooks-link')));
    assert.equal(r.status, 201, r.text);
    const linkId = r.json.link_id as string;
    await settle();
    assert.equal(await deliveryStarted(linkId), false, 'no delivery workflow while no endpoint takes its events');
    const { id, rx } = await endpoint(['payment_link.paid']);
    await settle(); // the gateway's reading of the endpoints is cached as a worker's (2 s)
    await h.stack.control.completeLink(r.json.payment_ref as string);
    await eventually(async () => rx.types(linkId).includes('payment_link.paid'), 30_000, 'payment_link.paid at the new endpoint');
    assert.deepEqual(rx.types(linkId), ['payment_link.paid']);
    assert.equal(await localActivityMarkers(linkId), 0, 'no local activity in the link\'s history');
    await ops('DELETE', `/v1/webhook_endpoints/${id}`);
  });

  test('a notification whose registered_types is not a list of strings is still applied, and its event still finds the endpoint', async () => {
    const r = await as(backend.key).api('POST', '/v1/payment-links', linkBody(uniqueRef('hooks-junk')));
    assert.equal(r.status, 201, r.text);
    const linkId = r.json.link_id as string;
    const { id, rx } = await endpoint(['payment_link.paid']);
    // As a sender other than our gateway might: the field is ignored and the flow asks itself.
    await h.stack.client.workflow.getHandle(linkId).signal(notificationSignal, {
      dedup_key: `id:${uniqueRef('junk')}`,
      received_at: new Date().toISOString(),
      payload: { event: 'payment.completed', status: 'successful', payment_ref: r.json.payment_ref },
      registered_types: 'payment_link.paid' as unknown as string[],
    });
    await eventually(async () => rx.types(linkId).includes('payment_link.paid'), 30_000, 'payment_link.paid at the endpoint');
    const end = (await h.stack.client.workflow.getHandle(linkId).result()) as { state: string };
    assert.equal(end.state, 'paid');
    await ops('DELETE', `/v1/webhook_endpoints/${id}`);
  });

  test('an event type not in enabled_events is not delivered there', async () => {
    const only = await endpoint(['swap.confirmed']);
    const all = await endpoint(['*']);
    const swapId = await startSwap();
    await cancel(swapId);
    await eventually(async () => all.rx.types(swapId).length === 2, 30_000, 'both events at the * endpoint');
    await settle();
    assert.deepEqual(only.rx.types(swapId), []);
    assert.equal(only.rx.listener.deliveries.filter((d) => d.id.startsWith(`evt_${swapId}_`)).length, 0);
    for (const e of [only, all]) await ops('DELETE', `/v1/webhook_endpoints/${e.id}`);
  });

  test('a disabled endpoint receives nothing, and again once enabled', async () => {
    const off = await endpoint(['*']);
    const on = await endpoint(['*']);
    const disabled = await ops('POST', `/v1/webhook_endpoints/${off.id}/disable`);
    assert.equal(disabled.json.status, 'disabled', disabled.text);
    const swapId = await startSwap();
    await eventually(async () => on.rx.types(swapId).includes('swap.awaiting_pin'), 30_000, 'swap.awaiting_pin at the enabled endpoint');
    assert.equal((await ops('POST', `/v1/webhook_endpoints/${off.id}/enable`)).json.status, 'enabled');
    await cancel(swapId);
    await eventually(async () => off.rx.types(swapId).includes('swap.cancelled'), 30_000, 'swap.cancelled once enabled');
    assert.deepEqual(off.rx.types(swapId), ['swap.cancelled'], 'nothing while it was disabled');
    for (const e of [off, on]) await ops('DELETE', `/v1/webhook_endpoints/${e.id}`);
  });

  test('a swap whose only endpoint is disabled starts no delivery workflow, and its next event after the endpoint is enabled goes there', async () => {
    const off = await endpoint(['*']);
    assert.equal((await ops('POST', `/v1/webhook_endpoints/${off.id}/disable`)).json.status, 'disabled');
    const swapId = await startSwap();
    await settle();
    assert.equal(await deliveryStarted(swapId), false, 'no delivery workflow for a disabled endpoint');
    assert.equal((await ops('POST', `/v1/webhook_endpoints/${off.id}/enable`)).json.status, 'enabled');
    await cancel(swapId);
    await eventually(async () => off.rx.types(swapId).includes('swap.cancelled'), 30_000, 'swap.cancelled once enabled');
    assert.deepEqual(off.rx.types(swapId), ['swap.cancelled'], 'nothing while it was disabled');
    await ops('DELETE', `/v1/webhook_endpoints/${off.id}`);
  });

  test('a redelivery to a named endpoint reaches only it', async () => {
    const a = await endpoint(['*']);
    const b = await endpoint(['*']);
    const swapId = await startSwap();
    await cancel(swapId);
    await eventually(async () => a.rx.types(swapId).length === 2 && b.rx.types(swapId).length === 2, 30_000, 'both endpoints got both events');
    const eventId = `evt_${swapId}_1`;
    const r = await as(backend.key).api('POST', `/v1/events/${eventId}/redeliver`, { endpoint: a.id });
    assert.equal(r.status, 202, r.text);
    assert.deepEqual((r.json.deliveries as Array<{ endpoint: string }>).map((d) => d.endpoint), [new URL(a.rx.listener.url).host]);
    await eventually(async () => a.rx.listener.deliveries.filter((d) => d.id === eventId && d.verified).length === 2, 30_000, 'the event again at the named endpoint');
    await settle();
    assert.equal(b.rx.listener.deliveries.filter((d) => d.id === eventId).length, 1, 'the other endpoint got it once');
    const unknown = await as(backend.key).api('POST', `/v1/events/${eventId}/redeliver`, { endpoint: 'we_nope' });
    assert.equal(unknown.status, 400, unknown.text);
    assert.equal(unknown.json.field, 'endpoint');
    for (const e of [a, b]) await ops('DELETE', `/v1/webhook_endpoints/${e.id}`);
  });

  test('a rolled secret signs beside the new one during the overlap, and not after a roll with no overlap', async () => {
    const e = await endpoint(['swap.awaiting_pin', 'swap.cancelled']);
    const rolled = await ops('POST', `/v1/webhook_endpoints/${e.id}/roll_secret`, {});
    assert.equal(rolled.status, 200, rolled.text);
    const fresh = rolled.json.secret as string;
    assert.ok(Date.parse(rolled.json.previous_secret_expires_at as string) > Date.now() + 23 * 3_600_000, 'the overlap is 24 h by default');
    const swapId = await startSwap();
    const d = await eventually(async () => e.rx.listener.deliveries.find((x) => x.id === `evt_${swapId}_1` && x.verified), 30_000, 'the event signed during the overlap');
    assert.equal(d.headers['webhook-signature']!.split(' ').length, 2);
    assert.doesNotThrow(() => verifyDelivery([e.secret], d.body, d.headers), 'the previous secret verifies');
    assert.doesNotThrow(() => verifyDelivery([fresh], d.body, d.headers), 'the new secret verifies');
    const again = await ops('POST', `/v1/webhook_endpoints/${e.id}/roll_secret`, { expires_in_seconds: 0 });
    const newest = again.json.secret as string;
    assert.equal(again.json.previous_secret_expires_at, undefined);
    e.rx.secrets.push(newest);
    await cancel(swapId);
    const last = await eventually(async () => e.rx.listener.deliveries.find((x) => x.id === `evt_${swapId}_2` && x.verified), 30_000, 'the next event');
    assert.equal(last.headers['webhook-signature']!.split(' ').length, 1);
    assert.doesNotThrow(() => verifyDelivery([newest], last.body, last.headers));
    assert.throws(() => verifyDelivery([e.secret, fresh], last.body, last.headers), 'the rolled-out secrets no longer sign');
  });
});
