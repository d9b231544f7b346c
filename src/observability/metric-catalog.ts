/**
 * Every metric of our own, by the name Prometheus shows (workflow-safe: plain constants, imported
 * by the workflows, the worker, the gateway, the tests and the dashboard check).
 *
 * Worker metrics go through the Temporal SDK's metric meter, so they share the worker's Prometheus
 * endpoint with the SDK's own `temporal_*` metrics: workflow code uses `metricMeter` from
 * @temporalio/workflow (nothing is emitted while a history is replayed), activity code the
 * activity Context's `metricMeter`. The SDK's exporter appends `_total` to counters
 * (countersTotalSuffix), so a counter is created by its `base` name and exposed as `name`.
 * Gateway metrics are prom-client's (the gateway runs no SDK core).
 *
 * Labels carry no personal data and no references (bounded cardinality): kinds, states, outcomes,
 * endpoints, route patterns and status codes only.
 */

export interface MetricDef {
  /** The name Prometheus shows (counters end in _total). */
  name: string;
  /** The name to create it by in the SDK's meter (without the _total the exporter adds). */
  base: string;
  type: 'counter' | 'histogram' | 'gauge';
  help: string;
  labels: readonly string[];
  /** Where it is exposed. */
  where: 'worker' | 'gateway';
}

const counter = (base: string, help: string, labels: readonly string[], where: MetricDef['where']): MetricDef => ({
  name: `${base}_total`,
  base,
  type: 'counter',
  help,
  labels,
  where,
});

export const METRICS = {
  // ---- worker: flows (workflow code) ----------------------------------------------------------
  flowsStarted: counter('mpf_flows_started', 'Flows started, by kind (swap, payment_link)', ['flow_kind'], 'worker'),
  flowsFinished: counter(
    'mpf_flows_finished',
    'Flows that reached their first final state, by kind and that state (confirmed, paid, failed, expired, cancelled, needs_reconciliation)',
    ['flow_kind', 'state'],
    'worker',
  ),
  reconciliations: counter(
    'mpf_reconciliations',
    'Flows that moved to needs_reconciliation (money may have moved and nothing settled it), including late moves after another final state',
    ['flow_kind'],
    'worker',
  ),
  pinAttempts: counter(
    'mpf_pin_attempts',
    'Swap PINs sent to the provider for confirmation, by outcome (confirmed, pin_rejected, expired, cancelled, failed, needs_reconciliation)',
    ['outcome'],
    'worker',
  ),
  // ---- worker: provider calls (activity code) -------------------------------------------------
  providerCalls: counter(
    'mpf_provider_calls',
    "HTTP calls to the provider, by endpoint and error kind (none = a usable answer; else the provider error's kind)",
    ['endpoint', 'error_kind'],
    'worker',
  ),
  providerCallDuration: {
    name: 'mpf_provider_call_duration_seconds',
    base: 'mpf_provider_call_duration_seconds',
    type: 'histogram',
    help: 'Latency of HTTP calls to the provider in seconds, by endpoint and error kind',
    labels: ['endpoint', 'error_kind'],
    where: 'worker',
  } as MetricDef,
  // ---- worker: outbound merchant events (the hook recordEventDelivery; emitted once deliveries exist)
  eventDeliveries: counter(
    'mpf_event_deliveries',
    'Outbound merchant event deliveries, by event type and result (delivered, failed, gave_up)',
    ['event_type', 'result'],
    'worker',
  ),
  eventDeliveryDuration: {
    name: 'mpf_event_delivery_duration_seconds',
    base: 'mpf_event_delivery_duration_seconds',
    type: 'histogram',
    help: 'Latency of outbound merchant event deliveries in seconds, by event type and result',
    labels: ['event_type', 'result'],
    where: 'worker',
  } as MetricDef,
  // ---- worker: the provider guard (its reading every second, src/temporal/provider-guard-link.ts)
  providerBreakerState: {
    name: 'mpf_provider_breaker_state',
    base: 'mpf_provider_breaker_state',
    type: 'gauge',
    help: "The provider circuit breaker of each endpoint class (initiate, confirm, create) as this worker last read it: 0 closed, 1 half-open (probing), 2 open",
    labels: ['class'],
    where: 'worker',
  } as MetricDef,
  providerPaused: {
    name: 'mpf_provider_paused',
    base: 'mpf_provider_paused',
    type: 'gauge',
    help: 'Whether an operator paused money-moving calls to the provider (1), as this worker last read the guard; 2 when it could not read the guard for 5 s (its calls are held)',
    labels: [],
    where: 'worker',
  } as MetricDef,
  // ---- gateway ----------------------------------------------------------------------------------
  httpRequests: counter(
    'mpf_gateway_http_requests',
    'HTTP requests answered by the gateway, by method, route pattern, status code and API key id (key_id: the keyring\'s public id, "none" without a known key)',
    ['method', 'route', 'status_code', 'key_id'],
    'gateway',
  ),
  httpRequestDuration: {
    name: 'mpf_gateway_http_request_duration_seconds',
    base: 'mpf_gateway_http_request_duration_seconds',
    type: 'histogram',
    help: 'Time the gateway took to answer, in seconds, by method, route pattern and status code',
    labels: ['method', 'route', 'status_code'],
    where: 'gateway',
  } as MetricDef,
  notifications: counter(
    'mpf_gateway_notifications',
    "The provider's notifications received, by flow kind and result (signalled, duplicate, refused = a payment for a flow that closed otherwise (409), closed_flow = ignored for a closed flow, not_found = unknown flow or wrong token, rate_limited, unavailable = Temporal or no worker answered)",
    ['flow_kind', 'result'],
    'gateway',
  ),
  taskQueuePollers: {
    name: 'mpf_gateway_task_queue_pollers',
    base: 'mpf_gateway_task_queue_pollers',
    type: 'gauge',
    help: 'Pollers of the task queue seen by Temporal within the readiness window, by task queue type (workflow, activity); -1 when Temporal did not answer',
    labels: ['task_queue_type'],
    where: 'gateway',
  } as MetricDef,
  gatewayReady: {
    name: 'mpf_gateway_ready',
    base: 'mpf_gateway_ready',
    type: 'gauge',
    help: 'Whether the gateway is ready (1): Temporal answers and a worker polled the task queue recently',
    labels: [],
    where: 'gateway',
  } as MetricDef,
} as const satisfies Record<string, MetricDef>;

/** Provider call buckets (seconds): from a fast loopback answer to the client's own timeouts. */
export const PROVIDER_LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/** Gateway answer buckets (seconds): a start or a PIN waits for the workflow (bounded at 30 s). */
export const HTTP_LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export const NOTIFICATION_RESULTS = ['signalled', 'duplicate', 'refused', 'closed_flow', 'not_found', 'rate_limited', 'unavailable', 'other'] as const;
export type NotificationResult = (typeof NOTIFICATION_RESULTS)[number];
export type EventDeliveryResult = 'delivered' | 'failed' | 'gave_up';
