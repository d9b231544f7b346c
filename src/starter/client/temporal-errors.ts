/**
 * How the Temporal client's failures read to us: "our own deadline passed" and "that workflow id
 * is taken". Kept apart from the client so the classification is tested on its own.
 */
import { WorkflowExecutionAlreadyStartedError, WorkflowUpdateRPCTimeoutOrCancelledError } from '@temporalio/client';

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
    if (code === 4 /* DEADLINE_EXCEEDED */ || code === 1 /* CANCELLED */) return true;
    if (/deadline exceeded/i.test((e as Error).message ?? '')) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

export function isAlreadyStarted(err: unknown): boolean {
  let e: unknown = err;
  for (let i = 0; i < 4 && e; i++) {
    if (e instanceof WorkflowExecutionAlreadyStartedError) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}
