/**
 * Merchant events seen from the client: the optional `webhook_url` of a start body (validated: an
 * http(s) URL; production refuses loopback) and the delivery records of a flow's events, read
 * from its delivery workflow `events-<flow_id>` and merged into the flow's view.
 */
import { type Client, WorkflowNotFoundError } from '@temporalio/client';
import { z } from 'zod';
import { isLoopbackEndpoint } from '../../merchant-events/env';
import { deliveriesQuery, eventDeliveryWorkflowId, type EventDeliveryView, type FlowEventSummary } from '../../workflows/event-types';
import { InputError } from './errors';

export const WebhookUrl = z
  .url({ protocol: /^https?$/, message: 'must be an absolute http(s) URL' })
  .max(2000, 'must be at most 2000 characters')
  .describe("this flow's own endpoint for its signed events, besides the worker's MERCHANT_WEBHOOK_URL");

/** Production refuses a loopback webhook_url: the merchant's backend is another host. */
export function checkWebhookUrl(url: string | undefined, production: boolean): void {
  if (url !== undefined && production && isLoopbackEndpoint(url)) {
    throw new InputError('webhook_url: must not be a loopback address in production', 'webhook_url');
  }
}

/**
 * The delivery view of a flow's events: from a finished delivery workflow its result (no worker
 * needed), from a running one its query (bounded); undefined when there is none or no answer.
 */
export async function readDeliveries(client: Client, flowId: string, waitMs: number): Promise<EventDeliveryView | undefined> {
  const handle = client.workflow.getHandle(eventDeliveryWorkflowId(flowId));
  try {
    const desc = await client.withDeadline(Date.now() + waitMs, () => handle.describe());
    if (desc.status.name === 'COMPLETED') return (await handle.result()) as EventDeliveryView;
    return await client.withDeadline(Date.now() + waitMs, () => handle.query(deliveriesQuery));
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return undefined;
    return undefined; // no worker answered in time, or the delivery workflow was terminated: the events alone
  }
}

/** The view with each event's deliveries (one per endpoint) merged in. */
export function withDeliveries<V extends { events?: FlowEventSummary[] }>(view: V, deliveries: EventDeliveryView | undefined): V {
  if (!view.events || view.events.length === 0) return view;
  const records = deliveries?.deliveries ?? [];
  return {
    ...view,
    events: view.events.map((e) => ({
      ...e,
      deliveries: records.filter((r) => r.event_id === e.id).map(({ event_id: _id, type: _type, ...rest }) => rest),
    })),
  };
}
