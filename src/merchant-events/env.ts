/**
 * The worker's merchant-event variables (part of EnvSchema, so `NAME_FILE` works for each):
 * endpoints, signing secret(s), retry schedule. Checked at start-up with the rest: a URL that is
 * not http(s), a malformed secret, endpoints without a secret, or (NODE_ENV=production) a loopback
 * endpoint is an error naming the variable.
 */
import { z } from 'zod';
import { secretProblem, splitSecrets } from './signing';
import { parseAllowedHosts } from '../config/webhook-egress';

const LOOPBACK = /^(localhost|127\.\d+\.\d+\.\d+|\[::1\]|::1)$/i;

export function isLoopbackEndpoint(url: string): boolean {
  try {
    return LOOPBACK.test(new URL(url).hostname);
  } catch {
    return false;
  }
}

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

interface EventsEnv {
  NODE_ENV?: string;
  MERCHANT_WEBHOOK_URL: string[];
  MERCHANT_WEBHOOK_URLS: string[];
  MERCHANT_WEBHOOK_SECRET?: string;
  MERCHANT_WEBHOOK_ALLOWED_HOSTS?: string;
}

export function checkMerchantEventsEnv(env: EventsEnv, ctx: z.RefinementCtx): void {
  if (env.MERCHANT_WEBHOOK_SECRET !== undefined) {
    const problems = splitSecrets(env.MERCHANT_WEBHOOK_SECRET).map(secretProblem).filter(Boolean);
    if (problems.length) ctx.addIssue({ code: 'custom', path: ['MERCHANT_WEBHOOK_SECRET'], message: problems[0]! });
  }
  if (env.MERCHANT_WEBHOOK_ALLOWED_HOSTS !== undefined) {
    try {
      parseAllowedHosts(env.MERCHANT_WEBHOOK_ALLOWED_HOSTS);
    } catch (err) {
      ctx.addIssue({ code: 'custom', path: ['MERCHANT_WEBHOOK_ALLOWED_HOSTS'], message: (err as Error).message });
    }
  }
  const urls = [...env.MERCHANT_WEBHOOK_URL, ...env.MERCHANT_WEBHOOK_URLS];
  if (urls.length && !env.MERCHANT_WEBHOOK_SECRET) {
    ctx.addIssue({
      code: 'custom',
      path: ['MERCHANT_WEBHOOK_SECRET'],
      message: 'is required when MERCHANT_WEBHOOK_URL is set: events are always signed (generate one with `mpf events secret`)',
    });
  }
  if (env.NODE_ENV === 'production') {
    for (const [name, list] of [['MERCHANT_WEBHOOK_URL', env.MERCHANT_WEBHOOK_URL], ['MERCHANT_WEBHOOK_URLS', env.MERCHANT_WEBHOOK_URLS]] as const) {
      if (list.some(isLoopbackEndpoint)) {
        ctx.addIssue({ code: 'custom', path: [name], message: 'names a loopback address, which NODE_ENV=production refuses (the merchant backend is another host)' });
      }
    }
  }
}
