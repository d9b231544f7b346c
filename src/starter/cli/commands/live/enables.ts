/**
 * "What going live will enable": the settings of this environment that change what the processes
 * do with real money, each read the way the code that acts on it reads it (merchant events as the
 * worker builds them, daily limits as the client does, the webhook egress policy as the API and the
 * worker do). Only what the code does; never a secret, a URL's path or its query.
 */
import { type AppEnv, EnvSchema, isProduction } from '../../../../config/env';
import { dailyLimitsFromEnv, LIMIT_NAMES } from '../../../../config/limits-env';
import { merchantEventsFromEnv } from '../../../../merchant-events/config';

const hostOf = (url: string): string => {
  try {
    return new URL(url).host;
  } catch {
    return '(not a URL)';
  }
};

function providerLine(env: AppEnv): string {
  const bearer = env.MPS_CATEGORIES_BEARER ? 'x-merchant-ref and the Bearer access token (MPS_CATEGORIES_BEARER=1)' : 'x-merchant-ref only';
  if (!env.MPS_LIVE || !env.MPS_BASE_URL) return `MPS_LIVE is not 1: the worker refuses a non-loopback MPS_BASE_URL, so nothing reaches the live provider (categories would send ${bearer})`;
  return (
    `the worker calls ${new URL(env.MPS_BASE_URL).origin} (MPS_LIVE=1): every swap initialisation, swap confirmation and payment link is real money; ` +
    `the categories call sends ${bearer}`
  );
}

function productionLine(env: AppEnv): string {
  const rules =
    'the embedded simulator (MPS_PROVIDER=simulator) refused; a gateway on a non-loopback interface refused its start when the notification address it hands ' +
    'the provider (GATEWAY_NOTIFICATION_BASE_URL, else GATEWAY_PUBLIC_URL) is unset or loopback; loopback MERCHANT_WEBHOOK_URL(S) refused, and a loopback ' +
    'webhook_url in a start request';
  return isProduction(env) ? `NODE_ENV=production turns on its refusals: ${rules}` : `NODE_ENV is not production, so its refusals stay off: ${rules}`;
}

function eventsLines(env: AppEnv): string[] {
  const events = merchantEventsFromEnv(env);
  const hours = Math.round(events.schedule.retry_for_ms / 3_600_000);
  const delivery =
    events.secrets.length === 0
      ? 'merchant events: not delivered (no MERCHANT_WEBHOOK_SECRET); flows only list them in their view'
      : `merchant events: signed with ${events.secrets.length} secret(s) and delivered to ${events.urls.length} configured endpoint(s)` +
        `${events.urls.length ? ` (${[...new Set(events.urls.map(hostOf))].join(', ')})` : ''}, retried for ${hours} h`;
  const egress = events.egress;
  const perFlow = !egress?.enabled
    ? "a flow's own webhook_url: refused (NODE_ENV=production without MERCHANT_WEBHOOK_ALLOWED_HOSTS)"
    : env.MERCHANT_WEBHOOK_ALLOWED_HOSTS
      ? `a flow's own webhook_url: only to MERCHANT_WEBHOOK_ALLOWED_HOSTS (${env.MERCHANT_WEBHOOK_ALLOWED_HOSTS})`
      : "a flow's own webhook_url: any public host and loopback (the default outside production)";
  return [delivery, perFlow];
}

function limitsLine(env: AppEnv): string {
  const limits = dailyLimitsFromEnv(env) as Record<string, number | Readonly<Record<string, string>> | undefined>;
  const set = LIMIT_NAMES.filter((n) => limits[n] !== undefined).map((n) => {
    const v = limits[n];
    return `${n} ${typeof v === 'number' ? v : Object.entries(v ?? {}).map(([cur, amount]) => `${cur} ${amount}`).join(', ')}`;
  });
  return set.length === 0
    ? 'daily limits: none set (LIMIT_*): no swap or link is refused for a daily count or amount'
    : `daily limits, per UTC day, where flows start (gateway, CLI, SDK): ${set.join('; ')}`;
}

/**
 * The provider guard's variables (PROVIDER_*), when this version has them: those set, else its
 * defaults. Its pause is kept in Temporal, which this check does not reach.
 */
function guardLine(env: AppEnv): string | undefined {
  const names = Object.keys(EnvSchema.shape).filter((n) => n.startsWith('PROVIDER_'));
  if (names.length === 0) return undefined;
  const values = env as Record<string, unknown>;
  const given = names.filter((n) => values[n] !== undefined).map((n) => `${n}=${String(values[n])}`);
  return `provider guard (PROVIDER_*): ${given.length ? given.join(', ') : 'at its defaults'}; whether it is paused is kept in Temporal and not read here`;
}

function flowsLine(env: AppEnv): string {
  return (
    `flows: a swap's cap of wrong PINs is ${env.SWAP_PIN_MAX_ATTEMPTS} (SWAP_PIN_MAX_ATTEMPTS); a confirmation in doubt waits ${env.SWAP_SETTLE_WAIT_SECONDS} s for the provider's notification ` +
    `before needs_reconciliation (SWAP_SETTLE_WAIT_SECONDS); a link waits ${env.LINK_LIFETIME_SECONDS} s for its payment (LINK_LIFETIME_SECONDS) ` +
    `and records a late one for ${env.LINK_LATE_NOTIFICATION_GRACE_SECONDS} s more (LINK_LATE_NOTIFICATION_GRACE_SECONDS)`
  );
}

export function goingLiveEnables(env: AppEnv): string[] {
  const guard = guardLine(env);
  return [providerLine(env), productionLine(env), ...eventsLines(env), limitsLine(env), ...(guard ? [guard] : []), flowsLine(env)];
}
