/**
 * The merchant-event activities: `eventSettings` (a local activity: where a flow's events go and on
 * which schedule, from the worker's configuration), `eventTargets` (which registered webhook
 * endpoints take an event now) and `deliverEvent` (one signed POST to one endpoint with undici: the
 * only outbound HTTP of events). A configured endpoint is signed with the worker's secret, which
 * never leaves this process; a registered one is read again at each attempt (its URL, its state,
 * its own secrets, from the record's encrypted query answer) and never enters an activity's input
 * or result. Logs carry the event id, type, endpoint host and endpoint id only (a URL's path or
 * query may hold a credential).
 */
import { Context, log } from '@temporalio/activity';
import { ApplicationFailure, ApplicationFailureCategory } from '@temporalio/common';
import { Agent, request } from 'undici';
import { isLoopbackEndpoint } from '../merchant-events/env';
import type { MerchantEventsConfig } from '../merchant-events/config';
import { signatureHeaders } from '../merchant-events/signing';
import { recordEventDelivery } from '../observability/activity-metrics';
import { endpointHost, retryDelayMs } from '../contract/merchant-events';
import { type EndpointTarget, endpointTakes, liveSecrets, typesTaken, type WebhookEndpointRecord } from '../contract/webhook-endpoints';
import { addressListed, hostRefusal, webhookEgressFromEnv } from '../config/webhook-egress';
import { guardedAgent, type LookupFunction, REFUSED_ADDRESS_CODE } from './egress-agent';
import {
  DELIVERY_FAILED_TYPE,
  type DeliverEventInput,
  type DeliveryErrorClass,
  type DeliverEventResult,
  type DeliveryFailureDetails,
  type EventActivities,
  type EventSettings,
  type EventTargetsInput,
} from './event-types';

export const USER_AGENT = 'merchant-payment-flows-events/1';
/** Bytes of an endpoint's answer that are read (and dropped): the status is what counts. */
const MAX_ANSWER_BYTES = 64 * 1024;

/**
 * A failed attempt, for the workflow to retry on its schedule. An endpoint's own failure (an error
 * status, a timeout, a refused connection) is routine for webhooks: BENIGN, so the SDK logs it at
 * debug instead of a WARN with a stack, and our own one line says what happens next. A
 * configuration problem (no secret, a refused host) stays a warning with the SDK's detail.
 */
function failure(message: DeliveryErrorClass, details: DeliveryFailureDetails = {}, expected = false): ApplicationFailure {
  return ApplicationFailure.create({
    type: DELIVERY_FAILED_TYPE,
    message,
    details: [{ ...details, error: message }],
    nonRetryable: true,
    ...(expected ? { category: ApplicationFailureCategory.BENIGN } : {}),
  });
}

function httpClass(status: number): DeliveryErrorClass {
  return status >= 300 && status < 600 ? (`http_${Math.floor(status / 100)}xx` as DeliveryErrorClass) : 'http_error';
}

/** The error's own code, or its cause's (undici wraps connection errors). */
function codeOf(err: unknown): string | undefined {
  for (let e = err as { code?: unknown; cause?: unknown } | undefined, i = 0; e && i < 4; e = e.cause as typeof e, i++) {
    if (typeof e.code === 'string') return e.code;
  }
  return undefined;
}

export interface EventActivityHandles extends EventActivities {
  close(): Promise<void>;
}

export interface EventActivityOptions {
  /** The resolver of flows' own endpoints (default dns.lookup); tests give one that answers what they need. */
  lookup?: LookupFunction;
  /**
   * The deployment's registered webhook endpoints now (temporal/webhook-endpoints-reading.ts), read
   * at each event and each attempt; without it, only the configured endpoints are delivered to.
   */
  endpoints?: () => Promise<WebhookEndpointRecord[]>;
  /**
   * The same, read now (no cached reading): asked before an attempt is given up because its
   * endpoint is gone, disabled or no longer takes the event — a verdict that is final, so it never
   * rests on a reading older than the one that sent the event there (another worker's, fresher).
   */
  freshEndpoints?: () => Promise<WebhookEndpointRecord[]>;
}

/** Where one attempt goes and what signs it: a configured endpoint, or a registered one as it is now. */
interface AttemptTarget {
  url: string;
  secrets: string[];
  /** Chosen by an API caller (a flow's webhook_url, a registered endpoint): only addresses the egress policy allows. */
  guarded: boolean;
}

export function createEventActivities(config: MerchantEventsConfig, opts: EventActivityOptions = {}): EventActivityHandles {
  // No redirects are followed (undici's request follows none): a 3xx is a failed attempt.
  // The worker's configured endpoints (its operator chose them, inside the network or not) ...
  const agent = new Agent({ connections: 16, keepAliveTimeout: 10_000, connect: { timeout: config.schedule.attempt_timeout_ms } });
  // ... and flows' own endpoints (chosen by an API caller): only addresses the policy allows.
  const egress = config.egress ?? webhookEgressFromEnv({ NODE_ENV: config.production ? 'production' : undefined });
  const flowAgent = guardedAgent(egress, { connectTimeoutMs: config.schedule.attempt_timeout_ms, ...(opts.lookup ? { lookup: opts.lookup } : {}) });
  const configured = new Set(config.urls);
  /** When the delivery workflow tries again (the same schedule it follows), in words for the log. */
  const nextTry = (event: { timestamp: string }, attempt: number): string => {
    const s = config.schedule;
    const delay = retryDelayMs(attempt, s.initial_interval_ms, s.max_interval_ms);
    return Date.now() + delay > Date.parse(event.timestamp) + s.retry_for_ms ? 'no further try: its retry period is over' : `next try in ${Math.round(delay / 1000)} s`;
  };

  /** The attempt's endpoint: the configured URL with the worker's secrets, or the registered endpoint as it is now (its own secrets). */
  const attemptTarget = async (input: DeliverEventInput): Promise<AttemptTarget> => {
    if (input.endpoint_id === undefined) {
      const url = input.url ?? '';
      return { url, secrets: config.secrets, guarded: !configured.has(url) };
    }
    const id = input.endpoint_id;
    const type = input.event.type;
    const goneIn = (e: WebhookEndpointRecord | undefined): DeliveryErrorClass | undefined => (!e ? 'endpoint_deleted' : e.status !== 'enabled' ? 'endpoint_disabled' : !endpointTakes(e, type) ? 'event_not_enabled' : undefined);
    let e = (await (opts.endpoints?.() ?? Promise.resolve([]))).find((x) => x.id === id);
    let gone = goneIn(e);
    if (gone && opts.freshEndpoints) {
      e = (await opts.freshEndpoints()).find((x) => x.id === id);
      gone = goneIn(e);
    }
    const refs = { event_id: input.event.id, type, endpoint_id: id };
    if (gone || !e) {
      log.info(`deliverEvent: not sent: ${gone}`, refs);
      throw failure(gone ?? 'endpoint_deleted', {}, true);
    }
    return { url: e.url, secrets: liveSecrets(e, Date.now()), guarded: true };
  };

  return {
    async eventSettings(input): Promise<EventSettings> {
      const endpoints = [...new Set([...config.urls, ...(input.flow_url ? [input.flow_url] : [])])];
      const registry = opts.endpoints ? { registry: true, ...(input.registered_types ? await registeredTypes(opts.endpoints) : {}) } : {};
      if (endpoints.length > 0 && config.secrets.length === 0) {
        return { endpoints: [], schedule: config.schedule, disabled_reason: 'MERCHANT_WEBHOOK_SECRET is not set on the worker: events cannot be signed, so none is delivered', ...registry };
      }
      return { endpoints, schedule: config.schedule, ...registry };
    },

    async eventTargets(input: EventTargetsInput): Promise<EndpointTarget[]> {
      if (!opts.endpoints) return [];
      const only = input.only ? new Set(input.only) : undefined;
      return (await opts.endpoints())
        .filter((e) => (!only || only.has(e.id)) && endpointTakes(e, input.event_type))
        .map((e) => ({ id: e.id, host: endpointHost(e.url) }));
    },

    async deliverEvent(input: DeliverEventInput): Promise<DeliverEventResult> {
      const { event } = input;
      const started = performance.now();
      // Each attempt counted once by outcome (mpf_event_deliveries_total); giving up is the workflow's call.
      const counted = (result: 'delivered' | 'failed'): void => recordEventDelivery({ eventType: event.type, result, seconds: (performance.now() - started) / 1000 });
      const target = await attemptTarget(input);
      const { url } = target;
      const refs = { event_id: event.id, type: event.type, endpoint: endpointHost(url), ...(input.endpoint_id ? { endpoint_id: input.endpoint_id } : {}), attempt: input.attempt };
      if (target.secrets.length === 0) {
        counted('failed');
        log.warn('deliverEvent: MERCHANT_WEBHOOK_SECRET is not set on the worker: the event cannot be signed', refs);
        throw failure('not_signed');
      }
      const own = target.guarded;
      if ((config.production && isLoopbackEndpoint(url) && !(own && addressListed(egress, url))) || (own && hostRefusal(egress, url) !== undefined)) {
        log.warn('deliverEvent: endpoint refused by the webhook host policy', refs);
        counted('failed');
        throw failure('refused_address');
      }
      const body = JSON.stringify(event);
      const headers = { 'content-type': 'application/json', 'user-agent': USER_AGENT, ...signatureHeaders(target.secrets, event.id, new Date(), body) };
      let status: number;
      try {
        const signal = AbortSignal.any([AbortSignal.timeout(config.schedule.attempt_timeout_ms), cancelledSignal()]);
        const res = await request(url, { method: 'POST', body, headers, dispatcher: own ? flowAgent : agent, signal });
        status = res.statusCode;
        await res.body.dump({ limit: MAX_ANSWER_BYTES }).catch(() => undefined); // the status is what counts
      } catch (err) {
        const e = err as Error & { code?: string };
        const code = codeOf(err);
        const cls: DeliveryErrorClass =
          code === REFUSED_ADDRESS_CODE
            ? 'refused_address'
            : e.name === 'TimeoutError' || e.name === 'AbortError' || code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'UND_ERR_HEADERS_TIMEOUT'
              ? 'timeout'
              : 'connection_failed';
        log.warn(`deliverEvent: attempt ${input.attempt} to ${refs.endpoint} failed (${cls}); ${nextTry(event, input.attempt)}`, {
          ...refs,
          class: cls,
          error: `${code ?? e.name}: ${e.message}`.slice(0, 300),
        });
        counted('failed');
        throw failure(cls, {}, cls !== 'refused_address');
      }
      if (status < 200 || status >= 300) {
        log.warn(`deliverEvent: attempt ${input.attempt} to ${refs.endpoint} answered ${status}; ${nextTry(event, input.attempt)}`, { ...refs, status });
        counted('failed');
        throw failure(httpClass(status), { status }, true);
      }
      log.info('deliverEvent: delivered', { ...refs, status });
      counted('delivered');
      return { status, delivered_at: new Date().toISOString() };
    },

    close: async () => {
      await Promise.all([agent.close(), flowAgent.close()]);
    },
  };
}

/**
 * The flows' event types some registered endpoint takes now; nothing when they cannot be read (the
 * flow then hands its events to a delivery workflow, which asks again until it can: never guessed).
 */
async function registeredTypes(endpoints: () => Promise<WebhookEndpointRecord[]>): Promise<{ registered_types?: string[] }> {
  try {
    return { registered_types: typesTaken(await endpoints()) };
  } catch (err) {
    log.warn('eventSettings: the registered webhook endpoints could not be read; the flow\'s events go to its delivery workflow', { error: String(err) });
    return {};
  }
}

/** The activity's cancellation as an AbortSignal (outside an activity: a signal that never fires). */
function cancelledSignal(): AbortSignal {
  try {
    return Context.current().cancellationSignal;
  } catch {
    return new AbortController().signal;
  }
}

