/**
 * Idempotency-Key on the gateway's POSTs that start or change a flow. The first request with a
 * key claims its record (kept in Temporal by the client's IdempotencyStore, so every gateway
 * process sees it) and its answer is kept; a retry with the same key and the same route and
 * fields gets that answer again (status and body, header `Idempotent-Replayed: true`); the same
 * key with another route or other fields is 422 `idempotency_key_mismatch` naming the fields; a
 * retry while the first request still runs is 409 `idempotency_key_in_use` with Retry-After.
 *
 * Kept: every answer below 500, and 502 (the provider's final refusal). Not kept (the claim is
 * released, a retry runs again): 5xx answers such as 503/504 and thrown errors. Requests refused
 * before they run (400 bad body or header, 401) never claim a key.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { IDEMPOTENCY_KEY_PATTERN, IdempotencyCapError } from '../client/idempotency';
import type { StoredAnswer } from '../../workflows/idempotency';
import type { GatewayContext } from './context';
import { sendError } from './errors';
import { ErrorBody } from './schemas';

export type Answer = StoredAnswer;

export const IDEMPOTENCY_HEADER = 'idempotency-key';

/** The header as documented and validated (other headers pass through untouched). */
export const IdempotencyHeaders = z.looseObject({
  [IDEMPOTENCY_HEADER]: z
    .string()
    .regex(IDEMPOTENCY_KEY_PATTERN, 'must be 1-255 visible ASCII characters (e.g. a UUID)')
    .optional()
    .describe(
      'Makes a retry safe: the same key with the same body answers the first status and body again (kept at least 24 h, ' +
        'scoped to the merchant — every API key of this deployment — or for a PIN to the swap); with another body, 422. A UUID per operation is the usual choice.',
    ),
});

/** 422: the key was used with another route or body. */
export const IdempotencyMismatchBody = ErrorBody.extend({
  error: z.literal('idempotency_key_mismatch'),
  fields: z.array(z.string()).describe('the fields whose value differs from the first request with this key'),
}).meta({ id: 'IdempotencyMismatch' });

/** 409 while the first request with the key still runs. */
export const IdempotencyInUseBody = ErrorBody.extend({ error: z.literal('idempotency_key_in_use') }).meta({ id: 'IdempotencyInUse' });

export interface IdempotentRoute<Req extends FastifyRequest> {
  /** e.g. 'POST /v1/swaps' */
  route: string;
  /** Who the key belongs to (its scope). Default: the merchant (apiKeyScope). */
  scope?: (req: Req) => string;
  /** What must be equal for a retry (path parameters and body fields). */
  fields: (req: Req) => Record<string, unknown>;
  /** The request's work; `idempotencyId` is the key's record when the request carried a key. */
  run: (req: Req, idempotencyId: string | undefined) => Promise<Answer>;
  /** What is kept of an answer (default: all). Keep no token. */
  toStored?: (a: Answer) => Answer;
  /** Rebuilds a replayed answer (e.g. derives the pin_token again). */
  fromStored?: (a: Answer) => Promise<Answer>;
}

const keep = (status: number): boolean => status < 500 || status === 502;

/**
 * The scope of an Idempotency-Key on the backend routes: the merchant (every API key of this
 * deployment), as Stripe scopes keys to the account. A caller that retries a POST after moving to
 * a new key (a rotation) gets the first answer again instead of a second attempt.
 */
export function apiKeyScope(_req: FastifyRequest): string {
  return MERCHANT_SCOPE;
}
export const MERCHANT_SCOPE = 'merchant';

/**
 * The public id of the API key a request presented (the keyring's id, never the secret): its
 * records are counted under it (the cap of live Idempotency-Key records per key).
 */
export function keyIdOf(req: FastifyRequest): string {
  // A person (operator routes) is counted under their subject.
  return req.apiKey?.id ?? (req.person ? `person:${req.person.subject}` : 'unknown');
}

/** Seconds a caller past the cap waits before trying a new key again (records expire one by one). */
const CAP_RETRY_AFTER_SECONDS = 60;

/** A fastify handler running `def` with Idempotency-Key semantics when the request carries a key. */
export function idempotent<Req extends FastifyRequest>(ctx: GatewayContext, def: IdempotentRoute<Req>) {
  return async (req: Req, reply: FastifyReply): Promise<FastifyReply> => {
    const raw = req.headers[IDEMPOTENCY_HEADER];
    const key = Array.isArray(raw) ? raw[0] : raw;
    if (key === undefined) {
      const a = await def.run(req, undefined);
      return reply.code(a.status).send(a.body);
    }
    if (!IDEMPOTENCY_KEY_PATTERN.test(key)) {
      return sendError(reply, 400, 'invalid_request', 'Idempotency-Key: must be 1-255 visible ASCII characters (e.g. a UUID)', { field: 'Idempotency-Key' });
    }
    const store = ctx.mpf.idempotency;
    let claim;
    try {
      // Records of API-key routes are counted per key id; a PIN's (scoped to its swap) are bounded by the swap's own limits.
      claim = await store.claim((def.scope ?? apiKeyScope)(req as Req), key, def.route, def.fields(req), def.scope ? undefined : keyIdOf(req));
    } catch (err) {
      if (!(err instanceof IdempotencyCapError)) throw err;
      reply.header('retry-after', String(CAP_RETRY_AFTER_SECONDS));
      return sendError(reply, 429, 'rate_limited', err.message, { field: 'Idempotency-Key' });
    }
    switch (claim.kind) {
      case 'mismatch': {
        const what = claim.route ? `was first used for ${claim.route}` : `was first used with a different ${claim.fields.join(', ')}`;
        return reply.code(422).send({ error: 'idempotency_key_mismatch', message: `Idempotency-Key: ${what}; use a new key for a different request`, field: claim.fields[0] ?? 'Idempotency-Key', fields: claim.fields });
      }
      case 'in_progress':
        reply.header('retry-after', '1');
        return sendError(reply, 409, 'idempotency_key_in_use', `Idempotency-Key: the first request with this key (since ${claim.since}) is still running; retry shortly`, { field: 'Idempotency-Key' });
      case 'replay': {
        const a = def.fromStored ? await def.fromStored(claim.answer) : claim.answer;
        reply.header('idempotent-replayed', 'true');
        return reply.code(a.status).send(a.body);
      }
      case 'claimed':
        break;
    }
    let answer: Answer;
    try {
      answer = await def.run(req, claim.workflowId);
    } catch (err) {
      await store.release(claim.workflowId, claim.claimId).catch((e: unknown) => req.log.warn({ err: String(e) }, 'idempotency release failed'));
      throw err;
    }
    // The answer is sent even when keeping it fails: the record then stays claimed, and a retry
    // after the claim went stale runs again (a start finds the flow it owns and answers it).
    const settle = keep(answer.status)
      ? store.complete(claim.workflowId, claim.claimId, def.toStored ? def.toStored(answer) : answer)
      : store.release(claim.workflowId, claim.claimId);
    await settle.catch((e: unknown) => req.log.warn({ err: String(e) }, 'idempotency record not updated'));
    return reply.code(answer.status).send(answer.body);
  };
}

/** The OpenAPI parts every idempotent route adds: the header and the 409/422 answers. */
export const IDEMPOTENCY_RESPONSES = { 422: IdempotencyMismatchBody } as const;
