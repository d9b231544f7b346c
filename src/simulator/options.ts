/**
 * Options of the simulator, their defaults, and the mutable run-time configuration that
 * PUT /_sim/config changes (the credentials, ports and seed are fixed for a run).
 */
import { randomInt } from 'node:crypto';
import { z } from 'zod';

/** The wallet PIN the simulator accepts for every user without one of its own (not a secret: no money moves). */
export const SIMULATOR_DEFAULT_PIN = '1234';

/** Credentials the simulator accepts unless configured otherwise (never real ones). */
export const SIMULATOR_DEFAULT_CREDENTIALS = {
  secretKey: 'sim-secret-key',
  accessToken: 'sim-access-token',
  merchantRef: 'sim-merchant',
} as const;

export interface SimulatorOptions {
  host?: string; // default '127.0.0.1'
  port?: number; // provider API + control API port, 0 = free (default 0)
  checkoutPort?: number; // hosted checkout host (separate server/port), 0 = free (default 0)
  /** Base of pay_link when the checkout is reached through another address (e.g. a container port map). */
  checkoutPublicUrl?: string;
  secretKey?: string; // default 'sim-secret-key'   (Bearer for swap init + confirm)
  accessToken?: string; // default 'sim-access-token' (Bearer for hosted link)
  merchantRef?: string; // default 'sim-merchant'     (x-merchant-ref)
  swapExpiresInSeconds?: number; // default 300
  pins?: Record<string, string>; // user_ref -> wallet PIN
  defaultPin?: string; // PIN for users not in `pins`, default SIMULATOR_DEFAULT_PIN
  providerPinAttempts?: number; // wrong PINs after which the provider burns the token, default 5
  notificationRetryScheduleMs?: number[]; // default [0, 1000, 5000, 30000, 120000]
  categoriesRequireBearer?: boolean; // default false
  /**
   * Host names (exact, e.g. a compose service 'gateway') that notifications may go to besides
   * loopback addresses. Default none: loopback only. Fixed at start (not changeable via /_sim).
   */
  notificationAllowHosts?: string[];
  seed?: number; // seeds every random choice (faults, refs, unknown rates); random when absent
  logger?: boolean | object; // fastify logger option, default false
  /** Keep swaps, links and the ledger in this file across restarts (persistence.ts); default: memory only. */
  stateFile?: string;
}

const ExpiresInSeconds = z.number().int().min(1).max(86_400);

/**
 * What PUT /_sim/config may change (a partial update; `pins` replaces the whole map).
 * `swapExpiresInSecondsFor` is merged key by key: the window one swap (by txn_ref) is initialised
 * with instead of `swapExpiresInSeconds`, `null` removing the key, so a tool can give its own swap a
 * short window without touching anyone else's.
 */
export const ConfigPatch = z
  .object({
    swapExpiresInSeconds: ExpiresInSeconds,
    swapExpiresInSecondsFor: z.record(z.string().min(1).max(100), ExpiresInSeconds.nullable()),
    pins: z.record(z.string().min(1), z.string().min(1)),
    defaultPin: z.string().min(1),
    providerPinAttempts: z.number().int().min(1).max(100),
    notificationRetryScheduleMs: z.array(z.number().int().min(0).max(3_600_000)).min(1).max(50),
    categoriesRequireBearer: z.boolean(),
  })
  .partial()
  .strict();
export type ConfigPatch = z.infer<typeof ConfigPatch>;

export interface SimConfig {
  host: string;
  secretKey: string;
  accessToken: string;
  merchantRef: string;
  seed: number;
  swapExpiresInSeconds: number;
  /** Per txn_ref, the window instead of swapExpiresInSeconds (PUT /_sim/config; none at start). */
  swapExpiresInSecondsFor: Map<string, number>;
  pins: Record<string, string>;
  defaultPin: string;
  providerPinAttempts: number;
  notificationRetryScheduleMs: number[];
  categoriesRequireBearer: boolean;
  notificationAllowHosts: string[];
}

export function resolveConfig(opts: SimulatorOptions): SimConfig {
  const patch = ConfigPatch.parse({
    swapExpiresInSeconds: opts.swapExpiresInSeconds,
    pins: opts.pins,
    defaultPin: opts.defaultPin,
    providerPinAttempts: opts.providerPinAttempts,
    notificationRetryScheduleMs: opts.notificationRetryScheduleMs,
    categoriesRequireBearer: opts.categoriesRequireBearer,
  });
  return {
    host: opts.host ?? '127.0.0.1',
    secretKey: opts.secretKey ?? SIMULATOR_DEFAULT_CREDENTIALS.secretKey,
    accessToken: opts.accessToken ?? SIMULATOR_DEFAULT_CREDENTIALS.accessToken,
    merchantRef: opts.merchantRef ?? SIMULATOR_DEFAULT_CREDENTIALS.merchantRef,
    seed: (opts.seed ?? randomInt(0, 2 ** 31)) >>> 0,
    swapExpiresInSeconds: patch.swapExpiresInSeconds ?? 300,
    swapExpiresInSecondsFor: new Map(),
    pins: { ...(patch.pins ?? {}) },
    defaultPin: patch.defaultPin ?? SIMULATOR_DEFAULT_PIN,
    providerPinAttempts: patch.providerPinAttempts ?? 5,
    notificationRetryScheduleMs: patch.notificationRetryScheduleMs ?? [0, 1000, 5000, 30000, 120000],
    categoriesRequireBearer: patch.categoriesRequireBearer ?? false,
    notificationAllowHosts: (opts.notificationAllowHosts ?? []).map((h) => h.trim().toLowerCase()).filter(Boolean),
  };
}

export function applyConfigPatch(cfg: SimConfig, patch: ConfigPatch): void {
  if (patch.swapExpiresInSeconds !== undefined) cfg.swapExpiresInSeconds = patch.swapExpiresInSeconds;
  for (const [txnRef, seconds] of Object.entries(patch.swapExpiresInSecondsFor ?? {})) {
    if (seconds === null) cfg.swapExpiresInSecondsFor.delete(txnRef);
    else cfg.swapExpiresInSecondsFor.set(txnRef, seconds);
  }
  if (patch.pins !== undefined) cfg.pins = { ...patch.pins };
  if (patch.defaultPin !== undefined) cfg.defaultPin = patch.defaultPin;
  if (patch.providerPinAttempts !== undefined) cfg.providerPinAttempts = patch.providerPinAttempts;
  if (patch.notificationRetryScheduleMs !== undefined) cfg.notificationRetryScheduleMs = [...patch.notificationRetryScheduleMs];
  if (patch.categoriesRequireBearer !== undefined) cfg.categoriesRequireBearer = patch.categoriesRequireBearer;
}

/** The configuration without secrets (PINs and credentials are never shown). */
export function publicConfig(cfg: SimConfig): Record<string, unknown> {
  return {
    seed: cfg.seed,
    merchantRef: cfg.merchantRef,
    swapExpiresInSeconds: cfg.swapExpiresInSeconds,
    swapExpiresInSecondsFor: Object.fromEntries(cfg.swapExpiresInSecondsFor),
    pinsFor: Object.keys(cfg.pins),
    providerPinAttempts: cfg.providerPinAttempts,
    notificationRetryScheduleMs: cfg.notificationRetryScheduleMs,
    categoriesRequireBearer: cfg.categoriesRequireBearer,
    notificationAllowHosts: cfg.notificationAllowHosts,
  };
}
