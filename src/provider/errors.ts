/**
 * The provider error taxonomy: one class per way a provider call can fail, each saying what the
 * caller may do next. Activities turn these into Temporal ApplicationFailures whose `type` is the
 * class `name` (keep the names stable: retry policies and workflows match on them).
 *
 * | class                       | kind            | meaning                                                   | retry?            |
 * |-----------------------------|-----------------|-----------------------------------------------------------|-------------------|
 * | ProviderRejectedError       | rejected        | the provider answered, definitively no                    | no                |
 * | ProviderAuthError           | auth            | 401/403: our credentials are wrong or not allowed          | no                |
 * | ProviderRateLimitedError    | rate_limited    | 429; retryAfterMs from Retry-After when given              | yes, after delay  |
 * | ProviderTransientError      | transient       | nothing happened at the provider (or a read): try again    | yes               |
 * | ProviderAmbiguousError      | ambiguous       | a POST may have reached the provider; outcome unknown      | no: reconcile     |
 * | ProviderRequestInvalidError | invalid_request | our own request failed the contract; nothing was sent      | no                |
 *
 * Messages never carry credentials, the PIN, the auth_token or a raw body: at most a short
 * masked excerpt of the provider's `message` (see sanitize.ts).
 */
import { classifyConfirmRejectionMessage, type ConfirmRejectionKind, type ProviderEndpoint } from '../contract/provider';

export type ProviderErrorKind = 'rejected' | 'auth' | 'rate_limited' | 'transient' | 'ambiguous' | 'invalid_request';

export interface ProviderErrorInit {
  endpoint: ProviderEndpoint;
  httpStatus?: number;
  /** From the response's x-request-id / request-id header. */
  requestId?: string;
  retryAfterMs?: number;
  /** The provider's own `message`, already masked and shortened. */
  providerMessage?: string;
  /** For network failures: the error code (ECONNREFUSED, UND_ERR_HEADERS_TIMEOUT …). */
  networkCode?: string;
  /** The underlying error (network failures only; never a request or response body). */
  cause?: unknown;
}

export abstract class ProviderError extends Error {
  abstract readonly kind: ProviderErrorKind;
  readonly endpoint: ProviderEndpoint;
  readonly httpStatus?: number;
  readonly requestId?: string;
  readonly retryAfterMs?: number;
  readonly providerMessage?: string;
  readonly networkCode?: string;

  constructor(message: string, init: ProviderErrorInit) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.endpoint = init.endpoint;
    if (init.httpStatus !== undefined) this.httpStatus = init.httpStatus;
    if (init.requestId !== undefined) this.requestId = init.requestId;
    if (init.retryAfterMs !== undefined) this.retryAfterMs = init.retryAfterMs;
    if (init.providerMessage !== undefined) this.providerMessage = init.providerMessage;
    if (init.networkCode !== undefined) this.networkCode = init.networkCode;
  }
}

/** A definitive "no": a 4xx other than 401/403/408/429, or a 2xx whose `status` is not a success value. */
export class ProviderRejectedError extends ProviderError {
  override readonly name = 'ProviderRejectedError';
  readonly kind = 'rejected' as const;
}

/** 401 or 403: the credential is missing, wrong or not allowed for this operation. */
export class ProviderAuthError extends ProviderError {
  override readonly name = 'ProviderAuthError';
  readonly kind = 'auth' as const;
}

/** 429: slow down; `retryAfterMs` carries the provider's Retry-After (capped) when it gave one. */
export class ProviderRateLimitedError extends ProviderError {
  override readonly name = 'ProviderRateLimitedError';
  readonly kind = 'rate_limited' as const;
}

/** Safe to retry: a read failed, or a request failed before anything was sent. */
export class ProviderTransientError extends ProviderError {
  override readonly name = 'ProviderTransientError';
  readonly kind = 'transient' as const;
}

/** A POST that may have reached the provider ended with no usable answer: reconcile, never blindly resend. */
export class ProviderAmbiguousError extends ProviderError {
  override readonly name = 'ProviderAmbiguousError';
  readonly kind = 'ambiguous' as const;
}

/** Our request failed the contract's schema before sending; nothing reached the provider. */
export class ProviderRequestInvalidError extends ProviderError {
  override readonly name = 'ProviderRequestInvalidError';
  readonly kind = 'invalid_request' as const;
}

export type AnyProviderError =
  | ProviderRejectedError
  | ProviderAuthError
  | ProviderRateLimitedError
  | ProviderTransientError
  | ProviderAmbiguousError
  | ProviderRequestInvalidError;

export function isProviderError(err: unknown): err is AnyProviderError {
  return err instanceof ProviderError;
}

export { classifyConfirmRejectionMessage };
export type { ConfirmRejectionKind };

/** What a rejected swap confirmation means (rule in src/contract/provider.ts, "Confirmation rejections"). */
export function classifyConfirmRejection(err: ProviderRejectedError): ConfirmRejectionKind {
  return classifyConfirmRejectionMessage(err.providerMessage ?? '');
}
