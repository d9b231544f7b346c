/**
 * Inputs and results of the merchant-event activities (types only: workflows `import type` them).
 * The signing secret is never an input: the activity reads it from the worker's configuration.
 */
import type { DeliverySchedule, FlowEvent } from '../contract/merchant-events';
import type { EndpointTarget } from '../contract/webhook-endpoints';

export interface EventSettingsInput {
  /** The flow's own webhook_url (from its start body), if any. */
  flow_url?: string;
  /** Also say which event types the registered endpoints take now (`registered_types`). */
  registered_types?: boolean;
}

export interface EventSettings {
  /** Where this flow's events go: the worker's MERCHANT_WEBHOOK_URL endpoints and the flow's own, deduplicated. */
  endpoints: string[];
  schedule: DeliverySchedule;
  /** Why no event of this flow is delivered (no signing secret configured), when so. */
  disabled_reason?: string;
  /**
   * The worker reads the deployment's registered webhook endpoints at each event: the flow's
   * events go to its delivery workflow even with no endpoint above (one may be registered later).
   */
  registry?: boolean;
  /**
   * When asked for (`registered_types` of the input) and read: the event types some registered
   * endpoint takes now (enabled, the type enabled). Absent when the endpoints could not be read.
   */
  registered_types?: string[];
}

export interface EventTargetsInput {
  event_type: string;
  /** Only these registered endpoints (a redelivery to a named endpoint). */
  only?: string[];
}

export interface DeliverEventInput {
  event: FlowEvent;
  /** A configured endpoint (MERCHANT_WEBHOOK_URL, a flow's webhook_url), signed with the worker's secret ... */
  url?: string;
  /** ... or a registered endpoint, read again when sent (its URL, its state, its own secrets). */
  endpoint_id?: string;
  /** 1 for the first attempt (logged and sent as no header; the body is the same on every attempt). */
  attempt: number;
}

export interface DeliverEventResult {
  status: number;
  delivered_at: string;
}

/**
 * What a failed attempt shows in the flow's view (`last_error`): a coarse class, never the raw
 * network error (which would let a caller map addresses behind the worker). The worker's log
 * keeps the detail for operators.
 */
export type DeliveryErrorClass =
  | 'not_signed'
  | 'refused_address'
  | 'timeout'
  | 'connection_failed'
  | 'http_3xx'
  | 'http_4xx'
  | 'http_5xx'
  | 'http_error'
  | 'endpoint_deleted'
  | 'endpoint_disabled'
  | 'event_not_enabled';

/** `details[0]` of the ApplicationFailure a failed attempt throws. */
export interface DeliveryFailureDetails {
  status?: number;
  /** The attempt's class (also its message); absent in attempts recorded by releases before it was. */
  error?: DeliveryErrorClass;
}

export const DELIVERY_FAILED_TYPE = 'EventDeliveryFailed';

export interface EventActivities {
  eventSettings(input: EventSettingsInput): Promise<EventSettings>;
  deliverEvent(input: DeliverEventInput): Promise<DeliverEventResult>;
  /** The registered endpoints that take an event of this type now (enabled, type enabled). */
  eventTargets(input: EventTargetsInput): Promise<EndpointTarget[]>;
}

