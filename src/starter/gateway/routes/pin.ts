/**
 * The routes the PIN page uses, each authorised by the swap's pin_token alone (never an API key):
 * the page itself, its summary of the swap, and the PIN submission — rate-limited per swap and
 * client address, and admitted by the PIN gate (the user's wrong-PIN budget, which fails closed).
 */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { FlowClosedError, FlowNotFoundError } from '../../client/errors';
import { PIN_PAGE_ROUTE } from '../../client/urls';
import { type GatewayContext, PIN_TOKEN_SECURITY, pinTokenGuard } from '../context';
import { type Answer, IDEMPOTENCY_RESPONSES, IdempotencyHeaders, idempotent } from '../idempotency';
import { PIN_PAGE_HEADERS, PIN_PAGE_HTML } from '../pin-page';
import { ErrorBody, PendingBody, PinBody, PinOutcomeSchema, SwapIdParams, SwapSummarySchema, WorkerUnavailableBody } from '../schemas';

const TAGS = ['swaps'];
const gone = (message: string): Answer => ({ status: 410, body: { error: 'gone', message } });

export function registerPinRoutes(root: FastifyInstance, ctx: GatewayContext): void {
  const app = root.withTypeProvider<ZodTypeProvider>();
  const { mpf, pinGate } = ctx;

  app.get(
    '/v1/swaps/:swap_id/summary',
    {
      config: { rateLimit: { max: 60, timeWindow: 60_000, hook: 'onRequest', keyGenerator: (r) => `summary|${(r.params as { swap_id?: string }).swap_id}|${r.ip}` } },
      preValidation: pinTokenGuard(ctx, { allowClosed: true }),
      schema: {
        tags: TAGS,
        summary: 'What the PIN page shows (pin_token)',
        operationId: 'getSwapSummary',
        description: "Amounts, currencies, rate, expiry, state and attempts left; authorised by the swap's pin_token.",
        security: PIN_TOKEN_SECURITY,
        params: SwapIdParams,
        response: { 200: SwapSummarySchema, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 429: ErrorBody, 503: WorkerUnavailableBody },
      },
    },
    async (req) => {
      const s = await mpf.getSwap(req.params.swap_id);
      const expiresMs = s.expires_at ? Date.parse(s.expires_at) : NaN;
      return {
        swap_id: s.swap_id,
        state: s.state,
        from_currency: s.from_currency,
        to_currency: s.to_currency,
        amount: s.amount,
        converted_amount: s.converted_amount,
        rate_used: s.rate_used,
        expires_at: s.expires_at,
        seconds_left: Number.isFinite(expiresMs) ? Math.max(0, Math.floor((expiresMs - Date.now()) / 1000)) : undefined,
        pin_attempts_left: s.pin_attempts_left,
      };
    },
  );

  app.post(
    '/v1/swaps/:swap_id/pin',
    {
      bodyLimit: 4096,
      config: {
        rateLimit: {
          max: ctx.pinRateLimit.max,
          timeWindow: ctx.pinRateLimit.timeWindowMs,
          // Runs after the pin_token check (both preValidation, the guard first), so only requests
          // with this swap's token count: requests without it cannot lock its owner out.
          hook: 'preValidation',
          keyGenerator: (r) => `pin|${(r.params as { swap_id?: string }).swap_id}|${r.ip}`,
        },
      },
      preValidation: pinTokenGuard(ctx, { allowClosed: false }),
      schema: {
        tags: TAGS,
        summary: 'Submit the wallet PIN (pin_token)',
        operationId: 'submitPin',
        description:
          "Authorised only by this swap's pin_token (Authorization: Bearer <pin_token>): missing 401; another or a forged " +
          'token and an unknown swap alike 404; closed swap 410; too many requests 429 (per swap and client address, ' +
          'counting only requests with the right token; and wrong PINs per user_ref across swaps). Answers the outcome of ' +
          'this PIN: confirmed, pin_rejected with attempts_left, expired, failed, cancelled or needs_reconciliation. ' +
          '409 when the swap is not awaiting a PIN right now (e.g. another PIN is being confirmed).',
        security: PIN_TOKEN_SECURITY,
        params: SwapIdParams,
        headers: IdempotencyHeaders,
        body: PinBody,
        response: {
          200: PinOutcomeSchema,
          400: ErrorBody,
          401: ErrorBody,
          403: ErrorBody,
          404: ErrorBody,
          409: ErrorBody,
          410: ErrorBody,
          ...IDEMPOTENCY_RESPONSES,
          429: ErrorBody,
          503: WorkerUnavailableBody,
          504: PendingBody,
        },
      },
    },
    async (req, reply) => {
      const swapId = req.params.swap_id;
      // The user's wrong-PIN budget (across their swaps and every gateway) admits the PIN or
      // refuses it before anything reaches the swap: 429 when spent, 503 when it cannot answer.
      return pinGate.around(swapId, (verdict) =>
        idempotent(ctx, {
          route: 'POST /v1/swaps/{swap_id}/pin',
          // The pin_token was checked: a PIN's key belongs to the swap it authorises.
          scope: () => `pin:${swapId}`,
          fields: () => ({ swap_id: swapId, ...req.body }),
          run: async (_req, idempotencyId) => {
            try {
              const outcome = (await mpf.submitPin(swapId, req.body, idempotencyId ? { submissionId: idempotencyId } : {}))!;
              verdict.wrong = outcome.outcome === 'pin_rejected';
              verdict.awaitsPin = verdict.wrong && outcome.state === 'awaiting_pin';
              return { status: 200, body: outcome };
            } catch (err) {
              // The swap closed between the token check and the update.
              if (err instanceof FlowClosedError) return gone(`this swap is no longer awaiting a PIN (it is ${err.finalState ?? 'closed'})`);
              if (err instanceof FlowNotFoundError) return gone('this swap is no longer awaiting a PIN');
              throw err;
            }
          },
        })(req, reply),
      );
    },
  );

  app.get(
    PIN_PAGE_ROUTE,
    {
      schema: {
        tags: ['PIN page'],
        summary: 'The reference PIN-entry page (HTML)',
        operationId: 'getPinPage',
        description: "Open the pin_url (…/pin/{swap_id}#token=<pin_token>); the token stays in the fragment and never reaches a server log.",
        params: SwapIdParams,
      },
    },
    async (_req, reply) => reply.code(200).headers(PIN_PAGE_HEADERS).send(PIN_PAGE_HTML),
  );
}
