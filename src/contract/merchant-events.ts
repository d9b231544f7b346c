/**
 * Merchant events, the data (pure and workflow-safe; shared by the workflows, the delivery
 * activity, the receiver, the client, the gateway and the CLI): what a flow's state change becomes,
 * the one state -> event type table, the allow-listed event data (never a PIN, token, notification
 * token or secret), the delivery schedule and records. The messages of the per-flow delivery
 * workflow (`events-<flow_id>`) are in workflows/event-types.ts.
 */
import type { FlowKind } from './flow-kinds';

/** The `type` prefix of a flow kind's events: `swap.confirmed`, `payment_link.paid`. */
export const EVENT_PREFIX: Readonly<Record<FlowKind, string>> = { swap: 'swap', payment_link: 'payment_link' };

/**
 * The one table of which state change is which event. A state listed as `null` emits nothing (a
 * step inside the flow, not news for the merchant). A state not listed emits `<kind>.<state>`, so
 * a state added later emits an event without further work. Two rules on top, in `eventTypeFor`:
 * leaving `needs_reconciliation` is `<kind>.reconciled` (whatever the state it was resolved to),
 * and a swap back in `awaiting_pin` after a confirmation is `swap.pin_rejected`.
 */
export const EVENT_TYPE_OF_STATE: Readonly<Record<FlowKind, Readonly<Record<string, string | null>>>> = {
  swap: {
    initializing: null,
    awaiting_pin: 'swap.awaiting_pin',
    confirming: null,
    confirmed: 'swap.confirmed',
    expired: 'swap.expired',
    failed: 'swap.failed',
    cancelled: 'swap.cancelled',
    needs_reconciliation: 'swap.needs_reconciliation',
    reconciled: 'swap.reconciled',
    terminated: 'swap.terminated',
  },
  payment_link: {
    creating: null,
    awaiting_payment: 'payment_link.created',
    paid: 'payment_link.paid',
    failed: 'payment_link.failed',
    expired: 'payment_link.expired',
    cancelled: 'payment_link.cancelled',
    needs_reconciliation: 'payment_link.needs_reconciliation',
    reconciled: 'payment_link.reconciled',
    terminated: 'payment_link.terminated',
  },
};

/** The event types of flows (swaps and payment links): what GET /v1/events lists. */
export const FLOW_EVENT_TYPES: readonly string[] = [
  ...new Set([
    ...Object.values(EVENT_TYPE_OF_STATE.swap),
    'swap.pin_rejected',
    ...Object.values(EVENT_TYPE_OF_STATE.payment_link),
  ]),
].filter((t): t is string => typeof t === 'string');

/**
 * The deployment's provider guard (contract/provider-guard.ts) tells the merchant's configured
 * endpoints when a breaker opens or closes and when an operator pauses or resumes money-moving
 * calls: no flow's event, `data.object` is `provider_guard`.
 */
export const PROVIDER_EVENT_TYPES = ['provider.breaker_opened', 'provider.breaker_closed', 'provider.paused', 'provider.resumed'] as const;
export type ProviderEventType = (typeof PROVIDER_EVENT_TYPES)[number];

/** Every event type this version emits (documentation, the OpenAPI webhooks, tests). */
export const EVENT_TYPES: readonly string[] = [...FLOW_EVENT_TYPES, ...PROVIDER_EVENT_TYPES];

/** The event a move from `from` to `to` is, or undefined when it is none. */
export function eventTypeFor(kind: FlowKind, from: string, to: string): string | undefined {
  if (from === to) return undefined;
  if (from === 'needs_reconciliation') return `${EVENT_PREFIX[kind]}.reconciled`;
  if (kind === 'swap' && to === 'awaiting_pin' && from === 'confirming') return 'swap.pin_rejected';
  const listed = EVENT_TYPE_OF_STATE[kind][to];
  if (listed === null) return undefined;
  return listed ?? `${EVENT_PREFIX[kind]}.${to}`;
}

/**
 * The fields of a flow's view an event may carry (an allow-list: anything else never leaves).
 * `reconciliation` is the audit record of a `resolve` (outcome, provider reference, operator,
 * note, when; the resolve check refuses secret-like notes), carried by `*.reconciled`. Each
 * event's schema (merchant-event-schemas.ts) types exactly these fields, plus `object` and
 * `previous_state`.
 */
export const EVENT_DATA_FIELDS = {
  swap: [
    'swap_id',
    'state',
    'txn_ref',
    'user_ref',
    'payment_ref',
    'from_currency',
    'to_currency',
    'amount',
    'converted_amount',
    'rate_used',
    'expires_at',
    'pin_attempts_used',
    'pin_attempts_left',
    'reason',
    'reconciliation',
  ],
  payment_link: ['link_id', 'state', 'txn_merchant_ref', 'user_ref', 'amount', 'currency', 'payment_ref', 'pay_link', 'redirect_url', 'expires_at', 'reason', 'reconciliation'],
} as const satisfies Readonly<Record<FlowKind, readonly string[]>>;

/** The event's `data`: the allow-listed fields of the flow's view, plus the state it left. */
export function eventData(kind: FlowKind, view: Record<string, unknown>, previousState: string): Record<string, unknown> {
  const data: Record<string, unknown> = { object: kind };
  for (const f of EVENT_DATA_FIELDS[kind]) if (view[f] !== undefined) data[f] = view[f];
  data.previous_state = previousState;
  return data;
}

/** One event, as the flow emitted it and as it is delivered (the JSON body, Standard Webhooks style). */
export interface FlowEvent {
  /** Stable and unique: `evt_<flow_id>_<n>`, n counting the flow's events from 1. Also the `webhook-id`. */
  id: string;
  type: string;
  /** When the state changed (workflow time), ISO 8601. */
  timestamp: string;
  data: Record<string, unknown>;
}

/** The delay before retry `n` (n = 1 after the first failed attempt): initial × 2^(n-1), capped. */
export function retryDelayMs(n: number, initialMs: number, maxMs: number): number {
  return Math.min(maxMs, initialMs * 2 ** Math.min(n - 1, 40));
}

/**
 * The memo field in which a flow keeps its events in full, oldest first (since mpf-events-memo-v1):
 * the events API reads it from visibility (lists) and describe (one event), which need no worker.
 * Memo values go through the payload codec (encrypted) like every payload; the data is the
 * allow-list above, never a secret.
 */
export const EVENTS_MEMO_FIELD = 'mpf_events';

export function eventId(flowId: string, seq: number): string {
  return `evt_${flowId}_${seq}`;
}

// ---------------------------------------------------------------------------------------------
// The delivery workflow (`events-<flow_id>`)
// ---------------------------------------------------------------------------------------------

export const EVENT_DELIVERY_WORKFLOW_TYPE = 'eventDeliveryWorkflow';

export const eventDeliveryWorkflowId = (flowId: string): string => `events-${flowId}`;

/** How events are delivered, decided once per flow by the worker's configuration (eventSettings). */
export interface DeliverySchedule {
  /** Each event is retried until this long after it happened (default 3 days); at least one attempt. */
  retry_for_ms: number;
  /** First retry delay; doubled after each failed attempt up to max_interval_ms. */
  initial_interval_ms: number;
  max_interval_ms: number;
  /** One attempt's HTTP timeout. */
  attempt_timeout_ms: number;
  /** Without the flow's `close`, the delivery workflow ends once everything is delivered and nothing new came for this long. */
  idle_close_ms: number;
}

export interface EventDeliveryInput {
  flow_id: string;
  /** The endpoints' URLs (the worker's MERCHANT_WEBHOOK_URL and the flow's own webhook_url). */
  endpoints: string[];
  schedule: DeliverySchedule;
  /** Events handed over at the start (more arrive by the `events` signal). */
  events: FlowEvent[];
  /** Only these registered webhook endpoints (a redelivery to a named endpoint); default: every one that takes the event. */
  endpoint_ids?: string[];
}

/** One event to one endpoint. */
export interface DeliveryRecord {
  event_id: string;
  type: string;
  /** The endpoint's host (never its path or query, which may carry a credential). */
  endpoint: string;
  state: 'pending' | 'delivered' | 'failed';
  attempts: number;
  last_status?: number;
  last_error?: string;
  delivered_at?: string;
  next_attempt_at?: string;
}

export interface EventDeliveryView {
  flow_id: string;
  endpoints: string[];
  deliveries: DeliveryRecord[];
}

/** An endpoint as shown: its host only. */
export function endpointHost(url: string): string {
  const m = /^[a-z][a-z0-9+.-]*:\/\/(?:[^@/?#]*@)?([^/?#]+)/i.exec(url);
  return m ? m[1]! : '(invalid URL)';
}

/** The event as the flow's view lists it; `deliveries` is merged in by the client. */
export interface FlowEventSummary {
  id: string;
  type: string;
  timestamp: string;
  deliveries?: Array<Omit<DeliveryRecord, 'event_id' | 'type'>>;
}
