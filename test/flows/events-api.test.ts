/**
 * The merchant events API through the gateway: GET /v1/events (filters, cursor pages), GET
 * /v1/events/{id} with its deliveries, POST /v1/events/{id}/redeliver (same id, verified by the
 * receiver, shown as a redelivery), and the refusals (bad id, unknown event, no endpoint).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { eventSchemaIssues } from '../../src/contract/merchant-event-schemas';
import { NO_MERCHANT_EVENTS } from '../../src/merchant-events/config';
import { startEventListener, type RunningListener } from '../../src/merchant-events/listener';
import { generateSecret } from '../../src/merchant-events/signing';
import { linkBody, swapBody, uniqueRef } from '../helpers/fixtures';
import { type GatewayHarness, startGatewayStack } from '../helpers/gateway';
import { eventually } from '../helpers/stack';

interface Ev {
  id: string;
  type: string;
  timestamp: string;
  flow_id: string;
  data: Record<string, unknown>;
}

describe('the merchant events API', () => {
  const secret = generateSecret();
  const started = new Date(Date.now() - 1000).toISOString();
  let h: GatewayHarness;
  let listener: RunningListener;
  let linkId: string;
  let swapId: string;
  let quietLinkId: string;

  before(async () => {
    listener = await startEventListener({ secrets: [secret] });
    h = await startGatewayStack({ events: { ...NO_MERCHANT_EVENTS, secrets: [secret], schedule: { ...NO_MERCHANT_EVENTS.schedule, initial_interval_ms: 200 } } });
    const link = await h.api('POST', '/v1/payment-links', linkBody(uniqueRef('ev-api'), { webhook_url: listener.url }));
    assert.equal(link.status, 201, link.text);
    linkId = link.json.link_id as string;
    assert.equal((await h.api('POST', `/v1/payment-links/${linkId}/cancel`, {})).status, 200);
    const swap = await h.api('POST', '/v1/swaps', swapBody(uniqueRef('ev-api'), { webhook_url: listener.url }));
    assert.equal(swap.status, 201, swap.text);
    swapId = swap.json.swap_id as string;
    const quiet = await h.api('POST', '/v1/payment-links', linkBody(uniqueRef('ev-quiet')));
    assert.equal(quiet.status, 201, quiet.text);
    quietLinkId = quiet.json.link_id as string;
    await eventually(async () => listener.deliveries.filter((d) => d.id.startsWith(`evt_${linkId}_`) && d.status === 200).length === 2, 20_000, 'the link events delivered');
  });
  after(async () => {
    await h?.stop();
    await listener?.close();
  });

  test("a flow's events are listed newest first with their data, each valid against its published schema", async () => {
    const r = await h.api('GET', `/v1/events?flow_id=${linkId}`);
    assert.equal(r.status, 200, r.text);
    const items = r.json.items as Ev[];
    assert.deepEqual(items.map((e) => e.type), ['payment_link.cancelled', 'payment_link.created']);
    assert.deepEqual(items.map((e) => e.id), [`evt_${linkId}_2`, `evt_${linkId}_1`]);
    for (const e of items) {
      assert.equal(e.flow_id, linkId);
      assert.equal(e.data.link_id, linkId);
      const { flow_id: _f, ...body } = e;
      assert.deepEqual(eventSchemaIssues(body), [], `${e.type} validates`);
    }
    assert.equal(items[0]!.data.previous_state, 'awaiting_payment');
  });

  test('a type filter and a time range keep only matching events, across both kinds of flow', async () => {
    const cancelled = (await h.api('GET', `/v1/events?type=payment_link.cancelled&created_from=${encodeURIComponent(started)}`)).json.items as Ev[];
    assert.ok(cancelled.some((e) => e.id === `evt_${linkId}_2`));
    assert.ok(cancelled.every((e) => e.type === 'payment_link.cancelled'));
    const swaps = (await h.api('GET', `/v1/events?type=swap.awaiting_pin&created_from=${encodeURIComponent(started)}`)).json.items as Ev[];
    assert.deepEqual(swaps.map((e) => e.flow_id), [swapId]);
    const future = (await h.api('GET', `/v1/events?created_from=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`)).json.items as Ev[];
    assert.deepEqual(future, []);
  });

  test('pages of one event walk every event once, with a token bound to its filters', async () => {
    const seen: string[] = [];
    let token: string | undefined;
    const q = `created_from=${encodeURIComponent(started)}&limit=1`;
    for (let i = 0; i < 20; i++) {
      const r = await h.api('GET', `/v1/events?${q}${token ? `&page_token=${encodeURIComponent(token)}` : ''}`);
      assert.equal(r.status, 200, r.text);
      assert.ok((r.json.items as Ev[]).length <= 1);
      seen.push(...(r.json.items as Ev[]).map((e) => e.id));
      token = r.json.next_page_token as string | undefined;
      if (!token) break;
    }
    assert.equal(token, undefined, 'the walk ends');
    assert.equal(new Set(seen).size, seen.length, 'no event twice');
    for (const id of [`evt_${linkId}_1`, `evt_${linkId}_2`, `evt_${swapId}_1`, `evt_${quietLinkId}_1`]) assert.ok(seen.includes(id), `${id} listed`);
    const first = await h.api('GET', `/v1/events?${q}`);
    const other = await h.api('GET', `/v1/events?limit=1&page_token=${encodeURIComponent(first.json.next_page_token as string)}`);
    assert.equal(other.status, 400);
    assert.equal(other.json.field, 'page_token');
  });

  test('one event shows its delivery per endpoint; a bad id is 400 naming event_id and an unknown one 404', async () => {
    const r = await h.api('GET', `/v1/events/evt_${linkId}_2`);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.type, 'payment_link.cancelled');
    assert.deepEqual(
      (r.json.deliveries as Array<{ endpoint: string; state: string }>).map((d) => [d.endpoint, d.state]),
      [[new URL(listener.url).host, 'delivered']],
    );
    assert.deepEqual(r.json.redeliveries, []);
    const bad = await h.api('GET', '/v1/events/not-an-event');
    assert.equal(bad.status, 400);
    assert.equal(bad.json.field, 'event_id');
    assert.equal((await h.api('GET', `/v1/events/evt_${linkId}_9`)).status, 404);
    assert.equal((await h.api('GET', `/v1/events/evt_paylink-nope-${Date.now()}_1`)).status, 404);
    const unknown = await h.api('GET', '/v1/events?kind=swap');
    assert.equal(unknown.status, 400);
    assert.equal(unknown.json.field, 'kind');
  });

  test('a redelivery sends the same event again, verified by the receiver, and is shown beside the first delivery', async () => {
    const eventId = `evt_${linkId}_1`;
    const before = listener.deliveries.filter((d) => d.id === eventId).length;
    const r = await h.api('POST', `/v1/events/${eventId}/redeliver`);
    assert.equal(r.status, 202, r.text);
    assert.equal(r.json.id, `redeliver-${eventId}-1`);
    await eventually(async () => listener.deliveries.filter((d) => d.id === eventId && d.verified && d.status === 200).length > before, 20_000, 'the event arrives again');
    const again = listener.deliveries.filter((d) => d.id === eventId).at(-1)!;
    assert.equal(again.event?.type, 'payment_link.created');
    const detail = await eventually(async () => {
      const d = await h.api('GET', `/v1/events/${eventId}`);
      return d.json.redeliveries?.[0]?.deliveries?.[0]?.state === 'delivered' && d.json;
    }, 20_000, 'the redelivery shown as delivered');
    assert.equal(detail.redeliveries.length, 1);
    assert.equal(detail.deliveries[0].state, 'delivered', 'the first delivery is still shown');
  });

  test("an event whose flow had no endpoint is 409 not_deliverable, and nothing is sent", async () => {
    const count = listener.deliveries.length;
    const r = await h.api('POST', `/v1/events/evt_${quietLinkId}_1/redeliver`);
    assert.equal(r.status, 409, r.text);
    assert.equal(r.json.error, 'not_deliverable');
    assert.equal(listener.deliveries.length, count);
  });
});
