/**
 * The request id of whatever this process is doing for one HTTP request (AsyncLocalStorage), so
 * code far from the request (the Temporal client interceptor) can tag the flow it starts.
 *
 * A caller's `x-request-id` is kept when it is 1–128 characters of letters, digits and `._:-`
 * (anything else is replaced, never echoed); otherwise a random UUID is generated.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';

export const REQUEST_ID_HEADER = 'x-request-id';
export const REQUEST_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

export { REQUEST_ID_MEMO_FIELD } from './names';

export interface RequestContext {
  requestId: string;
  /** Set by the Temporal client interceptor when this request started a flow. */
  startedFlow?: { workflowId: string; workflowType: string };
}

const storage = new AsyncLocalStorage<RequestContext>();

/** The caller's request id when it is acceptable, else a new random one. */
export function acceptRequestId(header: string | string[] | undefined): string {
  const value = Array.isArray(header) ? header[0] : header;
  return typeof value === 'string' && REQUEST_ID_PATTERN.test(value) ? value : randomUUID();
}

export function currentRequest(): RequestContext | undefined {
  return storage.getStore();
}

export function runWithRequest<T>(ctx: RequestContext, fn: () => T): T {
  return storage.run(ctx, fn);
}
