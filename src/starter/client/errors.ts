/** Errors of the typed client; the gateway maps each to one HTTP status (gateway/errors.ts), the CLI to one line. */

/** Bad input: names the field; nothing was started. -> 400 */
import type { FlowKind } from '../../workflows/flow-ids';
import type { LimitExceededDetails } from '../../workflows/record-failures';

export class InputError extends Error {
  override name = 'InputError';
  constructor(
    message: string,
    readonly field: string,
  ) {
    super(message);
  }
}

/** The reference was used before: the existing flow is returned, nothing new started. -> 409 */
export class DuplicateFlowError extends Error {
  override name = 'DuplicateFlowError';
  constructor(
    readonly kind: 'swap' | 'payment_link',
    readonly flowId: string,
    readonly existing: unknown,
  ) {
    super(`a ${kind.replace('_', ' ')} with this reference already exists: ${flowId}`);
  }
}

/** What a record's state forbids (one API key too many, a revoked key rotated): nothing changed. -> 409 */
export class RecordConflictError extends Error {
  override name = 'RecordConflictError';
}

/** -> 404 */
export class FlowNotFoundError extends Error {
  override name = 'FlowNotFoundError';
  constructor(
    readonly kind: string,
    readonly flowId: string,
  ) {
    super(`no ${kind.replace('_', ' ')} ${flowId}`);
  }
}

/**
 * The flow was started (or sent a PIN) but its answer (initialization, link creation, PIN outcome)
 * did not come back in time, typically because no worker is running. Nothing is lost: the flow goes
 * on when a worker polls; look it up by id. -> 504
 */
export class FlowPendingError extends Error {
  override name = 'FlowPendingError';
  constructor(
    readonly kind: 'swap' | 'payment_link',
    readonly flowId: string,
    waitedMs: number,
    what = 'was started',
  ) {
    super(`the ${kind.replace('_', ' ')} ${flowId} ${what} but did not answer within ${Math.round(waitedMs / 1000)} s (is a worker running?); look it up by its id`);
  }
}

/** The swap's validator refused the PIN (not awaiting a PIN, one already in flight). -> 409 */
export class PinNotAcceptedError extends Error {
  override name = 'PinNotAcceptedError';
}

/**
 * No worker answered a state lookup in time and the flow is still running. Nothing is lost: the
 * flow goes on when a worker polls. Carries the last state the flow published (search attribute).
 * -> 503 with Retry-After
 */
export class WorkerUnavailableError extends Error {
  override name = 'WorkerUnavailableError';
  constructor(
    readonly kind: string,
    readonly flowId: string,
    waitedMs: number,
    readonly lastKnownState: string | undefined,
  ) {
    super(
      `no worker answered for the ${kind.replace('_', ' ')} ${flowId} within ${Math.round(waitedMs / 1000)} s (is a worker running?); ` +
        `its last known state is ${lastKnownState ?? 'unknown'}; try again shortly`,
    );
  }
}

/** The flow's cancel validator refused: it is no longer cancellable. Carries its view. -> 409 */
export class NotCancellableError<V extends { state: string } = { state: string }> extends Error {
  override name = 'NotCancellableError';
  constructor(
    readonly kind: 'swap' | 'payment_link',
    readonly flowId: string,
    readonly view: V,
  ) {
    super(`the ${kind.replace('_', ' ')} ${flowId} is ${view.state}: it can no longer be cancelled`);
  }
}

/**
 * The flow exists but has closed, so it takes no PIN (or other message); carries its final state.
 * A FlowNotFoundError for callers that only ask "can I still talk to it?". -> 410 on the PIN route
 */
export class FlowClosedError extends FlowNotFoundError {
  override name = 'FlowClosedError';
  constructor(
    kind: string,
    flowId: string,
    readonly finalState: string | undefined,
    what = 'takes no PIN',
  ) {
    super(kind, flowId);
    this.message = `the ${kind.replace('_', ' ')} ${flowId} is closed (${finalState ?? 'final state unknown'}) and ${what}`;
  }
}

/**
 * The Temporal server cannot be reached (down, restarting, network). Nothing was lost; whether a
 * start or a PIN sent at that moment was accepted is unknown: retry (references make retries
 * safe) or look the flow up by its id. -> 503 temporal_unavailable with Retry-After
 */
export class TemporalUnavailableError extends Error {
  override name = 'TemporalUnavailableError';
  constructor(readonly flowId?: string) {
    super(`the Temporal server (its frontend) cannot be reached; try again shortly${flowId ? ` (then look up ${flowId})` : ''}`);
  }
}

/**
 * The Temporal frontend refused this process's token (gRPC UNAUTHENTICATED): it expired before a
 * renewal succeeded — the identity provider is down, typically — or the server no longer accepts
 * it. Nothing was started or sent: the frontend refuses before it does anything. Transient for the
 * caller (the process renews its token as soon as the IdP answers), so it reads as Temporal being
 * unavailable to this process; `reason` is the server's own (never a token), for the operator's log.
 * -> 503 temporal_unavailable with Retry-After
 */
export class TemporalCredentialsRefusedError extends TemporalUnavailableError {
  override name = 'TemporalCredentialsRefusedError';
  constructor(
    flowId: string | undefined,
    readonly reason: string,
  ) {
    super(flowId);
    this.message = `the Temporal server refused this process's credentials (its token expired or was not accepted; the identity provider may be down); try again shortly${flowId ? ` (then look up ${flowId})` : ''}`;
  }
}

/**
 * The Temporal frontend answers, but Temporal's persistence (its database) does not: no flow can
 * be read, started or sent anything until the database is back. Not a worker problem: workers may
 * be healthy. Nothing was lost; as for TemporalUnavailableError, retry (references make retries
 * safe) or look the flow up by its id. -> 503 temporal_persistence_unavailable with Retry-After
 */
export class TemporalPersistenceUnavailableError extends TemporalUnavailableError {
  override name = 'TemporalPersistenceUnavailableError';
  constructor(flowId?: string) {
    super(flowId);
    this.message =
      "Temporal's persistence (its database) is unavailable: the Temporal frontend answers but cannot read or write flows; " +
      `try again shortly${flowId ? ` (then look up ${flowId})` : ''}`;
  }
}

/** A resolution the flow refused (not in needs_reconciliation, or closed), with its current view. -> 409 not_resolvable */
export class NotResolvableError<V extends { state: string } = { state: string }> extends Error {
  override name = 'NotResolvableError';
  constructor(
    readonly kind: FlowKind,
    readonly flowId: string,
    readonly view: V,
    why: string,
  ) {
    super(`the ${kind.replace('_', ' ')} ${flowId} cannot be resolved: ${why}`);
  }
}

/**
 * The user's wrong-PIN budget is spent (pin-gate.ts): the PIN was not sent to the swap and no
 * attempt was spent. -> 429 rate_limited with Retry-After
 */
export class PinBudgetExhaustedError extends Error {
  override name = 'PinBudgetExhaustedError';
  constructor(
    readonly swapId: string,
    readonly retryAfterSeconds: number,
  ) {
    super(`too many wrong PINs for this user; try again in ${retryAfterSeconds} s`);
  }
}

/**
 * The user's wrong-PIN budget could not say yes within its bound (no worker answered for it, a
 * budget too busy to answer, the swap's user not known; Temporal itself down keeps its own
 * TemporalUnavailableError): the gate fails closed, so the PIN was not sent to the swap and no
 * attempt was spent. -> 503 pin_budget_unavailable with Retry-After
 */
export class PinBudgetUnavailableError extends Error {
  override name = 'PinBudgetUnavailableError';
  constructor(
    readonly swapId: string,
    readonly retryAfterSeconds: number,
    why: string,
    options?: { cause?: unknown },
  ) {
    super(`the wrong-PIN budget of this swap's user could not be checked (${why}): the PIN was not sent; try again in ${retryAfterSeconds} s`, options);
  }
}

/**
 * A daily limit (limits.ts) would be passed by this start: nothing was started and nothing was
 * counted. `limit` names it (`swap_amount_per_user_day`…), `field` the request field it bears on
 * (amount, user_ref; none for a deployment's count), `resetsAt` when its UTC day ends. -> 422 limit_exceeded
 */
export class LimitExceededError extends Error {
  override name = 'LimitExceededError';
  constructor(
    readonly limit: string,
    readonly flowId: string,
    readonly field: string | undefined,
    readonly resetsAt: string,
    why: string,
    /** What the ledger said: the limit, its day, its maximum, the day's use and what is left (absent when not from a ledger). */
    readonly refusal?: LimitExceededDetails,
  ) {
    super(`${field ?? limit}: ${why}; nothing was started (the day's count resets at ${resetsAt})`);
  }
}

/**
 * The daily limits could not be checked within their bound (no worker answered for a ledger, a
 * ledger too busy to answer, a ledger closed for the day this clock says it is; Temporal itself
 * down keeps its own TemporalUnavailableError): the start fails closed, so nothing was started.
 * -> 503 limit_unavailable with Retry-After
 */
export class LimitUnavailableError extends Error {
  override name = 'LimitUnavailableError';
  constructor(
    readonly flowId: string,
    readonly retryAfterSeconds: number,
    why: string,
  ) {
    // No `cause`: the start's caller would read a deadline in it as a flow started and pending.
    super(`the daily limits could not be checked (${why}): nothing was started; try again in ${retryAfterSeconds} s`);
  }
}
