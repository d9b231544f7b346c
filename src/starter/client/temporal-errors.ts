/**
 * How the Temporal client's failures read to us: "our own deadline passed" and "that workflow id
 * is taken". Kept apart from the client so the classification is tested on its own.
 */
import { WorkflowExecutionAlreadyStartedError, WorkflowUpdateFailedError, WorkflowUpdateRPCTimeoutOrCancelledError } from '@temporalio/client';
import { GrpcStatus } from '../../temporal/grpc-status';

/**
 * Our own deadline passed. The SDK reports it as WorkflowUpdateRPCTimeoutOrCancelledError whose
 * cause is gRPC DEADLINE_EXCEEDED (4) or, when the deadline fires while the call is being set up,
 * CANCELLED (1) "Call cancelled". Nothing else here cancels these calls, so both mean "no answer
 * in time". A query past its deadline is a ServiceError whose cause has code 4.
 */
export function isDeadlineExceeded(err: unknown): boolean {
  let e: unknown = err;
  for (let i = 0; i < 4 && e; i++) {
    if (e instanceof WorkflowUpdateRPCTimeoutOrCancelledError) return true;
    const code = (e as { code?: unknown }).code;
    if (code === GrpcStatus.DEADLINE_EXCEEDED || code === GrpcStatus.CANCELLED) return true;
    if (/deadline exceeded/i.test((e as Error).message ?? '')) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * An update whose workflow closed before it answered (the server's AcceptedUpdateCompletedWorkflow:
 * terminated or timed out in Temporal meanwhile). Only for updates whose handlers never fail
 * (the start updates `initialized` and `created`): there, a failed update can mean nothing else.
 */
export function isClosedBeforeAnswer(err: unknown): boolean {
  return err instanceof WorkflowUpdateFailedError;
}

/** The error or one of its first `depth` causes is a `kind` (the SDK wraps errors in its own). */
export function hasCause(err: unknown, kind: abstract new (...args: never[]) => Error, depth = 4): boolean {
  let e: unknown = err;
  for (let i = 0; i < depth && e; i++) {
    if (e instanceof kind) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

export function isAlreadyStarted(err: unknown): boolean {
  return hasCause(err, WorkflowExecutionAlreadyStartedError);
}

/** The gRPC status codes of the causes along an error's `cause` chain (and their messages). */
function* causes(err: unknown): Generator<{ code: unknown; text: string }> {
  let e: unknown = err;
  for (let i = 0; i < 5 && e; i++) {
    const o = e as { code?: unknown; details?: unknown; message?: unknown };
    yield { code: o.code, text: `${typeof o.details === 'string' ? o.details : ''} ${typeof o.message === 'string' ? o.message : ''}` };
    e = (e as { cause?: unknown }).cause;
  }
}

/**
 * The server knows no worker polls the flow's task queue: gRPC FAILED_PRECONDITION (9) "no poller
 * seen for task queue recently", which a query answers once a worker has been gone a few minutes.
 */
export function isNoPoller(err: unknown): boolean {
  for (const c of causes(err)) if (c.code === GrpcStatus.FAILED_PRECONDITION && /no poller seen/i.test(c.text)) return true;
  return false;
}

/** grpc-js's refusal of a call on a connection this process closed (a plain Error, no code). */
export function isChannelClosed(err: unknown): boolean {
  return err instanceof Error && /channel has been shut down/i.test(err.message);
}

/**
 * The Temporal server cannot be reached: gRPC UNAVAILABLE (14) — refused or dropped connections,
 * "No connection established" — or a socket error of the connection itself.
 */
export function isTemporalUnavailable(err: unknown): boolean {
  for (const c of causes(err)) {
    if (c.code === GrpcStatus.UNAVAILABLE) return true;
    if (typeof c.code === 'string' && /^(ECONNREFUSED|ECONNRESET|EHOSTUNREACH|ENETUNREACH|ETIMEDOUT|EPIPE|ENOTFOUND)$/.test(c.code)) return true;
  }
  return false;
}

/**
 * The Temporal frontend refused the caller's token: gRPC UNAUTHENTICATED (16). Returns the
 * server's reason (the authorizer's message, which names no token), or undefined.
 */
export function credentialsRefusal(err: unknown): string | undefined {
  for (const c of causes(err)) if (c.code === GrpcStatus.UNAUTHENTICATED) return c.text.trim() || 'UNAUTHENTICATED';
  return undefined;
}

/**
 * The Temporal frontend answered, but its persistence failed: gRPC UNAVAILABLE (14) whose details
 * name the store ("GetCurrentExecution operation failed. Error: no usable database connection
 * found" is what a Temporal server on PostgreSQL answers once its own retries of a stopped
 * database run out, about 27 s into a call with a longer deadline).
 */
export function isPersistenceUnavailable(err: unknown): boolean {
  for (const c of causes(err)) if (c.code === GrpcStatus.UNAVAILABLE && /database|persistence|operation failed/i.test(c.text)) return true;
  return false;
}
