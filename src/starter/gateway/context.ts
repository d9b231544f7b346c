/** What every route module of the gateway gets, and the small helpers they share. */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Access, KeyIdentity, Role } from '../../auth/keyring';
import { type PersonIdentity, personActor } from '../../auth/person-tokens';
import type { MpfClient } from '../client/mpf-client';
import { FlowNotFoundError } from '../client/errors';
import { Reference } from '../../contract/provider';
import { FLOW_ID_PREFIX, type FlowKind, flowKindOf } from '../../workflows/flow-ids';
import { bearerToken } from './auth';
import { sendError } from './errors';
import type { GatewayMetrics } from './metrics';
import type { NotificationGuard } from './notification-guard';
import type { PinGate } from '../client/pin-gate';
import type { ApiKeyCache } from '../client/api-keys';

declare module 'fastify' {
  interface FastifyRequest {
    /** The API key this request was authorised with (public identity only). */
    apiKey?: KeyIdentity;
    /** The person this request was authorised for by their access token (operator routes, GATEWAY_OIDC_ISSUER), and the role it maps to. */
    person?: PersonIdentity & { role: Role };
  }
  interface FastifyContextConfig {
    /** The route needs an API key (checked in one onRequest hook). */
    apiKey?: boolean;
    /** What the key's role must allow on this route; an API-key route that declares none is refused. */
    access?: Access;
    /** A person with the read role may GET this operator route (a view with no secret and no URL in it). */
    personRead?: boolean;
    /** A person (operator) may use this write route (a redelivery); else write routes are the backend key's alone. */
    personWrite?: boolean;
    /**
     * Route config stays open to other modules' keys (the simulator's `endpoint`): without this,
     * the augmentations here and in @fastify/rate-limit would make their route configs excess.
     */
    [key: string]: unknown;
  }
}

export interface GatewayContext {
  mpf: MpfClient;
  pinRateLimit: { max: number; timeWindowMs: number };
  /** Wrong PINs per user_ref across their swaps, kept in Temporal (every gateway counts against one budget); fails closed. */
  pinGate: PinGate;
  notificationGuard: NotificationGuard;
  metrics: GatewayMetrics;
  /** This gateway's reading of the keys made through /v1/api_keys (its authentication checks them). */
  apiKeyCache: ApiKeyCache;
}

export const API_KEY_SECURITY: Array<Record<string, string[]>> = [{ apiKey: [] }, { apiKeyBearer: [] }];
/** The operator routes (/v1/admin/*): an API key of role operator, or a person's access token (when GATEWAY_OIDC_ISSUER is set). */
export const ADMIN_SECURITY: Array<Record<string, string[]>> = [...API_KEY_SECURITY, { personToken: [] }];
export const PIN_TOKEN_SECURITY: Array<Record<string, string[]>> = [{ pinToken: [] }];

/**
 * Who did it, as an audit record names them: `key <id> (<label>)` for an API key, `person <name>
 * (sub <subject>)` for a person's access token (../../auth/person-tokens).
 */
export function actorOfRequest(req: FastifyRequest): string {
  if (req.person) return personActor(req.person);
  const key = req.apiKey;
  return key ? `key ${key.id}${key.label ? ` (${key.label})` : ''}`.slice(0, 200) : 'gateway key';
}

/** A flow id of `kind` whose reference passes the contract's Reference rule. */
const isFlowId = (id: string, kind: FlowKind): boolean => flowKindOf(id) === kind && Reference.safeParse(id.slice(FLOW_ID_PREFIX[kind].length)).success;

const isSwapId = (id: string): boolean => isFlowId(id, 'swap');
const isLinkId = (id: string): boolean => isFlowId(id, 'payment_link');

/** 404 for anything that cannot be a swap id (another flow's id included). */
export function requireSwapId(id: string): string {
  if (!isSwapId(id)) throw new FlowNotFoundError('swap', id.slice(0, 120));
  return id;
}

export function requireLinkId(id: string): string {
  if (!isLinkId(id)) throw new FlowNotFoundError('payment_link', id.slice(0, 120));
  return id;
}

/**
 * preValidation hook of the routes the PIN page calls: authorised only by that swap's pin_token
 * (`Authorization: Bearer <pin_token>`). Missing -> 401 (answered before any lookup, so it says
 * nothing about the swap); wrong, another swap's, or an unknown swap -> the same 404 not_found, so
 * a forged token cannot tell an existing swap from an unknown one; a closed swap (right token) ->
 * 410 unless `allowClosed`. Runs before the body is validated and before anything reaches the
 * workflow. A v2 token is checked with the payload keys alone ('authentic', no Temporal call): a
 * closed swap is then found by the route itself (the PIN update answers 410, the summary reads
 * the final view); older tokens are checked against the swap's memo as before.
 */
export function pinTokenGuard(ctx: GatewayContext, opts: { allowClosed: boolean }) {
  return async (req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> => {
    const swapId = (req.params as { swap_id?: string }).swap_id ?? '';
    if (!isSwapId(swapId)) return sendError(reply, 404, 'not_found', 'no such swap');
    const token = bearerToken(req);
    if (!token) {
      reply.header('www-authenticate', 'Bearer realm="pin"');
      return sendError(reply, 401, 'unauthorized', "send the swap's pin_token as Authorization: Bearer <pin_token>");
    }
    const verdict = await ctx.mpf.verifyToken(swapId, 'pin_token_sha256', token);
    if (verdict === 'unknown_flow' || verdict === 'bad_token') return sendError(reply, 404, 'not_found', 'no such swap');
    if (verdict === 'closed' && !opts.allowClosed) return sendError(reply, 410, 'gone', 'this swap is no longer awaiting a PIN');
    return undefined;
  };
}
