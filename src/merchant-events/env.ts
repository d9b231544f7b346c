/**
 * The merchant-event rules of the environment, which only this feature knows: a signing secret's
 * shape, endpoints need a secret, no loopback endpoint under NODE_ENV=production. The variables
 * themselves are configuration (config/merchant-events-env.ts); loading this module registers the
 * rules with the schema (config imports no feature), so every loadEnv of a process that runs merchant
 * events refuses a bad value at start-up, naming the variable.
 */
import type { z } from 'zod';
import { type AppEnv, registerEnvCheck } from '../config/env';
import { secretProblem, splitSecrets } from './signing';

/** Loopback by name (localhost and the names under it) or literal; a trailing dot changes nothing. */
const LOOPBACK = /^((.+\.)?localhost|127\.\d+\.\d+\.\d+|\[::1\]|::1)$/i;

export function isLoopbackEndpoint(url: string): boolean {
  try {
    return LOOPBACK.test(new URL(url).hostname.replace(/\.$/, ''));
  } catch {
    return false;
  }
}

type EventsEnv = Pick<AppEnv, 'NODE_ENV' | 'MERCHANT_WEBHOOK_URL' | 'MERCHANT_WEBHOOK_URLS' | 'MERCHANT_WEBHOOK_SECRET'>;

export function checkMerchantEventsEnv(env: EventsEnv, ctx: z.RefinementCtx): void {
  if (env.MERCHANT_WEBHOOK_SECRET !== undefined) {
    const problems = splitSecrets(env.MERCHANT_WEBHOOK_SECRET).map(secretProblem).filter(Boolean);
    if (problems.length) ctx.addIssue({ code: 'custom', path: ['MERCHANT_WEBHOOK_SECRET'], message: problems[0]! });
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

registerEnvCheck('merchant events', checkMerchantEventsEnv);
