import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { NO_MERCHANT_EVENTS } from '../../src/merchant-events/config';
import { startEventListener, type RunningListener } from '../../src/merchant-events/listener';
import { generateSecret } from '../../src/merchant-events/signing';
import { linkBody, uniqueRef } from '../helpers/fixtures';
import { type GatewayHarness, startGatewayStack } from '../helpers/gateway';
import { eventually } from '../helpers/stack';

describe('merchant events through the gateway', () => {
  const secret = generateSecret();
  let h: GatewayHarness;
  let listener: RunningListener;

  before(async () => {
    listener = await startEventListener({ secrets: [secret] });
    h = await startGatewayStack({ events: { ...NO_MERCHANT_EVENTS, secrets: [secret], schedule: { ...NO_MERCHANT_EVENTS.schedule, initial_interval_ms: 200 } } });
  });
  after(async () => {
    await h?.stop();
    await listener?.close();
  });

  test('POST /v1/payment-links with a webhook_url: its events reach that endpoint and GET lists them with their deliveries', async () => {
    const created = await h.api('POST', '/v1/payment-links', linkBody(uniqueRef('gw-ev'), { webhook_url: listener.url }));
    assert.equal(created.status, 201, created.text);
    const linkId = created.json.link_id as string;
    assert.equal((await h.api('POST', `/v1/payment-links/${linkId}/cancel`, {})).status, 200);
    const view = await eventually(async () => {
      const r = await h.api('GET', `/v1/payment-links/${linkId}`);
      return r.json.events?.length === 2 && r.json.events.every((e: { deliveries?: Array<{ state: string }> }) => e.deliveries?.[0]?.state === 'delivered') && r.json;
    }, 20_000, 'both events delivered in the view');
    assert.deepEqual(view.events.map((e: { type: string }) => e.type), ['payment_link.created', 'payment_link.cancelled']);
    assert.equal(view.events[1].deliveries[0].endpoint, new URL(listener.url).host);
    assert.deepEqual(
      listener.deliveries.filter((d) => d.id.startsWith(`evt_${linkId}_`)).map((d) => [d.event?.type, d.verified, d.status]),
      [
        ['payment_link.created', true, 200],
        ['payment_link.cancelled', true, 200],
      ],
    );
  });

  test('a webhook_url that is not an http(s) URL is a 400 naming the field; nothing is started', async () => {
    const ref = uniqueRef('gw-ev-bad');
    const r = await h.api('POST', '/v1/payment-links', linkBody(ref, { webhook_url: 'file:///etc/passwd' }));
    assert.equal(r.status, 400);
    assert.equal(r.json.field, 'webhook_url');
    assert.equal((await h.api('GET', `/v1/payment-links/paylink-${ref}`)).status, 404);
  });

  test('the OpenAPI document describes webhook_url and the events of a view', async () => {
    const doc = (await h.call('GET', '/openapi.json')).json;
    const text = JSON.stringify(doc);
    assert.match(text, /"webhook_url"/);
    assert.ok(doc.components.schemas.FlowEvent && doc.components.schemas.EventDelivery, 'FlowEvent and EventDelivery schemas');
  });
});
