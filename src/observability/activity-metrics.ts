/**
 * Metrics of the worker's outbound HTTP, recorded through the activity Context's metric meter (the
 * SDK's meter with the activity's tags), so they appear on the worker's Prometheus endpoint next to
 * the SDK's own metrics. Outside an activity (unit tests calling the client directly) nothing is
 * recorded.
 *
 * - instrumentProvider(client): the provider client with every call counted and timed by endpoint
 *   and error kind (mpf_provider_calls_total, mpf_provider_call_duration_seconds). The worker
 *   wraps its client once; activities and the client itself are unchanged.
 * - recordEventDelivery(…): the hook for outbound merchant event deliveries
 *   (mpf_event_deliveries_total, mpf_event_delivery_duration_seconds): call it once per delivery
 *   attempt from the delivery activity.
 */
import { Context } from '@temporalio/activity';
import type { MetricMeter } from '@temporalio/common';
import type { ProviderEndpoint } from '../contract/provider';
import type { ProviderClient, SendOptions } from '../provider/client';
import { isProviderError } from '../provider/errors';
import { type EventDeliveryResult, METRICS } from './metric-catalog';

/** The current activity's meter, or undefined outside an activity. */
function activityMeter(): MetricMeter | undefined {
  try {
    return Context.current().metricMeter;
  } catch {
    return undefined;
  }
}

/** `none` for a usable answer, else the provider error's kind (rejected, auth, rate_limited, transient, ambiguous, invalid_request), or `other`. */
export function errorKindOf(err: unknown): string {
  return isProviderError(err) ? err.kind : 'other';
}

function record(meter: MetricMeter, count: { base: string; help: string }, duration: { base: string; help: string }, seconds: number, tags: Record<string, string>): void {
  meter.createCounter(count.base, undefined, count.help).add(1, tags);
  meter.createHistogram(duration.base, 'float', 's', duration.help).record(seconds, tags);
}

/**
 * Counts and times one call from the moment it is sent (its admission passed: `send.admit`), not
 * from when it began to wait for a connection. A call that was never sent (held by the guard, its
 * wait aborted) is not a provider call; one refused by our own contract check (invalid_request)
 * is, as before.
 */
async function timed<T>(endpoint: ProviderEndpoint, send: SendOptions, call: (send: SendOptions) => Promise<T>): Promise<T> {
  let started: number | undefined;
  const admitted: SendOptions = {
    ...send,
    admit: async () => {
      await send.admit?.();
      started = performance.now();
    },
  };
  const called = performance.now();
  /** undefined: not a provider call (never sent, and not our contract's refusal either). */
  let errorKind: string | undefined = 'none';
  try {
    return await call(admitted);
  } catch (err) {
    errorKind = started === undefined && !isProviderError(err) ? undefined : errorKindOf(err);
    throw err;
  } finally {
    const meter = activityMeter();
    if (meter && errorKind !== undefined) {
      record(meter, METRICS.providerCalls, METRICS.providerCallDuration, (performance.now() - (started ?? called)) / 1000, { endpoint, error_kind: errorKind });
    }
  }
}

/**
 * The same client, each of its four provider calls counted and timed. A rejected swap
 * confirmation (a wrong PIN) is a `rejected` call: the provider answered no.
 */
export function instrumentProvider(client: ProviderClient): ProviderClient {
  const wrapped = Object.create(client) as ProviderClient;
  wrapped.initSwap = (req, send = {}) => timed('swapInit', send, (s) => client.initSwap(req, s));
  wrapped.confirmSwap = (req, send = {}) => timed('swapConfirm', send, (s) => client.confirmSwap(req, s));
  wrapped.createHostedLink = (req, send = {}) => timed('hostedLink', send, (s) => client.createHostedLink(req, s));
  wrapped.listCategories = (send = {}) => timed('categories', send, (s) => client.listCategories(s));
  return wrapped;
}

/** One outbound merchant event delivery attempt (call from the delivery activity). */
export function recordEventDelivery(d: { eventType: string; result: EventDeliveryResult; seconds: number }): void {
  const meter = activityMeter();
  if (meter) record(meter, METRICS.eventDeliveries, METRICS.eventDeliveryDuration, d.seconds, { event_type: d.eventType, result: d.result });
}
