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
 * Provider calls: retry what is safe (transient, rate-limited with the provider's Retry-After as
 * the next delay); never retry a definitive answer, a credential problem, or a POST whose outcome
 * is unknown (that goes to reconciliation).
 */
export const providerRetryPolicy: RetryPolicy = {
  initialInterval: '1s',
  backoffCoefficient: 2,
  maximumInterval: '10s',
  nonRetryableErrorTypes: [
    PROVIDER_FAILURE_TYPES.rejected,
    PROVIDER_FAILURE_TYPES.auth,
    PROVIDER_FAILURE_TYPES.ambiguous,
    PROVIDER_FAILURE_TYPES.invalid_request,
    SEALED_PAYLOAD_FAILURE_TYPE,
  ],
};

/** Per-attempt timeout of a provider activity; the client's own timeouts (5/10/10 s) stay below it. */
export const PROVIDER_ACTIVITY_START_TO_CLOSE = '30s';
