/**
 * The daily limits of the environment (part of EnvSchema, so `NAME_FILE` works for each): per user
 * and per deployment, per UTC day, on the count and on the amount of swaps and payment links. The
 * variable of a limit is `LIMIT_` and its name in capitals (`swap_amount_per_user_day` is
 * LIMIT_SWAP_AMOUNT_PER_USER_DAY); the name is what a refusal (422 `limit_exceeded`) names.
 *
 * A count is a whole number (0: none may start). An amount is per currency, `CUR:amount` pairs
 * separated by commas (`NGN:500000,USD:2000`, at most 2 decimal places, as amounts are); a
 * currency the list does not name has no amount limit. Unset: no limit (nothing is counted). What
 * a limit counts and how it is kept: src/starter/client/limits.ts, docs/operations/limits.md.
 */
import { z } from 'zod';

/** The limits, by name: `<swap|link>_<count|amount>_per_<user|deployment>_day`. */
export const LIMIT_NAMES = [
  'swap_count_per_user_day',
  'swap_amount_per_user_day',
  'swap_count_per_deployment_day',
  'swap_amount_per_deployment_day',
  'link_count_per_user_day',
  'link_amount_per_user_day',
  'link_count_per_deployment_day',
  'link_amount_per_deployment_day',
] as const;
export type LimitName = (typeof LIMIT_NAMES)[number];

/** Currency -> the most a UTC day may take, as the decimal text it was given in (`2000`, `99.5`). */
export type AmountLimit = Readonly<Record<string, string>>;

/** The configured limits, by name; an absent one is no limit. */
export type DailyLimits = { readonly [N in LimitName as N extends `${string}_count_${string}` ? N : never]?: number } & {
  readonly [N in LimitName as N extends `${string}_amount_${string}` ? N : never]?: AmountLimit;
};

const CURRENCY_AMOUNT = /^([A-Z]{3,5}):(\d{1,13}(?:\.\d{1,2})?)$/;

/** `CUR:amount,CUR:amount`, each currency once; unset or empty: no limit. */
export const amountLimitList = z
  .string()
  .optional()
  .transform((v, ctx): AmountLimit | undefined => {
    const parts = (v ?? '').split(',').map((s) => s.trim()).filter(Boolean);
    if (parts.length === 0) return undefined;
    const out: Record<string, string> = {};
    for (const part of parts) {
      const m = CURRENCY_AMOUNT.exec(part);
      if (!m) {
        ctx.addIssue({ code: 'custom', message: 'must be comma-separated CUR:amount pairs such as NGN:500000,USD:2000 (upper-case code, at most 2 decimal places)' });
        return z.NEVER;
      }
      if (m[1]! in out) {
        ctx.addIssue({ code: 'custom', message: `names ${m[1]} twice` });
        return z.NEVER;
      }
      out[m[1]!] = m[2]!;
    }
    return out;
  });

/** A count a UTC day may take: a whole number, 0 or more. */
const countLimit = z.coerce.number().int('must be a whole number').min(0, 'must be 0 or more').max(1_000_000_000).optional();

export const LIMITS_ENV = {
  /** Swaps one user_ref may start in a UTC day (a whole number; unset: no limit). */
  LIMIT_SWAP_COUNT_PER_USER_DAY: countLimit,
  /** What one user_ref may swap in a UTC day, per source currency: `CUR:amount` pairs, e.g. `NGN:500000,USD:2000` (a currency not named: no amount limit; unset: none). */
  LIMIT_SWAP_AMOUNT_PER_USER_DAY: amountLimitList,
  /** Swaps the whole deployment may start in a UTC day, every user together (unset: no limit). */
  LIMIT_SWAP_COUNT_PER_DEPLOYMENT_DAY: countLimit,
  /** What the whole deployment may swap in a UTC day, per source currency, `CUR:amount` pairs (unset: no limit). */
  LIMIT_SWAP_AMOUNT_PER_DEPLOYMENT_DAY: amountLimitList,
  /** Payment links one user_ref may create in a UTC day (unset: no limit). */
  LIMIT_LINK_COUNT_PER_USER_DAY: countLimit,
  /** What the payment links of one user_ref may ask for in a UTC day, `CUR:amount` pairs (links are NGN: `NGN:1000000`; unset: no limit). */
  LIMIT_LINK_AMOUNT_PER_USER_DAY: amountLimitList,
  /** Payment links the whole deployment may create in a UTC day (unset: no limit). */
  LIMIT_LINK_COUNT_PER_DEPLOYMENT_DAY: countLimit,
  /** What the payment links of the whole deployment may ask for in a UTC day, `CUR:amount` pairs (unset: no limit). */
  LIMIT_LINK_AMOUNT_PER_DEPLOYMENT_DAY: amountLimitList,
};

type LimitsEnv = { [K in keyof typeof LIMITS_ENV]?: z.output<(typeof LIMITS_ENV)[K]> };

/** The limits the environment sets (only those set). */
export function dailyLimitsFromEnv(env: LimitsEnv): DailyLimits {
  const out: Record<string, unknown> = {};
  for (const name of LIMIT_NAMES) {
    const value = env[`LIMIT_${name.toUpperCase()}` as keyof LimitsEnv];
    if (value !== undefined) out[name] = value;
  }
  return out as DailyLimits;
}
