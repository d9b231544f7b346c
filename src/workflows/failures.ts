/** How the workflows read an activity's failure: its ProviderError type, and words for operators. */
import { ActivityFailure, ApplicationFailure, TimeoutFailure } from '@temporalio/workflow';
import { EARLIER_ATTEMPT_APPLIED_TYPE, PROVIDER_FAILURE_TYPES } from '../activities/retry-policies';
import { type HeldDetails, PROVIDER_HELD_TYPE } from '../contract/provider-guard';

/** Failure type of an activity failure (the ProviderError class name), if any. */
export function failureType(err: unknown): string | undefined {
  if (err instanceof ActivityFailure && err.cause instanceof ApplicationFailure) return err.cause.type ?? undefined;
  return undefined;
}

/**
 * The guard's hold, when an activity failed on it with no attempt ever sent (its last failure a
 * held one that says so); undefined when any attempt may have reached the provider.
 */
export function heldThroughout(err: unknown): HeldDetails | undefined {
  if (!(err instanceof ActivityFailure) || !(err.cause instanceof ApplicationFailure) || err.cause.type !== PROVIDER_HELD_TYPE) return undefined;
  const d = err.cause.details?.[0] as HeldDetails | undefined;
  return d && d.sent_earlier === false ? d : undefined;
}

/**
 * The guard's hold, when an activity ran out of its schedule-to-close while its next retry after
 * held attempts waited for a worker: its last heartbeat (activities/guard.ts) says every attempt
 * so far was held, and its last failure is a held one. Any attempt that sent heartbeated so before
 * sending (and never in its last seconds), so the last heartbeat still saying "held only" means
 * nothing was sent.
 */
export function heldUntilTimeout(err: unknown): HeldDetails | undefined {
  if (!(err instanceof ActivityFailure) || !(err.cause instanceof TimeoutFailure) || err.cause.timeoutType !== 'SCHEDULE_TO_CLOSE') return undefined;
  const beat = err.cause.lastHeartbeatDetails as { held_only?: unknown } | undefined;
  if (beat?.held_only !== true) return undefined;
  const last = err.cause.cause;
  const d = last instanceof ApplicationFailure && last.type === PROVIDER_HELD_TYPE ? (last.details?.[0] as HeldDetails | undefined) : undefined;
  return { class: d?.class ?? 'confirm', reason: d?.reason ?? 'held by the provider guard until the window closed', sent_earlier: false };
}

export function describeFailure(err: unknown): string {
  if (err instanceof ActivityFailure) return `${failureType(err) ?? 'activity failed'}: ${err.cause?.message ?? err.message}`;
  return err instanceof Error ? err.message : String(err);
}

/**
 * Why a creation step (swap initialization, link creation) ended the flow `failed`. Such a step
 * moves no money by itself: what the customer needs to pay or confirm (auth token, pay_link) never
 * reached them, even when the provider did apply a request whose answer was lost.
 */
export function creationFailureReason(step: string, err: unknown, neverReceived: string): string {
  const type = failureType(err);
  const doubt =
    type === EARLIER_ATTEMPT_APPLIED_TYPE
      ? 'a retry met the provider\'s duplicate check: an earlier attempt was applied and its answer lost'
      : type === PROVIDER_FAILURE_TYPES.ambiguous || (type === undefined && err instanceof ActivityFailure)
        ? 'the provider may have applied an attempt whose answer was lost'
        : undefined;
  const base = `${step} failed (${describeFailure(err)})`;
  return doubt
    ? `${base}; ${doubt}. No money moved: ${neverReceived}; start again with a new reference`
    : `${base}. No money moved`;
}
