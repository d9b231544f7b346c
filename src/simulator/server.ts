/**
 * The simulated provider API (paths from the contract's PROVIDER_PATHS), with the error
 * envelope {status:'error', message} and these choices where provider-api.md is silent:
 * - missing or wrong Bearer -> 401 'Unauthorized'; missing x-merchant-ref -> 400
 *   'x-merchant-ref header is required'; another merchant ref -> 403 'Unknown merchant reference';
 * - a body that fails validation -> 400 with "field: rule" messages naming the field;
 * - a reused txn_ref (swap) or txn_merchant_ref (link) -> 409 'Duplicate transaction reference',
 *   with no side effect (nothing recorded, nothing notified);
 * - wrong PIN -> 400 'Incorrect wallet PIN'; unknown, expired, used or burnt token, or a
 *   user_ref other than the initialization's -> 400 'auth_token is invalid, expired or already used'.
 * The swap-init request fields are the contract's own SwapInitRequest.
 */
import { bearerToken, secretDigest, secretMatches } from '../auth/secrets';
import fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { z } from 'zod';
import {
  HOSTED_LINK,
  HostedLinkRequest,
  PROVIDER_PATHS,
  SwapConfirmRequest,
  SwapInitRequest,
  describeZodError,
} from '../contract/provider';
import { CATEGORIES } from './categories-data';
import { errorBody, type SimContext } from './context';
import { type Answer, faultyRoute, recordRequest } from './faulty-route';
import { NOT_FORWARDED_MESSAGE, providerCallAllowed, SIMULATOR_ANSWER_HEADER, SIMULATOR_ANSWER_VALUE } from './identity';
import type { EndpointKey } from './ledger';

export const MESSAGES = {
  unauthorized: 'Unauthorized',
  merchantRequired: 'x-merchant-ref header is required',
  merchantUnknown: 'Unknown merchant reference',
  duplicate: 'Duplicate transaction reference',
  wrongPin: 'Incorrect wallet PIN',
  invalidToken: 'auth_token is invalid, expired or already used',
  swapInitialized: 'Swap initialized successfully',
  swapConfirmed: 'Swap confirmed and initiated successfully',
  linkCreated: 'Payment link created successfully',
  categories: 'Categories retrieved successfully',
} as const;

/** The document lists payment_method and payment_channel as required: no defaults here. */
export const StrictHostedLinkRequest = HostedLinkRequest.extend({
  payment_method: z.literal(HOSTED_LINK.paymentMethod, { error: `must be ${HOSTED_LINK.paymentMethod}` }),
  payment_channel: z.literal(HOSTED_LINK.paymentChannel, { error: `must be ${HOSTED_LINK.paymentChannel}` }),
});

const fail = (status: number, message: string, extra: Partial<Answer> = {}): Answer => ({ status, body: errorBody(message), ...extra });
const ok = (message: string, data?: unknown, extra: Partial<Answer> = {}): Answer => ({
  status: 200,
  body: data === undefined ? { status: 'success', message } : { status: 'success', message, data },
  ...extra,
});

function bearer(request: FastifyRequest, expected: string): Answer | undefined {
  return secretMatches(bearerToken(request.headers.authorization), secretDigest(expected)) ? undefined : fail(401, MESSAGES.unauthorized);
}

function merchant(request: FastifyRequest, expected: string): Answer | undefined {
  const v = request.headers['x-merchant-ref'];
  const ref = Array.isArray(v) ? v[0] : v;
  if (ref === undefined || ref.trim() === '') return fail(400, MESSAGES.merchantRequired);
  return ref.trim() === expected ? undefined : fail(403, MESSAGES.merchantUnknown);
}

function parse<T>(schema: z.ZodType<T>, body: unknown): { ok: true; value: T } | { ok: false; answer: Answer } {
  const r = schema.safeParse(body);
  return r.success ? { ok: true, value: r.data } : { ok: false, answer: fail(400, describeZodError(r.error)) };
}

export function swapInit(ctx: SimContext, request: FastifyRequest): Answer {
  const denied = bearer(request, ctx.config.secretKey);
  if (denied) return denied;
  const p = parse(SwapInitRequest, request.body);
  if (!p.ok) return p.answer;
  const r = ctx.state.initSwap(p.value);
  if (!r.ok) return fail(409, MESSAGES.duplicate);
  return ok(MESSAGES.swapInitialized, r.data, { payment_ref: r.data.payment_ref });
}

export function swapConfirm(ctx: SimContext, request: FastifyRequest): Answer {
  const denied = bearer(request, ctx.config.secretKey);
  if (denied) return denied;
  const p = parse(SwapConfirmRequest, request.body);
  if (!p.ok) return p.answer;
  const r = ctx.state.confirmSwap(p.value);
  if (r.ok) return ok(MESSAGES.swapConfirmed);
  return fail(400, r.error === 'wrong_pin' ? MESSAGES.wrongPin : MESSAGES.invalidToken);
}

export function linkCreate(ctx: SimContext, request: FastifyRequest): Answer {
  const denied = bearer(request, ctx.config.accessToken) ?? merchant(request, ctx.config.merchantRef);
  if (denied) return denied;
  const p = parse(StrictHostedLinkRequest, request.body);
  if (!p.ok) return p.answer;
  const r = ctx.state.createLink(p.value, ctx.checkoutBase);
  if (!r.ok) return fail(409, MESSAGES.duplicate);
  const l = r.link;
  return ok(
    MESSAGES.linkCreated,
    {
      payment_ref: l.payment_ref,
      pay_link: l.pay_link,
      txn_merchant_ref: l.txn_merchant_ref,
      amount: l.amount,
      currency: l.currency,
      redirect_url: l.redirect_url,
      success_message: l.success_message,
      pay_data: null,
    },
    { payment_ref: l.payment_ref },
  );
}

export function categories(ctx: SimContext, request: FastifyRequest): Answer {
  const denied = (ctx.config.categoriesRequireBearer ? bearer(request, ctx.config.accessToken) : undefined) ?? merchant(request, ctx.config.merchantRef);
  if (denied) return denied;
  return ok(MESSAGES.categories, { data: CATEGORIES.map((c) => ({ code: c.code, name: c.name })) });
}

/**
 * The provider API server (the control API is added by control.ts). Every answer it gives carries
 * the simulator's mark, and a provider call is answered only from loopback or through the
 * forwarder (identity.ts).
 */
export function buildProviderApp(ctx: SimContext, logger: boolean | object): FastifyInstance {
  const app = fastify({ logger: loggerOption(logger), forceCloseConnections: true });
  app.addHook('onRequest', async (_request, reply) => {
    reply.header(SIMULATOR_ANSWER_HEADER, SIMULATOR_ANSWER_VALUE);
  });
  const onlyNear = async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> =>
    providerCallAllowed(request.socket.remoteAddress, request.headers) ? undefined : reply.code(421).send(errorBody(NOT_FORWARDED_MESSAGE));
  const route = (method: 'GET' | 'POST', url: string, endpoint: EndpointKey, h: (c: SimContext, r: FastifyRequest) => Answer): void => {
    app.route({ method, url, config: { endpoint }, onRequest: onlyNear, handler: faultyRoute(ctx, endpoint, (r) => h(ctx, r)) });
  };
  route('POST', PROVIDER_PATHS.swapInit, 'swap.init', swapInit);
  route('POST', PROVIDER_PATHS.swapConfirm, 'swap.confirm', swapConfirm);
  route('POST', PROVIDER_PATHS.hostedLink, 'link.create', linkCreate);
  route('GET', PROVIDER_PATHS.categories, 'categories', categories);

  app.setErrorHandler((err: { statusCode?: number; message?: string }, request, reply) => {
    const status = err.statusCode && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500;
    const endpoint = (request.routeOptions.config as { endpoint?: EndpointKey } | undefined)?.endpoint;
    if (endpoint) recordRequest(ctx, endpoint, request).status = status;
    if (status === 500) request.log.error({ err }, 'simulator error');
    return reply.code(status).send(errorBody(status === 500 ? 'Internal server error' : (err.message ?? 'Bad request')));
  });
  app.setNotFoundHandler((request, reply) => reply.code(404).send(errorBody(`Route ${request.method} ${request.url.split('?')[0]} not found`)));
  return app;
}

/** Fastify's logger option; the Authorization header is redacted whenever headers are logged. */
export function loggerOption(logger: boolean | object): boolean | object {
  if (logger === true) return { level: 'info', redact: ['req.headers.authorization'] };
  return logger;
}
