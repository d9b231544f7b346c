/**
 * A registered endpoint's delivery is given up (endpoint_deleted, endpoint_disabled,
 * event_not_enabled: final) only on a reading of the endpoints made for that attempt. A worker's
 * cached reading may predate the endpoint another worker's fresher reading sent the event to
 * (a new endpoint, 2 s of cache): the first event after it was created must still arrive.
 * No Temporal server: the delivery activity against a signed-event listener on loopback.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createEventActivities } from '../../src/activities/events';
import type { DeliverEventInput } from '../../src/activities/event-types';
import { parseAllowedHosts } from '../../src/config/webhook-egress';
import type { WebhookEndpointRecord } from '../../src/contract/webhook-endpoints';
import { NO_MERCHANT_EVENTS } from '../../src/merchant-events/config';
import { startEventListener, type RunningListener } from '../../src/merchant-events/listener';
import { generateSecret } from '../../src/merchant-events/signing';
import type { FlowEvent } from '../../src/workflows/event-types';

const SECRET = generateSecret();

describe('a registered endpoint newer than the worker\'s cached reading', () => {
  let listener: RunningListener;
  before(async () => {
    listener = await startEventListener({ secrets: [SECRET] });
  });
  after(async () => {
    await listener?.close();
  });

  const endpoint = (status: WebhookEndpointRecord['status']): WebhookEndpointRecord => ({
    id: 'we_new',
    url: listener.url,
    enabled_events: ['swap.confirmed'],
    status,
    created_at: new Date().toISOString(),
    updated_at: new Date().toISOString(),
    secrets: [{ secret: SECRET }],
  });
  const event: FlowEvent = { id: 'evt_swap-new_3', type: 'swap.confirmed', timestamp: new Date().toISOString(), data: {} };
  const input: DeliverEventInput = { event, endpoint_id: 'we_new', attempt: 1 };
  const env = new MockActivityEnvironment();
  const config = { ...NO_MERCHANT_EVENTS, egress: parseAllowedHosts('*,127.0.0.1') };

  test('gets its event: the cached reading lacks it, the reading made for the attempt has it', async () => {
    let freshReads = 0;
    const acts = createEventActivities(config, {
      endpoints: async () => [], // read before the endpoint was created
      freshEndpoints: async () => (freshReads++, [endpoint('enabled')]),
    });
    try {
      const before_ = listener.deliveries.length;
      const res = (await env.run(acts.deliverEvent, input)) as { status: number };
      assert.equal(res.status, 200);
      assert.equal(listener.deliveries.length, before_ + 1, 'delivered once');
      assert.ok(listener.deliveries.at(-1)!.verified, "signed with the endpoint's own secret");
      assert.equal(freshReads, 1);
    } finally {
      await acts.close();
    }
  });

  test('is given up only when the reading made for the attempt says so too; a cached reading that has it costs no second read', async () => {
    let freshReads = 0;
    const disabled = createEventActivities(config, { endpoints: async () => [], freshEndpoints: async () => (freshReads++, [endpoint('disabled')]) });
    const classOf = (err: Error): unknown => (err as { details?: Array<{ error?: unknown }> }).details?.[0]?.error;
    try {
      await assert.rejects(env.run(disabled.deliverEvent, input), (err: Error) => classOf(err) === 'endpoint_disabled');
      assert.equal(freshReads, 1);
    } finally {
      await disabled.close();
    }
    const cached = createEventActivities(config, { endpoints: async () => [endpoint('enabled')], freshEndpoints: async () => (freshReads++, []) });
    try {
      assert.equal(((await env.run(cached.deliverEvent, input)) as { status: number }).status, 200);
      assert.equal(freshReads, 1, 'no fresh read when the cached reading has the endpoint');
    } finally {
      await cached.close();
    }
  });
});
