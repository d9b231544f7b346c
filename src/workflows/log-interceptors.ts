/**
 * Workflow interceptors module (bundled with the workflows; deterministic): every workflow log line
 * carries the request id of the HTTP request that started the flow (the memo's `mpf_request_id`,
 * set by the client's interceptor), and the flow's activities get it in a header so their lines
 * carry it too. Headers and log attributes add no command, so replay is unaffected.
 */
import { defaultPayloadConverter } from '@temporalio/common';
import { type WorkflowInterceptors, type WorkflowOutboundCallsInterceptor, workflowInfo } from '@temporalio/workflow';
import { REQUEST_ID_ACTIVITY_HEADER, REQUEST_ID_MEMO_FIELD } from '../observability/names';

function flowRequestId(): string | undefined {
  const value = workflowInfo().memo?.[REQUEST_ID_MEMO_FIELD];
  return typeof value === 'string' ? value : undefined;
}

class RequestIdOutboundInterceptor implements WorkflowOutboundCallsInterceptor {
  getLogAttributes: NonNullable<WorkflowOutboundCallsInterceptor['getLogAttributes']> = (input, next) => {
    const requestId = flowRequestId();
    return next(requestId ? { ...input, reqId: requestId } : input);
  };

  scheduleActivity: NonNullable<WorkflowOutboundCallsInterceptor['scheduleActivity']> = (input, next) => {
    const requestId = flowRequestId();
    if (!requestId) return next(input);
    return next({ ...input, headers: { ...input.headers, [REQUEST_ID_ACTIVITY_HEADER]: defaultPayloadConverter.toPayload(requestId) } });
  };
}

export const interceptors = (): WorkflowInterceptors => ({ outbound: [new RequestIdOutboundInterceptor()] });
