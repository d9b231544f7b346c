/**
 * The Temporal client's interceptors: the request id of the HTTP request that starts a flow goes
 * into the flow's memo (`mpf_request_id`, encrypted with the rest of the memo), so the worker's
 * log lines about that flow carry it; and, when tracing is on, OpenTelemetry's client interceptor
 * puts the caller's trace context into the start/update/signal/query headers.
 */
import type { ClientInterceptors, WorkflowClientInterceptor } from '@temporalio/client';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry/lib/client';
import { FLOW_ID_PREFIX } from '../contract/flow-kinds';
import { currentRequest, REQUEST_ID_MEMO_FIELD } from './request-context';
import { activeTracing } from './tracing-state';

type StartOptions = { workflowId: string; memo?: Record<string, unknown> };

/**
 * Whether a started workflow is a flow (`swap-…`, `paylink-…`), the one a request's log line names.
 * A record a request also starts (a swap's PIN budget, reserved beside its start; an idempotency
 * record; a limits ledger) gets the request id in its memo but is not named: a swap refused 503
 * was logged as having started `pin-budget-…`.
 */
const isFlow = (workflowId: string): boolean => Object.values(FLOW_ID_PREFIX).some((p) => workflowId.startsWith(p));

/** The start options with the current request's id in the memo (and a flow noted on the request). */
export function tagged<T extends StartOptions>(workflowType: string, options: T): T {
  const request = currentRequest();
  if (!request) return options;
  if (isFlow(options.workflowId)) request.startedFlow = { workflowId: options.workflowId, workflowType };
  return { ...options, memo: { ...options.memo, [REQUEST_ID_MEMO_FIELD]: request.requestId } };
}

export class RequestIdClientInterceptor implements WorkflowClientInterceptor {
  start: NonNullable<WorkflowClientInterceptor['start']> = (input, next) =>
    next({ ...input, options: tagged(input.workflowType, input.options) });

  startWithDetails: NonNullable<WorkflowClientInterceptor['startWithDetails']> = (input, next) =>
    next({ ...input, options: tagged(input.workflowType, input.options) });

  startUpdateWithStart: NonNullable<WorkflowClientInterceptor['startUpdateWithStart']> = (input, next) =>
    next({ ...input, workflowStartOptions: tagged(input.workflowType, input.workflowStartOptions) });

  signalWithStart: NonNullable<WorkflowClientInterceptor['signalWithStart']> = (input, next) =>
    next({ ...input, options: tagged(input.workflowType, input.options) });
}

/** The client's interceptors: request ids always; OpenTelemetry when tracing is installed. */
export function mpfClientInterceptors(): ClientInterceptors {
  const workflow: WorkflowClientInterceptor[] = [new RequestIdClientInterceptor()];
  if (activeTracing()) workflow.push(new OpenTelemetryWorkflowClientInterceptor());
  return { workflow };
}
