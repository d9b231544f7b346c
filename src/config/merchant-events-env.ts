/**
 * The merchant-event variables of the environment (part of EnvSchema, so `NAME_FILE` works for
 * each): endpoints, signing secret(s), retry schedule, the hosts a flow's own endpoint may name.
 * The rules that relate them (a secret's shape, endpoints need a secret, no loopback endpoint
 * under NODE_ENV=production) belong to the feature: merchant-events/env.ts registers them with
 * the schema.
 */
import { z } from 'zod';

const urlList = z
  .string()
  .optional()
  .transform((v) => (v ?? '').split(',').map((s) => s.trim()).filter(Boolean))
  .pipe(z.array(z.url({ protocol: /^https?$/, message: 'must be a comma-separated list of http(s) URLs' })));
const seconds = (min: number, max: number, def: number) => z.coerce.number().min(min).max(max).default(def);

export const MERCHANT_EVENTS_ENV = {
  /** Where every flow's events go (one URL, or several comma-separated). */
  MERCHANT_WEBHOOK_URL: urlList,
  /** The same as MERCHANT_WEBHOOK_URL (both are read and merged). */
  MERCHANT_WEBHOOK_URLS: urlList,
  /** `whsec_…` signing secret(s); several (space- or comma-separated) sign each delivery with each, for rotation. */
  MERCHANT_WEBHOOK_SECRET: z.string().min(1).optional(),
  /** How long after it happened an event is still retried (default 3 days). */
  MERCHANT_WEBHOOK_RETRY_SECONDS: seconds(0, 30 * 86_400, 3 * 86_400),
  /** The first retry's delay; doubled after each failed attempt (default 5 s). */
  MERCHANT_WEBHOOK_RETRY_INITIAL_SECONDS: seconds(0.01, 3_600, 5),
  /** The longest delay between two attempts (default 1 h). */
  MERCHANT_WEBHOOK_RETRY_MAX_INTERVAL_SECONDS: seconds(0.01, 86_400, 3_600),
  /**
   * Hosts a flow's own webhook_url may name: `host`, `*.suffix`, `*`, addresses and ranges
   * (config/webhook-egress.ts). Unset: none under NODE_ENV=production, else any public host and loopback.
   */
  MERCHANT_WEBHOOK_ALLOWED_HOSTS: z.string().optional(),
  /** One attempt's timeout (default 10 s). */
  MERCHANT_WEBHOOK_TIMEOUT_SECONDS: seconds(0.5, 120, 10),
};
