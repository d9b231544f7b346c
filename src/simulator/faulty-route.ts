/**
 * Wraps a provider endpoint handler with the ledger and fault injection: records the request
 * (masked), applies the planned latency and fault, and sends the handler's answer otherwise.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { SimContext } from './context';
import { errorBody } from './context';
import type { FaultPlan } from './faults';
import type { EndpointKey, RequestEntry } from './ledger';

export interface Answer {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
  /** The transaction the request concerned, for the ledger (when the body did not name it). */
  ref?: string;
  payment_ref?: string;
}

export type EndpointHandler = (request: FastifyRequest) => Answer;

const RECORDED = Symbol('sim.recorded');
type Marked = FastifyRequest & { [RECORDED]?: RequestEntry };

export function recordRequest(ctx: SimContext, endpoint: EndpointKey, request: FastifyRequest): RequestEntry {
  const marked = request as Marked;
  if (!marked[RECORDED]) {
    const entry = ctx.ledger.recordRequest({
      endpoint,
      method: request.method,
      path: request.url,
      headers: request.headers,
      body: request.body,
    });
    // Attribute the request to its transaction before any fault decides its fate.
    const body = (request.body && typeof request.body === 'object' ? request.body : {}) as Record<string, unknown>;
    const ref = body.txn_ref ?? body.txn_merchant_ref;
    const swap = ctx.state.swapOfToken(body.auth_token);
    if (typeof ref === 'string') entry.ref = ref;
    else if (swap) {
      entry.ref = swap.txn_ref;
      entry.payment_ref = swap.payment_ref;
    }
    marked[RECORDED] = entry;
  }
  return marked[RECORDED];
}

const STATUS_TEXT: Record<number, string> = {
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};
const statusText = (s: number): string => STATUS_TEXT[s] ?? 'Server Error';
const htmlPage = (s: number): string =>
  `<!DOCTYPE html>\n<html><head><title>${s} ${statusText(s)}</title></head>` +
  `<body><center><h1>${s} ${statusText(s)}</h1></center><hr><center>nginx</center></body></html>\n`;
const GARBAGE = '{"status":"succ\u0000\u0001 <html>upstream connect error or disconnect/reset before headers';

function destroy(request: FastifyRequest, reply: FastifyReply, entry: RequestEntry, status: 'reset' | 'hang'): FastifyReply {
  entry.status = status;
  reply.hijack();
  request.raw.socket?.destroy();
  return reply;
}

function send(reply: FastifyReply, entry: RequestEntry, a: Answer): FastifyReply {
  entry.status = a.status;
  attribute(entry, a);
  reply.code(a.status);
  for (const [k, v] of Object.entries(a.headers ?? {})) reply.header(k, v);
  return reply.send(a.body);
}

function attribute(entry: RequestEntry, a: Answer): void {
  if (a.ref !== undefined) entry.ref = a.ref;
  if (a.payment_ref !== undefined) entry.payment_ref = a.payment_ref;
}

export function faultyRoute(ctx: SimContext, endpoint: EndpointKey, handler: EndpointHandler) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    const entry = recordRequest(ctx, endpoint, request);
    const plan: FaultPlan = ctx.faults.plan(endpoint, entry.ref);
    const fault = plan.fault;
    if (fault) entry.fault = fault.kind;
    else if (plan.delayMs > 0) entry.fault = 'latency';
    if (plan.delayMs > 0) {
      entry.latency_ms = plan.delayMs;
      if (!(await ctx.life.sleep(plan.delayMs))) return destroy(request, reply, entry, 'reset');
    }
    if (!fault) return send(reply, entry, handler(request));

    switch (fault.kind) {
      case 'reset':
        return destroy(request, reply, entry, 'reset');
      case 'apply_then_fail':
        attribute(entry, handler(request));
        return destroy(request, reply, entry, 'reset');
      case 'hang': {
        entry.status = 'hang';
        reply.hijack();
        const socket = request.raw.socket;
        const gaveUp = new AbortController();
        socket?.once('close', () => gaveUp.abort());
        await ctx.life.sleep(fault.maxMs, gaveUp.signal);
        socket?.destroy();
        return reply;
      }
      default:
        break;
    }
    if (fault.commit) attribute(entry, handler(request));
    switch (fault.kind) {
      case 'status5xx':
        return send(reply, entry, {
          status: fault.status,
          headers: { 'content-type': fault.body === 'html' ? 'text/html; charset=utf-8' : 'application/json; charset=utf-8' },
          body: fault.body === 'html' ? htmlPage(fault.status) : JSON.stringify(errorBody(statusText(fault.status))),
        });
      case 'rate_limit':
        return send(reply, entry, {
          status: 429,
          headers: { 'retry-after': String(fault.retryAfterSeconds), 'content-type': 'application/json; charset=utf-8' },
          body: JSON.stringify(errorBody('Too many requests')),
        });
      case 'garbage':
        return send(reply, entry, {
          status: 200,
          headers: { 'content-type': 'application/json; charset=utf-8' },
          body: fault.body ?? GARBAGE,
        });
      case 'html_error':
        return send(reply, entry, { status: fault.status, headers: { 'content-type': 'text/html; charset=utf-8' }, body: htmlPage(fault.status) });
    }
  };
}
