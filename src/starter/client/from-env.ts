/**
 * The one construction of an MpfClient from the environment, used by the gateway process, the CLI
 * and the demo: the Temporal target and task queue, the payload keys, the gateway's public URLs
 * (GATEWAY_PUBLIC_URL, GATEWAY_NOTIFICATION_BASE_URL), the flow settings (SWAP_*, LINK_*) and the
 * daily limits (LIMIT_*).
 * A caller changes only what it knows better (a Temporal client it already has, its own URL).
 */
import type { Client } from '@temporalio/client';
import { type AppEnv, isProduction, requireKeys } from '../../config/env';
import { dailyLimitsFromEnv } from '../../config/limits-env';
import { webhookEgressFromEnv } from '../../config/webhook-egress';
import { connectClient, type TemporalTarget, temporalTargetFromEnv } from '../../temporal/connection';
import { MpfClient, type MpfClientOptions } from './mpf-client';
import { gatewayPublicUrl } from './urls';

export interface MpfClientOverrides extends Partial<Omit<MpfClientOptions, 'client'>> {
  /** A connected Temporal client to use (the caller closes it); default: connect to `target`. */
  client?: Client;
  /** Where to connect when no `client` is given; default temporalTargetFromEnv(env). */
  target?: TemporalTarget;
}

/** MpfClientOptions from the environment, `overrides` on top. Keys: overrides.keys, else PAYLOAD_ENCRYPTION_KEYS (required). */
function mpfClientOptionsFromEnv(env: AppEnv, client: Client, overrides: Partial<Omit<MpfClientOptions, 'client'>> = {}): MpfClientOptions {
  const defined = Object.fromEntries(Object.entries(overrides).filter(([, v]) => v !== undefined)) as Partial<MpfClientOptions>;
  return {
    client,
    taskQueue: env.TEMPORAL_TASK_QUEUE,
    keys: overrides.keys ?? requireKeys(env),
    publicUrl: gatewayPublicUrl(env),
    notificationBaseUrl: env.GATEWAY_NOTIFICATION_BASE_URL,
    pinMaxAttempts: env.SWAP_PIN_MAX_ATTEMPTS,
    swapNotificationWaitSeconds: env.SWAP_NOTIFICATION_WAIT_SECONDS,
    swapSettleWaitSeconds: env.SWAP_SETTLE_WAIT_SECONDS,
    linkLifetimeSeconds: env.LINK_LIFETIME_SECONDS,
    linkLateNotificationGraceSeconds: env.LINK_LATE_NOTIFICATION_GRACE_SECONDS,
    production: isProduction(env),
    webhookEgress: webhookEgressFromEnv(env),
    idempotencyMaxLivePerKey: env.GATEWAY_IDEMPOTENCY_MAX_LIVE_PER_KEY,
    dailyLimits: dailyLimitsFromEnv(env),
    ...defined,
  };
}

/**
 * The typed client configured from the environment. Connects to Temporal unless `overrides.client`
 * is given (a TemporalConnectError names the address); whoever connected closes
 * `mpf.temporal.connection`.
 */
export async function mpfClientFromEnv(env: AppEnv, overrides: MpfClientOverrides = {}): Promise<MpfClient> {
  const { client: given, target, ...options } = overrides;
  const keys = options.keys ?? requireKeys(env); // before connecting: a missing key is a ConfigError, not a connection attempt
  const client = given ?? (await connectClient(target ?? temporalTargetFromEnv(env), keys));
  return new MpfClient(mpfClientOptionsFromEnv(env, client, { ...options, keys }));
}
