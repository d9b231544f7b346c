/**
 * The merchant-event activities: `eventSettings` (a local activity: where a flow's events go and on
 * which schedule, from the worker's configuration) and `deliverEvent` (one signed POST to one
 * endpoint with undici: the only outbound HTTP of events). The secret never leaves this process;
 * logs carry the event id, type and endpoint host only (a URL's path or query may hold a credential).
 */
import { Context, log } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { Agent, request } from 'undici';
import { isLoopbackEndpoint } from '../merchant-events/env';
import type { MerchantEventsConfig } from '../merchant-events/config';
import { signatureHeaders } from '../merchant-events/signing';
import { recordEventDelivery } from '../metrics/activity-metrics';
import { endpointHost } from '../contract/merchant-events';
import {
  DELIVERY_FAILED_TYPE,
  type DeliverEventInput,
  type DeliverEventResult,
  type DeliveryFailureDetails,
  type EventActivities,
  type EventSettings,
} from './event-types';

export const USER_AGENT = 'merchant-payment-flows-events/1';
/** Bytes of an endpoint's answer that are read (and dropped): the status is what counts. */
const MAX_ANSWER_BYTES = 64 * 1024;

function failure(message: string, details: DeliveryFailureDetails = {}): ApplicationFailure {
  return ApplicationFailure.create({ type: DELIVERY_FAILED_TYPE, message, details: [details], nonRetryable: true });
}

export interface EventActivityHandles extends EventActivities {
  close(): Promise<void>;
}

export function createEventActivities(config: MerchantEventsConfig): EventActivityHandles {
  // No redirects are followed (undici's request follows none): a 3xx is a failed attempt.
  const agent = new Agent({ connections: 16, keepAliveTimeout: 10_000, connect: { timeout: config.schedule.attempt_timeout_ms } });

  return {
    async eventSettings(input): Promise<EventSettings> {
      const endpoints = [...new Set([...config.urls, ...(input.flow_url ? [input.flow_url] : [])])];
      if (endpoints.length > 0 && config.secrets.length === 0) {
        return { endpoints: [], schedule: config.schedule, disabled_reason: 'MERCHANT_WEBHOOK_SECRET is not set on the worker: events cannot be signed, so none is delivered' };
      }
      return { endpoints, schedule: config.schedule };
    },

    async deliverEvent(input: DeliverEventInput): Promise<DeliverEventResult> {
      const { event, url } = input;
      const refs = { event_id: event.id, type: event.type, endpoint: endpointHost(url), attempt: input.attempt };
      const started = performance.now();
      // Each attempt counted once by outcome (mpf_event_deliveries_total); giving up is the workflow's call.
      const counted = (result: 'delivered' | 'failed'): void => recordEventDelivery({ eventType: event.type, result, seconds: (performance.now() - started) / 1000 });
      if (config.secrets.length === 0) {
        counted('failed');
        throw failure('MERCHANT_WEBHOOK_SECRET is not set on the worker: the event cannot be signed');
      }
      if (config.production && isLoopbackEndpoint(url)) {
        counted('failed');
        throw failure('a loopback endpoint is refused under NODE_ENV=production');
      }
      const body = JSON.stringify(event);
      const headers = { 'content-type': 'application/json', 'user-agent': USER_AGENT, ...signatureHeaders(config.secrets, event.id, new Date(), body) };
      let status: number;
      try {
        const signal = AbortSignal.any([AbortSignal.timeout(config.schedule.attempt_timeout_ms), cancelledSignal()]);
        const res = await request(url, { method: 'POST', body, headers, dispatcher: agent, signal });
        status = res.statusCode;
        await res.body.dump({ limit: MAX_ANSWER_BYTES }).catch(() => undefined); // the status is what counts
      } catch (err) {
        const e = err as Error & { code?: string };
        const what = e.name === 'TimeoutError' || e.name === 'AbortError' ? `no answer within ${config.schedule.attempt_timeout_ms} ms` : `${e.code ?? e.name}: ${e.message}`;
        log.warn('deliverEvent: attempt failed', { ...refs, error: what });
        counted('failed');
        throw failure(what.slice(0, 300));
      }
      if (status < 200 || status >= 300) {
        log.warn('deliverEvent: endpoint answered an error', { ...refs, status });
        counted('failed');
        throw failure(`the endpoint answered HTTP ${status}`, { status });
      }
      log.info('deliverEvent: delivered', { ...refs, status });
      counted('delivered');
      return { status, delivered_at: new Date().toISOString() };
    },

    close: () => agent.close(),
  };
}

/** The activity's cancellation as an AbortSignal (outside an activity: a signal that never fires). */
function cancelledSignal(): AbortSignal {
  try {
    return Context.current().cancellationSignal;
  } catch {
    return new AbortController().signal;
  }
}

