/**
 * The one place a ProviderError becomes a Temporal ApplicationFailure: `type` is the error class
 * name, `nonRetryable` from RETRYABLE_BY_KIND, the provider's Retry-After as
 * `nextRetryDelay`, and only non-secret facts in `details`.
 */
import { ApplicationFailure } from '@temporalio/common';
import { isProviderError, type ProviderError } from '../provider/errors';
import { EARLIER_ATTEMPT_APPLIED_TYPE, RETRYABLE_BY_KIND, SEALED_PAYLOAD_FAILURE_TYPE } from './retry-policies';
import type { ProviderFailureDetails } from './types';

export function providerFailure(err: ProviderError): ApplicationFailure {
  const details: ProviderFailureDetails = { kind: err.kind, endpoint: err.endpoint };
  if (err.httpStatus !== undefined) details.httpStatus = err.httpStatus;
  if (err.requestId !== undefined) details.requestId = err.requestId;
  return ApplicationFailure.create({
    type: err.name,
    message: err.message,
    nonRetryable: !RETRYABLE_BY_KIND[err.kind],
    nextRetryDelay: err.kind === 'rate_limited' && err.retryAfterMs ? err.retryAfterMs : undefined,
    details: [details],
  });
}

/** ProviderErrors become ApplicationFailures; anything else is returned unchanged. */
export function toActivityError(err: unknown): unknown {
  return isProviderError(err) ? providerFailure(err) : err;
}

/** A sealed value that will not open: retrying cannot help. The value itself is never quoted. */
export function sealedPayloadFailure(field: string): ApplicationFailure {
  return ApplicationFailure.create({
    type: SEALED_PAYLOAD_FAILURE_TYPE,
    message: `could not unseal ${field} (unknown key or tampered payload)`,
    nonRetryable: true,
  });
}

/** A retry met the duplicate-reference check: the first attempt was applied, its answer lost. */
export function earlierAttemptAppliedFailure(what: string, ref: string, providerMessage: string | undefined): ApplicationFailure {
  return ApplicationFailure.create({
    type: EARLIER_ATTEMPT_APPLIED_TYPE,
    message: `the provider already holds ${what} ${ref} from an earlier attempt whose answer was lost (${providerMessage ?? 'duplicate reference'})`,
    nonRetryable: true,
  });
}
