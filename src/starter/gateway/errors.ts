/**
 * The gateway's one error handler and its error bodies. Every error answer is
 * `{ error: <code>, message, field? }`:
 *   InputError / request validation   -> 400 invalid_request (message "<field>: <rule>", field)
 *   unreadable body (JSON, media type) -> 400 invalid_request / 415 unsupported_media_type
 *   DuplicateFlowError                 -> 409 duplicate, with the existing flow's view
 *   FlowNotFoundError                  -> 404 not_found
 *   RecordConflictError                -> 409 conflict (one API key too many, a revoked key rotated)
 *   PinNotAcceptedError                -> 409 pin_not_accepted
 *   FlowPendingError                   -> 504 pending, with flow_id and Retry-After
 *   WorkerUnavailableError             -> 503 worker_unavailable, with flow_id, last_known_state, Retry-After
 *   PinBudgetExhaustedError            -> 429 rate_limited, with Retry-After (the PIN was not sent)
 *   PinBudgetUnavailableError          -> 503 pin_budget_unavailable, with Retry-After (the PIN was not sent)
 *   LimitExceededError                 -> 422 limit_exceeded, with limit, field and resets_at (nothing started)
 *   LimitUnavailableError              -> 503 limit_unavailable, with Retry-After (nothing started)
 *   ProviderUnavailableError           -> 503 provider_unavailable, with Retry-After (paused or breaker open; nothing started)
 *   TemporalUnavailableError           -> 503 temporal_unavailable, with Retry-After
 *   TemporalCredentialsRefusedError    -> 503 temporal_unavailable, with Retry-After (logged as an error: the gateway's token was refused)
 *   TemporalPersistenceUnavailableError -> 503 temporal_persistence_unavailable, with Retry-After
 *   router errors (bad %-encoding, a path segment over maxParamLength)
 *                                      -> 400 invalid_request / 414 uri_too_long, never echoing the path
 *   rate limit                         -> 429 rate_limited
 *   any other Temporal call past its deadline (an update, a query: isDeadlineExceeded)
 *                                      -> 503 worker_unavailable, with Retry-After, naming the call and the route
 *   PayloadDecryptionError (a flow's data sealed under a key this process does not hold)
 *                                      -> 503 payload_key_missing, with Retry-After (logged as an error: an operator must restore the key)
 *   anything else                      -> 500 internal (generic message; logged without secrets)
 */
import { WorkflowUpdateRPCTimeoutOrCancelledError } from '@temporalio/client';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { LIMIT_NAMES } from '../../config/limits-env';
import {
  DuplicateFlowError,
  FlowNotFoundError,
  FlowPendingError,
  InputError,
  LimitExceededError,
  LimitUnavailableError,
  PinBudgetExhaustedError,
  PinBudgetUnavailableError,
  PinNotAcceptedError,
  RecordConflictError,
  TemporalCredentialsRefusedError,
  TemporalPersistenceUnavailableError,
  TemporalUnavailableError,
  WorkerUnavailableError,
} from '../client/errors';
import { ProviderUnavailableError } from '../client/provider-guard';
import { hasCause, isDeadlineExceeded } from '../client/temporal-errors';
import { PayloadDecryptionError } from '../../codec/aes-gcm-codec';

/** Seconds a caller waits before trying again after Temporal or a worker did not answer in time. */
const RETRY_AFTER_SECONDS = 5;

export interface ErrorBody {
  error: string;
  message: string;
  field?: string;
  [extra: string]: unknown;
}

/** 422 to a start past a daily limit: nothing was started. */
export const LimitExceededBody = z
  .object({
    error: z.literal('limit_exceeded'),
    message: z.string().describe("'<field>: <why>', naming the limit"),
    field: z.string().optional().describe('the request field the limit bears on (amount, user_ref; none for a count of the whole deployment)'),
    limit: z.enum(LIMIT_NAMES).describe('the daily limit the start would pass (its variable is LIMIT_ and the name in capitals)'),
    resets_at: z.string().describe('when its UTC day ends and it counts afresh (ISO 8601)'),
  })
  .meta({ id: 'LimitExceeded' });

/** 503 to a start whose daily limits could not be checked (fails closed): nothing was started; retry after Retry-After. */
export const LimitUnavailableBody = z
  .object({
    error: z.literal('limit_unavailable'),
    message: z.string(),
    flow_id: z.string().optional().describe('the flow that was not started'),
  })
  .meta({ id: 'LimitUnavailable' });

/** 503 to a start the provider guard holds (paused by an operator, or its breaker open): nothing was started. */
export const ProviderUnavailableBody = z
  .object({ error: z.literal('provider_unavailable'), message: z.string().describe('why: who paused and when, or which breaker is open and when it probes') })
  .meta({ id: 'ProviderUnavailable' });

export function sendError(reply: FastifyReply, status: number, error: string, message: string, extra: Record<string, unknown> = {}): FastifyReply {
  return reply.code(status).type('application/json; charset=utf-8').send({ error, message, ...extra });
}

interface ValidationIssue {
  instancePath?: string;
  message?: string;
}

/** "field: rule" for each issue; the field of the first one. */
function describeValidation(issues: readonly ValidationIssue[], context: string | undefined): { message: string; field: string } {
  const parts = issues.map((i) => {
    const path = (i.instancePath ?? '').replace(/^\//, '').split('/').filter(Boolean).join('.');
    const field = path || (context ?? 'body');
    const rule = /received undefined$/.test(i.message ?? '') ? 'is required' : (i.message ?? 'is invalid');
    return { field, text: `${field}: ${rule}` };
  });
  return { message: parts.map((p) => p.text).join('; ') || `${context ?? 'body'}: is invalid`, field: parts[0]?.field ?? context ?? 'body' };
}

/** A safe, short description of an error for logs: name, code and message, never request data. */
function loggableError(err: unknown): Record<string, unknown> {
  if (!(err instanceof Error)) return { type: typeof err };
  const e = err as Error & { code?: unknown };
  return { type: e.name, code: e.code, message: e.message, stack: e.stack };
}

export function installErrorHandlers(app: FastifyInstance): void {
  app.setNotFoundHandler((_req, reply) => sendError(reply, 404, 'not_found', 'no such route'));

  app.setErrorHandler((err: FastifyError, req: FastifyRequest, reply: FastifyReply) => {
    if (hasZodFastifySchemaValidationErrors(err)) {
      const { message, field } = describeValidation(err.validation, err.validationContext);
      return sendError(reply, 400, 'invalid_request', message, { field });
    }
    if (err instanceof InputError) {
      return sendError(reply, 400, 'invalid_request', err.message, { field: err.field || 'body' });
    }
    if (err instanceof DuplicateFlowError) {
      const key = err.kind === 'swap' ? 'swap' : 'link';
      return sendError(reply, 409, 'duplicate', err.message, err.existing === undefined ? {} : { [key]: err.existing });
    }
    if (err instanceof FlowNotFoundError) return sendError(reply, 404, 'not_found', err.message);
    if (err instanceof RecordConflictError) return sendError(reply, 409, 'conflict', err.message);
    if (err instanceof PinNotAcceptedError) return sendError(reply, 409, 'pin_not_accepted', err.message);
    if (err instanceof FlowPendingError) {
      reply.header('retry-after', String(RETRY_AFTER_SECONDS));
      return sendError(reply, 504, 'pending', err.message, { flow_id: err.flowId });
    }
    if (err instanceof PinBudgetExhaustedError) {
      reply.header('retry-after', String(err.retryAfterSeconds));
      return sendError(reply, 429, 'rate_limited', err.message);
    }
    if (err instanceof PinBudgetUnavailableError) {
      req.log.warn({ swap_id: err.swapId, cause: (err.cause as Error | undefined)?.name }, 'PIN refused: its wrong-PIN budget could not be checked');
      reply.header('retry-after', String(err.retryAfterSeconds));
      return sendError(reply, 503, 'pin_budget_unavailable', err.message, { flow_id: err.swapId });
    }
    if (err instanceof LimitExceededError) {
      return sendError(reply, 422, 'limit_exceeded', err.message, { limit: err.limit, ...(err.field ? { field: err.field } : {}), resets_at: err.resetsAt });
    }
    if (err instanceof LimitUnavailableError) {
      req.log.warn({ flow_id: err.flowId }, 'start refused: its daily limits could not be checked');
      reply.header('retry-after', String(err.retryAfterSeconds));
      return sendError(reply, 503, 'limit_unavailable', err.message, { flow_id: err.flowId });
    }
    if (err instanceof ProviderUnavailableError) {
      reply.header('retry-after', String(err.retryAfterSeconds));
      return sendError(reply, 503, 'provider_unavailable', err.message);
    }
    if (err instanceof WorkerUnavailableError) {
      reply.header('retry-after', String(RETRY_AFTER_SECONDS));
      return sendError(reply, 503, 'worker_unavailable', err.message, { flow_id: err.flowId, last_known_state: err.lastKnownState });
    }
    if ((err as unknown) instanceof TemporalUnavailableError) {
      const { flowId } = err as unknown as TemporalUnavailableError;
      const persistence = (err as unknown) instanceof TemporalPersistenceUnavailableError;
      if ((err as unknown) instanceof TemporalCredentialsRefusedError) {
        req.log.error({ flow_id: flowId, temporal_said: (err as unknown as TemporalCredentialsRefusedError).reason }, "Temporal refused this gateway's token (UNAUTHENTICATED): is the identity provider reachable (TEMPORAL_OIDC_ISSUER)?");
      } else req.log.warn({ flow_id: flowId }, persistence ? "Temporal's persistence unavailable" : 'Temporal server unavailable');
      reply.header('retry-after', String(RETRY_AFTER_SECONDS));
      return sendError(reply, 503, persistence ? 'temporal_persistence_unavailable' : 'temporal_unavailable', err.message, flowId ? { flow_id: flowId } : {});
    }
    if (isDeadlineExceeded(err)) {
      // A call no route classified (the client's errors name the flow or record when they can):
      // still a Temporal call that did not answer in time, as every other, never a 500.
      const what = (err as unknown) instanceof WorkflowUpdateRPCTimeoutOrCancelledError ? 'an update sent to Temporal' : 'a call to Temporal';
      const route = `${req.method} ${req.routeOptions.url ?? req.url.split('?')[0]}`;
      req.log.warn({ err: { type: err.name, message: err.message } }, `${what} did not answer within its deadline`);
      reply.header('retry-after', String(RETRY_AFTER_SECONDS));
      return sendError(reply, 503, 'worker_unavailable', `${what} for ${route} did not answer within its deadline (is a worker running?); try again shortly`);
    }
    if (hasCause(err, PayloadDecryptionError, 8)) {
      // Not the caller's fault and not a bug: a payload key left PAYLOAD_ENCRYPTION_KEYS while a
      // flow (or its memo) still needs it. Said as unavailable until an operator restores the key.
      req.log.error({ err: { type: 'PayloadDecryptionError', message: err.message } }, "a flow's data could not be decrypted: is its key in PAYLOAD_ENCRYPTION_KEYS?");
      reply.header('retry-after', '60');
      return sendError(reply, 503, 'payload_key_missing', "a flow's data is sealed under a payload key this gateway does not hold; an operator must add it back to PAYLOAD_ENCRYPTION_KEYS");
    }
    const status = typeof err.statusCode === 'number' ? err.statusCode : 500;
    if (status === 429) return sendError(reply, 429, 'rate_limited', 'too many requests; try again later');
    if (status === 415) return sendError(reply, 415, 'unsupported_media_type', 'send the body as application/json');
    if (status === 413) return sendError(reply, 413, 'payload_too_large', 'the request body is too large');
    if (status >= 400 && status < 500) {
      // Fastify's own client errors (unreadable JSON, empty JSON body, …). Their messages may
      // quote the body (a PIN), so they are never echoed.
      const rule = err.code === 'FST_ERR_CTP_EMPTY_JSON_BODY' ? 'must not be empty' : 'is not valid JSON';
      return status === 400
        ? sendError(reply, 400, 'invalid_request', `body: ${rule}`, { field: 'body' })
        : sendError(reply, status, 'client_error', 'the request was refused');
    }
    req.log.error({ err: loggableError(err) }, 'request failed');
    return sendError(reply, 500, 'internal', 'internal error; the gateway logged the details');
  });
}

/**
 * fastify's `frameworkErrors`: the router's own errors (a malformed %-encoding, a path segment
 * longer than maxParamLength) in our error shape. fastify's defaults quote the whole path, token
 * segments included; these never do.
 */
export function frameworkErrors(err: FastifyError, _req: FastifyRequest, reply: FastifyReply): void {
  if (err.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    void sendError(reply, 414, 'uri_too_long', 'a path segment is too long');
    return;
  }
  if (err.code === 'FST_ERR_BAD_URL') {
    void sendError(reply, 400, 'invalid_request', 'the path is not validly percent-encoded', { field: 'path' });
    return;
  }
  void sendError(reply, typeof err.statusCode === 'number' ? err.statusCode : 400, 'client_error', 'the request was refused');
}
