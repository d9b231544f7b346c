/**
 * Retry policies and failure type names for provider activities. Workflow-safe: no I/O, only
 * types from @temporalio/common. The names equal the ProviderError class names (a test holds
 * them together).
 */
import type { RetryPolicy } from '@temporalio/common';

export const PROVIDER_FAILURE_TYPES = {
  rejected: 'ProviderRejectedError',
  auth: 'ProviderAuthError',
  rate_limited: 'ProviderRateLimitedError',
  transient: 'ProviderTransientError',
  ambiguous: 'ProviderAmbiguousError',
  invalid_request: 'ProviderRequestInvalidError',
} as const;

/** Thrown when a sealed auth_token or PIN cannot be opened (wrong key ring or tampering). */
export const SEALED_PAYLOAD_FAILURE_TYPE = 'SealedPayloadError';

/**
 * A retried initialization or link creation met the provider's duplicate-reference check: an
 * earlier attempt was applied and its answer (auth_token, pay_link) was lost. No money moved.
 */
export const EARLIER_ATTEMPT_APPLIED_TYPE = 'EarlierAttemptAppliedError';

/**
 * The one retry-by-kind table: the activity failure mapping (nonRetryable) and the retry policy
 * both read it. `ambiguous` (a POST sent, no answer) is retried: the provider's duplicate check and
 * single-use auth_token make a retry unable to apply twice, and its answer is evidence
 * (src/contract/provider.ts, "Evidence from retries"). Bounded by each activity's schedule-to-close.
 */
export const RETRYABLE_BY_KIND: Readonly<Record<keyof typeof PROVIDER_FAILURE_TYPES, boolean>> = {
  rejected: false,
  auth: false,
  invalid_request: false,
  rate_limited: true,
  transient: true,
  ambiguous: true,
};

/**
 * Provider calls: retry what is safe (transient, rate-limited with the provider's Retry-After as
 * the next delay, ambiguous); never retry a definitive answer or a credential problem.
 */
export const providerRetryPolicy: RetryPolicy = {
  initialInterval: '1s',
  backoffCoefficient: 2,
  maximumInterval: '10s',
  nonRetryableErrorTypes: [
    ...(Object.keys(RETRYABLE_BY_KIND) as Array<keyof typeof PROVIDER_FAILURE_TYPES>)
      .filter((k) => !RETRYABLE_BY_KIND[k])
      .map((k) => PROVIDER_FAILURE_TYPES[k]),
    SEALED_PAYLOAD_FAILURE_TYPE,
    EARLIER_ATTEMPT_APPLIED_TYPE,
  ],
};

/** Per-attempt timeout of a provider activity; the client's own timeouts (5/10/10 s) stay below it. */
export const PROVIDER_ACTIVITY_START_TO_CLOSE = '30s';

/**
 * A provider activity heartbeats while its HTTP call is in flight (activities/heartbeat.ts), so a
 * worker that dies mid-call (SIGKILL, OOM, host loss) is noticed after this long and the call is
 * retried on another worker — not after the 30 s start-to-close, which would use up most of a
 * swap's confirmation window and leave a doubt that only reconciliation could settle.
 */
export const PROVIDER_ACTIVITY_HEARTBEAT_TIMEOUT = '8s';

/**
 * A confirmation is retried only inside the provider's window, so it is retried more often than
 * other calls (at most every 3 s): each retry's answer is evidence ("wrong PIN": nothing applied;
 * "token used": the earlier attempt applied), and a window that runs out on an unanswered attempt
 * is the one doubt left for reconciliation.
 */
export const confirmRetryPolicy: RetryPolicy = { ...providerRetryPolicy, maximumInterval: '3s' };
