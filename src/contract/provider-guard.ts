/**
 * The provider guard's data (pure and workflow-safe): what the deployment as a whole allows the
 * provider to be sent. One guard per deployment (task queue), kept in Temporal by the
 * providerGuardWorkflow and read by every worker and gateway:
 *
 *  - the **kill switch**: an operator's pause (who, when, why) stops every money-moving call;
 *  - a **circuit breaker per endpoint class** (initiate a swap / confirm a swap / create a link):
 *    it opens on ambiguous outcomes (a POST sent and no usable answer: timeouts, 5xx, resets) or
 *    on sustained 429s within a window (a call unanswered after `slow_ms` counts as ambiguous
 *    then, without waiting for the client's 10 s timeout), and after a cool-down half-opens: the
 *    harmless categories GET is sent as a probe; when it succeeds, ONE real call of the class is let
 *    through as the trial (the first caller to claim it), and only that call's answer closes the
 *    breaker. A GET can succeed while confirmations hang; a trial cannot.
 *
 * While a class is held, nothing of it is sent: new swaps and links are refused before they start
 * (503 provider_unavailable), a confirmation waits inside its swap's window (expiring cleanly
 * rather than making one more payment in doubt), links keep waiting for their notifications.
 */
import type { ProviderEndpoint } from './provider';
import type { BreakerSettings, BreakerState, ClassState, GuardPause, GuardView, MoneyClass } from './provider-guard-view';

// The view's types, inferred from its schemas (provider-guard-view.ts); imported as types only, so
// the workflow bundle, which imports this module, carries no zod.
export type { BreakerSettings, BreakerState, ClassState, GuardPause, GuardView, MoneyClass };

export const MONEY_CLASSES = ['initiate', 'confirm', 'create'] as const satisfies readonly MoneyClass[];
/** Every class of the schema is listed in MONEY_CLASSES: a class added there and not here does not compile. */
export type EveryMoneyClassListed<T extends never = Exclude<MoneyClass, (typeof MONEY_CLASSES)[number]>> = T;

/** The class of each provider endpoint; the categories GET moves no money and is never held. */
export const CLASS_OF_ENDPOINT: Readonly<Record<ProviderEndpoint, MoneyClass | undefined>> = {
  swapInit: 'initiate',
  swapConfirm: 'confirm',
  hostedLink: 'create',
  categories: undefined,
};

/**
 * The defaults. Every ambiguous outcome of a confirmation is a swap an operator may have to settle
 * by hand, and the provider answers within 10 s when healthy, so three in a minute are an
 * incident, not noise: the breaker opens there, and bounds the swaps in doubt of an incident at
 * about three per class (plus the calls already in flight when it opened). Half of the calls
 * ambiguous (at least six) opens it on a low-traffic deployment too. 429s are the provider asking
 * for less: ten in a minute open it. A call unanswered for 3 s counts as ambiguous at once: a
 * payments API answers in well under a second when healthy, and waiting for the client's 10 s
 * timeout let three times as many confirmations into an incident before the breaker opened (the
 * soak). Thirty seconds of cool-down, then one GET, then one real call decide.
 */
export const DEFAULT_BREAKER: BreakerSettings = {
  window_ms: 60_000,
  ambiguous_count: 3,
  ambiguous_share: 0.5,
  min_calls: 6,
  throttled_count: 10,
  cooldown_ms: 30_000,
  slow_ms: 3_000,
};

/** Outcomes of one class reported by a worker (one signal per second at most). */
export interface OutcomeCounts {
  ok: number;
  ambiguous: number;
  throttled: number;
}

export interface OutcomeReport {
  counts: Partial<Record<MoneyClass, OutcomeCounts>>;
  /** The reporting worker's breaker settings (the newest report's apply). */
  settings: BreakerSettings;
}

export const PROVIDER_GUARD_WORKFLOW_TYPE = 'providerGuardWorkflow';
/**
 * The memo key under which the guard keeps its view (GuardView) after every change, so that
 * workers and gateways read it with a describe, which needs no worker: a killed worker no longer
 * leaves the guard unanswered for the seconds its workflow task takes to move to another.
 */
export const GUARD_MEMO_KEY = 'provider_guard';
/** A guard whose workflow task has waited longer than this for a worker is not trusted (fail closed). */
export const GUARD_TASK_STALE_MS = 15_000;
export const providerGuardWorkflowId = (taskQueue: string): string => `provider-guard-${taskQueue}`;

/** The ApplicationFailure type of a call the guard held (nothing was sent by this attempt). */
export const PROVIDER_HELD_TYPE = 'ProviderHeldError';

/** details[0] of a held call's failure. */
export interface HeldDetails {
  class: MoneyClass;
  reason: string;
  /** An earlier attempt of this activity may have reached the provider (so the doubt stays). */
  sent_earlier: boolean;
}

/** The guard before anything happened: nothing paused, every breaker closed since `now`. */
export function closedGuardView(settings: BreakerSettings, now: number): GuardView {
  const since = new Date(now).toISOString();
  return { breakers: { initiate: { state: 'closed', since }, confirm: { state: 'closed', since }, create: { state: 'closed', since } }, settings, audit: [] };
}

/**
 * Why a class may not be sent now (undefined: it may). `key` is the flow asking (its workflow id):
 * the flow that holds a half-open breaker's trial may send.
 */
export function holdReason(view: GuardView, cls: MoneyClass, key?: string): string | undefined {
  if (view.paused) return `money-moving calls are paused by ${view.paused.by} since ${view.paused.at}: ${view.paused.reason}`;
  const b = view.breakers[cls];
  if (b.state === 'open') return `the ${cls} breaker is open since ${b.since} (${b.reason ?? 'ambiguous outcomes'}); probe at ${b.probe_at ?? 'soon'}`;
  if (b.state === 'half_open') {
    if (b.trial?.key !== undefined && key !== undefined && b.trial.key === key) return undefined;
    if (b.trial?.key !== undefined) return `the ${cls} breaker is half-open: one trial call is with the provider`;
    if (b.trial) return `the ${cls} breaker is half-open: its trial call is not claimed yet`;
    return `the ${cls} breaker is half-open: the provider is being probed`;
  }
  return undefined;
}

/** Whether a caller may claim the class's trial now (half-open, the GET succeeded, nobody claimed it). */
export function trialClaimable(view: GuardView, cls: MoneyClass): boolean {
  const b = view.breakers[cls];
  return !view.paused && b.state === 'half_open' && b.trial !== undefined && b.trial.key === undefined;
}

/** Seconds a caller should wait before trying again (Retry-After). */
export function retryAfterSeconds(view: GuardView, cls: MoneyClass, now: number): number {
  if (view.paused) return 30;
  const at = view.breakers[cls].probe_at;
  return at ? Math.max(1, Math.ceil((Date.parse(at) - now) / 1000) + 1) : 5;
}

/** The answer to a trial claim (update `claimTrial`) or release (update `releaseTrial`). */
export interface TrialClaim {
  /** Claimed (or held already) by this flow; for a release, given back. */
  granted: boolean;
  view: GuardView;
}

/**
 * What the activities ask when a money-moving call has its connection, right before it is sent
 * (a ProviderGuardLink in the worker): why
 * `key`'s call of `cls` may not be sent now (undefined: send it). A half-open breaker's trial is
 * claimed here, for the first flow that asks.
 */
export interface ProviderGate {
  admit(cls: MoneyClass, key: string | undefined): Promise<string | undefined>;
}
