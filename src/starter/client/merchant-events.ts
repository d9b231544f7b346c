/**
 * Merchant events seen from the client: the optional `webhook_url` of a start body (validated: an
 * http(s) URL whose host the deployment allows, config/webhook-egress.ts) and the delivery records of a flow's events, read
 * from its delivery workflow `events-<flow_id>` and merged into the flow's view.
 */
import { lookup } from 'node:dns/promises';
import { type Client, WorkflowNotFoundError } from '@temporalio/client';
import { z } from 'zod';
import { isLoopbackEndpoint } from '../../merchant-events/env';
import { addressAllowed, addressListed, addressOf, type HostRefusal, hostRefusal, refusalMessage, type WebhookEgressPolicy } from '../../config/webhook-egress';
import { deliveriesQuery, eventDeliveryWorkflowId, type EventDeliveryView, type FlowEventSummary } from '../../workflows/event-types';
import { InputError } from './errors';

export const WebhookUrl = z
  .url({ protocol: /^https?$/, message: 'must be an absolute http(s) URL' })
  .max(2000, 'must be at most 2000 characters')
  .describe("this flow's own endpoint for its signed events, besides the worker's MERCHANT_WEBHOOK_URL");

/** A resolver of a host name to its addresses (default: the system's, as the worker's dns.lookup). */
export type ResolveHost = (hostname: string) => Promise<string[]>;

const systemResolve: ResolveHost = async (hostname) => (await lookup(hostname, { all: true })).map((a) => a.address);
/** How long the API waits for a name to resolve before it lets the worker's connect-time check decide. */
const RESOLVE_WAIT_MS = 2_000;

/**
 * Refuses (InputError naming webhook_url) a URL the deployment's policy does not allow: per-flow
 * endpoints off, a host not listed, an address (literal, or one the name resolves to now) that is
 * not public unless listed. A name that does not resolve in time is left to the worker, which
 * checks the address it dials. Production also refuses loopback names outright.
 */
export async function checkWebhookUrl(url: string | undefined, policy: WebhookEgressPolicy, production: boolean, resolve: ResolveHost = systemResolve, field = 'webhook_url'): Promise<void> {
  if (url === undefined) return;
  const refusal = hostRefusal(policy, url) ?? (production && isLoopbackEndpoint(url) && !addressListed(policy, url) ? 'address' : undefined);
  if (refusal) throw new InputError(fieldMessage(refusal, field), field);
  const host = new URL(url).hostname;
  if (addressOf(host)) return; // a literal: checked above
  let addresses: string[] | undefined;
  let timer: NodeJS.Timeout | undefined;
  try {
    addresses = await Promise.race([resolve(host), new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), RESOLVE_WAIT_MS)))]);
  } catch {
    addresses = undefined; // does not resolve (now): nothing is dialled until it does, and then only an allowed address
  } finally {
    clearTimeout(timer);
  }
  if (addresses?.some((a) => !addressAllowed(policy, a))) throw new InputError(fieldMessage('address', field), field);
}

/** The refusal's message naming `field` (a registered endpoint's `url` as well as a flow's `webhook_url`). */
function fieldMessage(r: HostRefusal, field: string): string {
  if (field === 'webhook_url') return refusalMessage(r);
  if (r === 'disabled') return `${field}: no webhook host is allowed on this deployment (set MERCHANT_WEBHOOK_ALLOWED_HOSTS: production allows none by default)`;
  return refusalMessage(r).replace(/^webhook_url:/, `${field}:`);
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
