/** What every route module of the gateway gets, and the small helpers they share. */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { MpfClient } from '../client/mpf-client';
import { FlowNotFoundError } from '../client/errors';
import { bearerToken } from './auth';
import { sendError } from './errors';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route needs the backend's API key (checked in one onRequest hook). */
    apiKey?: boolean;
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
}

export const API_KEY_SECURITY: Array<Record<string, string[]>> = [{ apiKey: [] }, { apiKeyBearer: [] }];
export const PIN_TOKEN_SECURITY: Array<Record<string, string[]>> = [{ pinToken: [] }];

const SWAP_ID = /^swap-[A-Za-z0-9._:-]{1,100}$/;
const LINK_ID = /^paylink-[A-Za-z0-9._:-]{1,100}$/;

const isSwapId = (id: string): boolean => SWAP_ID.test(id);
const isLinkId = (id: string): boolean => LINK_ID.test(id);

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
 * (`Authorization: Bearer <pin_token>`). Missing -> 401; wrong or another swap's -> 403; unknown
 * swap -> 404; a closed swap -> 410 unless `allowClosed`. Runs before the body is validated and
 * before anything reaches the workflow.
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
    if (verdict === 'unknown_flow') return sendError(reply, 404, 'not_found', 'no such swap');
    if (verdict === 'bad_token') return sendError(reply, 403, 'forbidden', "the pin_token is not this swap's");
    if (verdict === 'closed' && !opts.allowClosed) return sendError(reply, 410, 'gone', 'this swap is no longer awaiting a PIN');
    return undefined;
  };
}
