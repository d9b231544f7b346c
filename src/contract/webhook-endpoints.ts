/**
 * The merchant's webhook endpoints, the data (pure and workflow-safe): what an endpoint is, which
 * events it takes, which of its secrets sign now, and what is shown of it (never a secret). They
 * are kept in one record workflow per deployment (workflows/webhook-endpoints.ts), managed through
 * `/v1/webhook_endpoints` and read by every delivery when it is sent (activities/events.ts).
 */
import { FLOW_EVENT_TYPES } from './merchant-events';

export const WEBHOOK_ENDPOINTS_WORKFLOW_TYPE = 'webhookEndpointsWorkflow';

/** The deployment's record of endpoints: every gateway and worker of the task queue meets it by this id. */
export const webhookEndpointsWorkflowId = (taskQueue: string): string => `webhook-endpoints-${taskQueue}`;

/** At most this many endpoints per deployment (each event fans out to every one that takes it). */
export const MAX_WEBHOOK_ENDPOINTS = 16;

/** How long a rolled secret's predecessor keeps signing beside it, unless told (24 hours). */
export const DEFAULT_ROLL_OVERLAP_SECONDS = 86_400;
/** The longest overlap a roll may ask for (7 days). */
export const MAX_ROLL_OVERLAP_SECONDS = 7 * 86_400;

/** An endpoint's id: `we_` and 24 lowercase hex digits. */
export const WEBHOOK_ENDPOINT_ID = /^we_[0-9a-f]{24}$/;

/** `enabled_events: ['*']`: every event type, those added later included. */
export const ALL_EVENTS = '*';

export type WebhookEndpointStatus = 'enabled' | 'disabled';

/** One signing secret of an endpoint; the newest first. A rolled one expires. */
export interface EndpointSecret {
  secret: string;
  /** ISO 8601; absent on the current secret. */
  expires_at?: string;
}

/** What an endpoint is, as kept and as shown. */
interface WebhookEndpointFields {
  id: string;
  url: string;
  enabled_events: string[];
  description?: string;
  status: WebhookEndpointStatus;
  created_at: string;
  updated_at: string;
}

/** An endpoint as the record keeps it (its secrets included: only ever in encrypted payloads). */
export interface WebhookEndpointRecord extends WebhookEndpointFields {
  secrets: EndpointSecret[];
}

/** An endpoint as it is shown: everything but its secrets. */
export interface WebhookEndpointView extends WebhookEndpointFields {
  /** When the previous secret (after a roll) stops signing, while it still does. */
  previous_secret_expires_at?: string;
}

/** The secrets that sign now (newest first): the current one and those whose overlap is not over. */
export function liveSecrets(e: Pick<WebhookEndpointRecord, 'secrets'>, now: number): string[] {
  return e.secrets.filter((s) => s.expires_at === undefined || Date.parse(s.expires_at) > now).map((s) => s.secret);
}

/** What tells which event types an endpoint takes (no secret: a view has it too). */
export type EndpointTypesView = Pick<WebhookEndpointRecord, 'status' | 'enabled_events'>;

/** Whether an endpoint takes an event of this type now: enabled, and the type (or `*`) among its enabled_events. */
export function endpointTakes(e: EndpointTypesView, type: string): boolean {
  return e.status === 'enabled' && (e.enabled_events.includes(ALL_EVENTS) || e.enabled_events.includes(type));
}

/** The flows' event types some endpoint of the list takes now. */
export function typesTaken(list: readonly EndpointTypesView[]): string[] {
  return FLOW_EVENT_TYPES.filter((t) => list.some((e) => endpointTakes(e, t)));
}

/** What is shown of an endpoint: no secret, only when the previous one stops signing. */
export function endpointView(e: WebhookEndpointRecord, now: number): WebhookEndpointView {
  const { secrets, ...rest } = e;
  const overlap = secrets
    .filter((s) => s.expires_at !== undefined && Date.parse(s.expires_at) > now)
    .map((s) => s.expires_at!)
    .sort()
    .at(-1);
  return { ...rest, ...(overlap ? { previous_secret_expires_at: overlap } : {}) };
}

/** A registered endpoint a delivery goes to: its id and host (what a delivery view shows). */
export interface EndpointTarget {
  id: string;
  host: string;
}

/**
 * The failure classes of a delivery to a registered endpoint that is no longer there to take it
 * (deleted, disabled, or the event's type no longer enabled since it was dispatched): the delivery
 * workflow does not retry them.
 */
export const ENDPOINT_GONE_ERRORS: readonly string[] = ['endpoint_deleted', 'endpoint_disabled', 'event_not_enabled'];
