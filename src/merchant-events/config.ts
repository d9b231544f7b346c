/** The worker's merchant-event configuration, from the environment (see config/merchant-events-env.ts). */
import type { AppEnv } from '../config/env';
import { type WebhookEgressPolicy, webhookEgressFromEnv } from '../config/webhook-egress';
import type { DeliverySchedule } from '../contract/merchant-events';
import { splitSecrets } from './signing';
// The merchant-event rules of the environment, registered with its schema before any loadEnv.
import './env';

export interface MerchantEventsConfig {
  /** Endpoints every flow's events go to. */
  urls: string[];
  /** Signing secrets (`whsec_…`); empty: no event is delivered. */
  secrets: string[];
  schedule: DeliverySchedule;
  /** NODE_ENV=production: loopback endpoints are refused (a flow's own webhook_url included). */
  production: boolean;
  /**
   * Where flows' own webhook_url endpoints may go (MERCHANT_WEBHOOK_ALLOWED_HOSTS, checked again at
   * connect time); default: from `production` as webhookEgressFromEnv does with the variable unset.
   */
  egress?: WebhookEgressPolicy;
}

/** Without the flow's eventsClosed, a delivery workflow with nothing left ends after this long idle. */
export const DELIVERY_IDLE_CLOSE_MS = 7 * 86_400_000;

export function merchantEventsFromEnv(env: AppEnv): MerchantEventsConfig {
  return {
    urls: [...new Set([...env.MERCHANT_WEBHOOK_URL, ...env.MERCHANT_WEBHOOK_URLS])],
    secrets: splitSecrets(env.MERCHANT_WEBHOOK_SECRET),
    schedule: {
      retry_for_ms: Math.round(env.MERCHANT_WEBHOOK_RETRY_SECONDS * 1000),
      initial_interval_ms: Math.max(10, Math.round(env.MERCHANT_WEBHOOK_RETRY_INITIAL_SECONDS * 1000)),
      max_interval_ms: Math.max(10, Math.round(env.MERCHANT_WEBHOOK_RETRY_MAX_INTERVAL_SECONDS * 1000)),
      attempt_timeout_ms: Math.round(env.MERCHANT_WEBHOOK_TIMEOUT_SECONDS * 1000),
      idle_close_ms: DELIVERY_IDLE_CLOSE_MS,
    },
    production: env.NODE_ENV === 'production',
    egress: webhookEgressFromEnv(env),
  };
}

/** No endpoint, no secret: what a worker without MERCHANT_WEBHOOK_* has (events are kept in the flow's view only). */
export const NO_MERCHANT_EVENTS: MerchantEventsConfig = {
  urls: [],
  secrets: [],
  schedule: { retry_for_ms: 3 * 86_400_000, initial_interval_ms: 5_000, max_interval_ms: 3_600_000, attempt_timeout_ms: 10_000, idle_close_ms: DELIVERY_IDLE_CLOSE_MS },
  production: false,
};
