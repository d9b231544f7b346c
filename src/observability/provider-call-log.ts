/**
 * One log line per provider call, from inside the activity that made it (so the line carries the
 * flow's workflowId, request id and trace id through the activity logger): endpoint, method,
 * status, latency (from the moment it was sent), how long it waited for a connection first
 * (`queuedMs`, when it did) and, on failure, the error kind. Never a body, a header or a token.
 */
import { Context, log } from '@temporalio/activity';
import type { ProviderCall } from '../provider/client';

export function logProviderCall(call: ProviderCall): void {
  const fields = {
    endpoint: call.endpoint,
    method: call.method,
    status: call.status,
    latencyMs: call.latencyMs,
    ...(call.queuedMs ? { queuedMs: call.queuedMs } : {}),
    ...(call.errorKind ? { errorKind: call.errorKind } : {}),
    ...(call.providerRequestId ? { providerRequestId: call.providerRequestId } : {}),
  };
  try {
    Context.current();
  } catch {
    return; // not in an activity (a test's direct call): nothing to attribute it to
  }
  if (call.errorKind && call.errorKind !== 'rejected') log.warn('provider call failed', fields);
  else log.info('provider call', fields);
}
