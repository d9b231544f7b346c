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
