/**
 * The provider breakers' thresholds (part of EnvSchema, so `NAME_FILE` works for each): read by
 * the workers, which report them with their outcomes to the deployment's guard
 * (contract/provider-guard.ts has the defaults and why). Unset: the defaults.
 */
import { z } from 'zod';
import type { BreakerSettings } from '../contract/provider-guard-view';

const seconds = z.coerce.number().positive('must be a number of seconds above 0').max(86_400).optional();
const count = z.coerce.number().int('must be a whole number').min(1, 'must be at least 1').max(100_000).optional();

export const PROVIDER_GUARD_ENV = {
  /** The window the breakers count outcomes in, seconds (default 60). */
  PROVIDER_BREAKER_WINDOW_SECONDS: seconds,
  /** A breaker opens at this many ambiguous outcomes (a POST sent, no usable answer) of its class in the window (default 3). */
  PROVIDER_BREAKER_AMBIGUOUS_COUNT: count,
  /** …or at this share of ambiguous outcomes, 0-1 (default 0.5), once its class made PROVIDER_BREAKER_MIN_CALLS calls in the window (default 6). */
  PROVIDER_BREAKER_AMBIGUOUS_SHARE: z.coerce.number().gt(0, 'must be above 0').max(1, 'must be at most 1').optional(),
  /** The calls in the window before the share counts (default 6). */
  PROVIDER_BREAKER_MIN_CALLS: count,
  /** A breaker opens at this many 429 answers of its class in the window (default 10). */
  PROVIDER_BREAKER_THROTTLED_COUNT: count,
  /** How long an open breaker waits before it probes the provider with the categories GET, seconds (default 30). */
  PROVIDER_BREAKER_COOLDOWN_SECONDS: seconds,
  /** A money-moving call still unanswered after this long counts as ambiguous then, seconds (default 3). */
  PROVIDER_BREAKER_SLOW_SECONDS: seconds,
};

type GuardEnv = { [K in keyof typeof PROVIDER_GUARD_ENV]?: z.output<(typeof PROVIDER_GUARD_ENV)[K]> };

/** The thresholds the environment sets (only those set): any part of the guard's BreakerSettings. */
export type BreakerThresholds = Partial<BreakerSettings>;

export function breakerSettingsFromEnv(env: GuardEnv): BreakerThresholds {
  const out: BreakerThresholds = {};
  if (env.PROVIDER_BREAKER_WINDOW_SECONDS !== undefined) out.window_ms = env.PROVIDER_BREAKER_WINDOW_SECONDS * 1000;
  if (env.PROVIDER_BREAKER_AMBIGUOUS_COUNT !== undefined) out.ambiguous_count = env.PROVIDER_BREAKER_AMBIGUOUS_COUNT;
  if (env.PROVIDER_BREAKER_AMBIGUOUS_SHARE !== undefined) out.ambiguous_share = env.PROVIDER_BREAKER_AMBIGUOUS_SHARE;
  if (env.PROVIDER_BREAKER_MIN_CALLS !== undefined) out.min_calls = env.PROVIDER_BREAKER_MIN_CALLS;
  if (env.PROVIDER_BREAKER_THROTTLED_COUNT !== undefined) out.throttled_count = env.PROVIDER_BREAKER_THROTTLED_COUNT;
  if (env.PROVIDER_BREAKER_COOLDOWN_SECONDS !== undefined) out.cooldown_ms = env.PROVIDER_BREAKER_COOLDOWN_SECONDS * 1000;
  if (env.PROVIDER_BREAKER_SLOW_SECONDS !== undefined) out.slow_ms = env.PROVIDER_BREAKER_SLOW_SECONDS * 1000;
  return out;
}
