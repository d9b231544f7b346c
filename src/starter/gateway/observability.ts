/**
 * The gateway's request ids and tracing.
 *
 * Request ids: a caller's `x-request-id` is kept when valid (1–128 of `A–Z a–z 0–9 . _ : -`),
 * otherwise a random UUID is generated (never a per-process counter); it is the pino `reqId`
 * of every line about the request, echoed as `x-request-id` on every response, and, through the
 * Temporal client's interceptor, stored in the memo of a flow the request starts, so the worker's
 * lines about that flow carry it. The line that closes a request that started a flow names it
 * (`workflowId`), and a `flow started` line says so.
 *
 * Tracing (only when installed, see src/observability/tracing.ts): @fastify/otel makes a SERVER
 * span per request named `METHOD /route`, continuing a caller's W3C `traceparent`; its `url.path`
 * attribute is the sanitised URL (no notification or codec tokens, no query), exceptions are not
 * recorded, and health checks are not traced. Log lines then carry `trace_id`/`span_id` (the names
 * the Temporal interceptors give them in the worker's lines).
 */
import FastifyOtelInstrumentation from '@fastify/otel';
import { context, trace } from '@opentelemetry/api';
import type { FastifyInstance, FastifyPluginCallback, FastifyServerOptions } from 'fastify';
import type { IncomingMessage } from 'node:http';
import { acceptRequestId, currentRequest, REQUEST_ID_HEADER, runWithRequest } from '../../observability/request-context';
import { activeTracing } from '../../observability/tracing-state';
import { sanitizeUrl } from './logging';

/** Fastify constructor options: request ids from a valid `x-request-id` or a random UUID. */
export const requestIdServerOptions: Pick<FastifyServerOptions, 'genReqId' | 'requestIdHeader'> = {
  requestIdHeader: false,
  genReqId: (req: IncomingMessage) => acceptRequestId(req.headers[REQUEST_ID_HEADER]),
};

/** The statuses of a start whose flow exists afterwards (created; failed at the provider; pending). */
const FLOW_EXISTS = new Set([200, 201, 502, 504]);

/** Echoes the request id, runs each request in its request context, names the flow it started. */
export function installRequestIds(app: FastifyInstance): void {
  app.addHook('onRequest', (req, reply, done) => {
    void reply.header(REQUEST_ID_HEADER, req.id);
    runWithRequest({ requestId: req.id }, done);
  });
  app.addHook('onSend', async (req, reply) => {
    const started = currentRequest()?.startedFlow;
    if (!started || !req.routeOptions.url) return;
    const fields = { workflowId: started.workflowId, workflowType: started.workflowType };
    reply.log = reply.log.child(fields);
    if (FLOW_EXISTS.has(reply.statusCode)) req.log.info(fields, `flow started: ${started.workflowId}`);
    else if (reply.statusCode === 409) req.log.info(fields, `flow start refused, already exists: ${started.workflowId}`);
  });
}

/** pino's mixin adding the active span's ids to each line (only installed while tracing). */
export function traceIdsMixin(): Record<string, string> {
  const span = trace.getSpan(context.active());
  const ctx = span?.spanContext();
  return ctx && trace.isSpanContextValid(ctx) ? { trace_id: ctx.traceId, span_id: ctx.spanId } : {};
}

/** The pino logger options with trace ids added when tracing is installed. */
export function withTraceIds(logger: false | Record<string, unknown>): false | Record<string, unknown> {
  if (!logger || !activeTracing()) return logger;
  return { ...logger, mixin: traceIdsMixin };
}

const UNTRACED = new Set(['/healthz', '/readyz', '/metrics']);

/** @fastify/otel's plugin when tracing is installed; undefined otherwise (no cost). */
export function gatewayTracingPlugin(): FastifyPluginCallback | undefined {
  if (!activeTracing()) return undefined;
  const instrumentation = new FastifyOtelInstrumentation({
    recordExceptions: false,
    instrumentHooks: false,
    ignorePaths: (route: { url: string }) => UNTRACED.has(route.url),
    requestHook: (span, request) => {
      span.setAttribute('url.path', sanitizeUrl(request.url));
      span.updateName(`${request.method} ${request.routeOptions.url ?? 'unmatched'}`);
      span.setAttribute('mpf.request_id', request.id);
    },
  });
  return instrumentation.plugin() as FastifyPluginCallback;
}
