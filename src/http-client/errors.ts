/**
 * The errors of the gateway client: one class per error code the gateway answers, all under
 * MpfApiError (an HTTP answer) and MpfError (anything this package throws). Catch a class, or read
 * `code`:
 *
 *   try { await mpf.startSwap(body); }
 *   catch (err) {
 *     if (err instanceof MpfDuplicateError) return err.swap;          // 409: this txn_ref was used
 *     if (err instanceof MpfInvalidRequestError) refuse(err.field);   // 400: nothing was started
 *     throw err;                                                      // err.requestId for the gateway's logs
 *   }
 *
 * A code this version does not know (a newer gateway) is a plain MpfApiError with that code.
 */
import type { components } from './gateway-api';

type SwapView = components['schemas']['SwapView'];
type LinkView = components['schemas']['LinkView'];

/** Every error answer's body: `{ error: <code>, message, field? }`, and what some codes add. */
export interface GatewayErrorBody {
  error: string;
  message: string;
  field?: string;
  [extra: string]: unknown;
}

/** Anything this package throws. */
export class MpfError extends Error {
  /** Machine-readable: the gateway's error code, or connection_error, timeout, signature_verification_failed. */
  readonly code: string;
  /** The HTTP status of the answer; undefined when no answer came. */
  readonly status: number | undefined;
  /** The gateway's x-request-id of the answer: quote it to whoever reads the gateway's logs. */
  readonly requestId: string | undefined;
  /**
   * The Idempotency-Key the call sent (a POST): call again with it (`{ idempotencyKey }`) to
   * retry the same logical operation later, e.g. after the client's deadline ran out.
   */
  readonly idempotencyKey: string | undefined;

  constructor(message: string, init: { code: string; status?: number; requestId?: string; idempotencyKey?: string; cause?: unknown }) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = new.target.name;
    this.code = init.code;
    this.status = init.status;
    this.requestId = init.requestId;
    this.idempotencyKey = init.idempotencyKey;
  }
}

/** An error answer of the gateway. Its subclasses name the codes this version knows. */
export class MpfApiError extends MpfError {
  declare readonly status: number;
  /** The answer's body as the gateway sent it. */
  readonly body: GatewayErrorBody;
  /** The answer's headers (lower-case names). */
  readonly headers: Readonly<Record<string, string>>;
  /** The request field at fault (400 invalid_request, 422 idempotency_key_mismatch, 422 limit_exceeded). */
  readonly field: string | undefined;
  /** The flow concerned, when the gateway names it (pending, worker_unavailable, …). */
  readonly flowId: string | undefined;
  /** Seconds the gateway asked to wait before trying again (Retry-After), when it did. */
  readonly retryAfterSeconds: number | undefined;

  constructor(status: number, body: GatewayErrorBody, headers: Record<string, string>, idempotencyKey?: string) {
    super(body.message, { code: body.error, status, requestId: headers['x-request-id'], ...(idempotencyKey ? { idempotencyKey } : {}) });
    this.body = body;
    this.headers = headers;
    this.field = typeof body.field === 'string' ? body.field : undefined;
    this.flowId = typeof body.flow_id === 'string' ? body.flow_id : undefined;
    this.retryAfterSeconds = retryAfterSecondsOf(headers['retry-after']);
  }

  /**
   * The error of an answer that was not a success: the class of its code (MpfApiError for a code
   * this version does not know; `http_<status>` when the body is not the gateway's error shape).
   */
  static from(response: Response, body: unknown, idempotencyKey?: string): MpfApiError {
    const headers: Record<string, string> = {};
    response.headers.forEach((value, name) => (headers[name] = value));
    const parsed = typeof body === 'string' ? parseJson(body) : body;
    const shaped: GatewayErrorBody =
      parsed && typeof parsed === 'object' && typeof (parsed as GatewayErrorBody).error === 'string'
        ? { ...(parsed as GatewayErrorBody), message: String((parsed as GatewayErrorBody).message ?? (parsed as GatewayErrorBody).error) }
        : { error: `http_${response.status}`, message: `HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ''}` };
    const Class = (ERROR_CLASSES as Record<string, typeof MpfApiError | undefined>)[shaped.error] ?? MpfApiError;
    return new Class(response.status, shaped, headers, idempotencyKey);
  }
}

/** The flow's view some answers carry (a duplicate's existing flow, a provider's refusal, …). */
class MpfFlowViewError extends MpfApiError {
  /** The swap concerned, when the answer carries its view. */
  get swap(): SwapView | undefined {
    return this.body.swap as SwapView | undefined;
  }
  /** The payment link concerned, when the answer carries its view. */
  get link(): LinkView | undefined {
    return this.body.link as LinkView | undefined;
  }
}

/** 400: the request is invalid (`field` names what); nothing was started. */
export class MpfInvalidRequestError extends MpfApiError {}
/** 401: no API key (or pin_token), or one that is not valid. */
export class MpfUnauthorizedError extends MpfApiError {}
/** 401: the API key has expired; use its successor. */
export class MpfKeyExpiredError extends MpfApiError {}
/** 403: the key's role lacks this route's access (the message names the role needed). */
export class MpfForbiddenError extends MpfApiError {}
/** 404: no such flow (or route). */
export class MpfNotFoundError extends MpfApiError {}
/** 409: the txn_ref / txn_merchant_ref was used already; `swap` / `link` is the existing flow. */
export class MpfDuplicateError extends MpfFlowViewError {}
/** 409: the swap is not awaiting a PIN right now (e.g. another PIN is being confirmed). */
export class MpfPinNotAcceptedError extends MpfApiError {}
/** 409: the first request with this Idempotency-Key still runs (the client retries it while Retry-After is given). */
export class MpfIdempotencyKeyInUseError extends MpfApiError {}
/** 422: the Idempotency-Key was first used for another route or body; `fields` names what differs. */
export class MpfIdempotencyKeyMismatchError extends MpfApiError {
  get fields(): string[] {
    return Array.isArray(this.body.fields) ? (this.body.fields as string[]) : [];
  }
}
/**
 * 422: the start would pass a daily limit; nothing was started. `limit` names it
 * (`swap_amount_per_user_day`…), `field` the request field it bears on, `resetsAt` when its UTC day ends.
 */
export class MpfLimitExceededError extends MpfApiError {
  get limit(): string | undefined {
    return typeof this.body.limit === 'string' ? this.body.limit : undefined;
  }
  get resetsAt(): string | undefined {
    return typeof this.body.resets_at === 'string' ? this.body.resets_at : undefined;
  }
}
/** 409: the flow can no longer be cancelled; `swap` / `link` is its view. */
export class MpfNotCancellableError extends MpfFlowViewError {}
/** 409: only a flow in needs_reconciliation can be resolved; `swap` / `link` is its view. */
export class MpfNotResolvableError extends MpfFlowViewError {}
/** 409: a notification for a flow that closed without being paid. */
export class MpfFlowClosedError extends MpfApiError {}
/** 410: the swap is closed (no PIN is taken any more). */
export class MpfGoneError extends MpfApiError {}
/** 413: the request body is too large. */
export class MpfPayloadTooLargeError extends MpfApiError {}
/** 414: a path segment is too long. */
export class MpfUriTooLongError extends MpfApiError {}
/** 415: the body was not sent as application/json. */
export class MpfUnsupportedMediaTypeError extends MpfApiError {}
/** 429: too many requests, or the user's wrong-PIN budget is spent; wait `retryAfterSeconds`. */
export class MpfRateLimitedError extends MpfApiError {}
/** 4xx: another refusal of the HTTP server (the gateway does not echo it). */
export class MpfClientError extends MpfApiError {}
/** 500: the gateway failed (it logged the details under `requestId`). */
export class MpfInternalError extends MpfApiError {}
/** 502: the provider refused or did not answer; `swap` / `link` is the flow's view (failed or needs_reconciliation). */
export class MpfProviderFailedError extends MpfFlowViewError {}
/** 503: no worker answered in time; `flowId` and `lastKnownState` say where the flow stands. */
export class MpfWorkerUnavailableError extends MpfApiError {
  get lastKnownState(): string | undefined {
    return typeof this.body.last_known_state === 'string' ? this.body.last_known_state : undefined;
  }
}
/** 503: the gateway cannot reach Temporal. */
export class MpfTemporalUnavailableError extends MpfApiError {}
/** 503: Temporal answers but its database does not. */
export class MpfTemporalPersistenceUnavailableError extends MpfApiError {}
/** 503: the user's wrong-PIN budget could not be checked, so the PIN was not sent. */
export class MpfPinBudgetUnavailableError extends MpfApiError {}
/** 503: the daily limits could not be checked, so nothing was started (the client retries it after Retry-After). */
export class MpfLimitUnavailableError extends MpfApiError {}
/** 409 not_deliverable: the event's flow had no endpoint when it happened, or it was redelivered 10 times already. */
export class MpfNotDeliverableError extends MpfApiError {}
/** 503 provider_unavailable: money-moving calls are paused or the provider's breaker is open; nothing was started (Retry-After). */
export class MpfProviderUnavailableError extends MpfApiError {}
/** 503 identity_provider_unavailable: a person's token could not be checked (the IdP's keys cannot be fetched); API keys keep working (Retry-After). */
export class MpfIdentityProviderUnavailableError extends MpfApiError {}
/** 503 payload_key_missing: a flow's data is sealed under a payload key the gateway does not hold; an operator must restore it (Retry-After). */
export class MpfPayloadKeyMissingError extends MpfApiError {}
/** 409 conflict: what the record's state forbids (one API key too many, a revoked or already rotated key rotated); nothing changed. */
export class MpfConflictError extends MpfApiError {}
/** 503 api_keys_unavailable: a key made through /v1/api_keys could not be checked (the gateway's reading of them is out of date); keyring keys keep working (Retry-After). */
export class MpfApiKeysUnavailableError extends MpfApiError {}
/** 504: started (or the PIN was sent) but no answer yet: look the flow up by `flowId`. */
export class MpfPendingError extends MpfApiError {}

/** Each error code the gateway answers, and its class. */
export const ERROR_CLASSES = {
  invalid_request: MpfInvalidRequestError,
  unauthorized: MpfUnauthorizedError,
  key_expired: MpfKeyExpiredError,
  forbidden: MpfForbiddenError,
  not_found: MpfNotFoundError,
  duplicate: MpfDuplicateError,
  pin_not_accepted: MpfPinNotAcceptedError,
  idempotency_key_in_use: MpfIdempotencyKeyInUseError,
  idempotency_key_mismatch: MpfIdempotencyKeyMismatchError,
  limit_exceeded: MpfLimitExceededError,
  not_cancellable: MpfNotCancellableError,
  not_resolvable: MpfNotResolvableError,
  flow_closed: MpfFlowClosedError,
  gone: MpfGoneError,
  payload_too_large: MpfPayloadTooLargeError,
  uri_too_long: MpfUriTooLongError,
  unsupported_media_type: MpfUnsupportedMediaTypeError,
  rate_limited: MpfRateLimitedError,
  client_error: MpfClientError,
  internal: MpfInternalError,
  provider_failed: MpfProviderFailedError,
  worker_unavailable: MpfWorkerUnavailableError,
  temporal_unavailable: MpfTemporalUnavailableError,
  temporal_persistence_unavailable: MpfTemporalPersistenceUnavailableError,
  pin_budget_unavailable: MpfPinBudgetUnavailableError,
  limit_unavailable: MpfLimitUnavailableError,
  provider_unavailable: MpfProviderUnavailableError,
  identity_provider_unavailable: MpfIdentityProviderUnavailableError,
  not_deliverable: MpfNotDeliverableError,
  payload_key_missing: MpfPayloadKeyMissingError,
  pending: MpfPendingError,
  conflict: MpfConflictError,
  api_keys_unavailable: MpfApiKeysUnavailableError,
} as const satisfies Record<string, typeof MpfApiError>;

export type GatewayErrorCode = keyof typeof ERROR_CLASSES;

/** No answer came: the connection was refused, reset or dropped (after the client's retries). */
export class MpfConnectionError extends MpfError {}
/** No answer came within the attempt's timeout or the call's deadline (after the client's retries). */
export class MpfTimeoutError extends MpfConnectionError {}

/** Why verifyEvent refused a delivery. */
export type SignatureFailure =
  | 'missing_header'
  | 'invalid_timestamp'
  | 'timestamp_out_of_tolerance'
  | 'invalid_secret'
  | 'no_matching_signature'
  | 'invalid_body';

/** verifyEvent refused a delivery: do not act on it (answer 400 or 401; a genuine event is sent again). */
export class MpfSignatureVerificationError extends MpfError {
  readonly reason: SignatureFailure;
  constructor(reason: SignatureFailure, message: string) {
    super(message, { code: 'signature_verification_failed' });
    this.reason = reason;
  }
}

/** Retry-After as seconds: a number of seconds or an HTTP date; undefined when absent or unreadable. */
export function retryAfterSecondsOf(value: string | null | undefined, now = Date.now()): number | undefined {
  if (value === null || value === undefined || value.trim() === '') return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
