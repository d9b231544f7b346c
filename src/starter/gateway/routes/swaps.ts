/**
 * Swap routes: start (update-with-start, answers once the provider initialised it), state, PIN
 * (authorised by the swap's pin_token only, rate-limited per swap and client address), the PIN
 * page and its summary, and cancel.
 */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { DuplicateFlowError, FlowClosedError, FlowNotFoundError, NotCancellableError, WorkerUnavailableError } from '../../client/errors';
import { PIN_PAGE_ROUTE } from '../../client/urls';
import type { SwapState, SwapView } from '../../../workflows/messages';
import { API_KEY_SECURITY, type GatewayContext, PIN_TOKEN_SECURITY, pinTokenGuard, requireSwapId } from '../context';
import { sendError } from '../errors';
import { type Answer, IDEMPOTENCY_RESPONSES, IdempotencyHeaders, IdempotencyInUseBody, idempotent } from '../idempotency';
import { PIN_PAGE_HEADERS, PIN_PAGE_HTML } from '../pin-page';
import {
  CancelBody,
  DuplicateSwapBody,
  ErrorBody,
  PendingBody,
  WorkerUnavailableBody,
  NotCancellableSwapBody,
  PinBody,
  PinOutcomeSchema,
  ProviderFailedSwapBody,
  StartedSwapSchema,
  SwapIdParams,
  SwapStartBody,
  SwapSummarySchema,
  SwapViewSchema,
} from '../schemas';

const PROVIDER_FAILED: readonly SwapState[] = ['failed', 'needs_reconciliation'];

/** The answer to a start: 201 with the pin_token, or 502 when the provider failed it. */
function startAnswer(swap: SwapView, tokens: { pin_url: string; pin_token: string } | undefined): Answer {
  if (PROVIDER_FAILED.includes(swap.state) || !tokens) {
    return { status: 502, body: { error: 'provider_failed', message: `the swap is ${swap.state}: ${swap.reason ?? 'initialization failed'}`, swap } };
  }
  return { status: 201, body: { ...swap, ...tokens } };
}
const TAGS = ['swaps'];
const gone = (message: string): Answer => ({ status: 410, body: { error: 'gone', message } });
const USER_REF_CACHE = 10_000;
/** Retry-After of a PIN refused because its user's budget did not answer during a burst of that user's PINs. */
const BUSY_BUDGET_RETRY_AFTER_SECONDS = 2;

export function registerSwapRoutes(root: FastifyInstance, ctx: GatewayContext): void {
  const app = root.withTypeProvider<ZodTypeProvider>();
  const { mpf } = ctx;

  /**
   * A swap's user_ref (it never changes), remembered for the last USER_REF_CACHE swaps: those this
   * process started are known without a lookup; others cost one state query.
   */
  const userRefs = new Map<string, string>();
  const rememberUserRef = (swap: Pick<SwapView, 'swap_id' | 'user_ref'>): void => {
    userRefs.set(swap.swap_id, swap.user_ref);
    while (userRefs.size > USER_REF_CACHE) userRefs.delete(userRefs.keys().next().value as string);
  };
  /** This process's PINs in flight per user_ref (a burst of one user's PINs: see the PIN route). */
  const pinsInFlight = new Map<string, number>();
  const inFlightFor = async <T>(userRef: string | undefined, fn: () => Promise<T>): Promise<T> => {
    if (userRef === undefined) return fn();
    pinsInFlight.set(userRef, (pinsInFlight.get(userRef) ?? 0) + 1);
    try {
      return await fn();
    } finally {
      const left = (pinsInFlight.get(userRef) ?? 1) - 1;
      if (left > 0) pinsInFlight.set(userRef, left);
      else pinsInFlight.delete(userRef);
    }
  };
  const userRefOf = async (swapId: string): Promise<string | undefined> => {
    const known = userRefs.get(swapId);
    if (known !== undefined) return known;
    const userRef = await mpf.swapUserRef(swapId);
    if (userRef !== undefined) rememberUserRef({ swap_id: swapId, user_ref: userRef });
    return userRef;
  };

  app.post(
    '/v1/swaps',
    {
      config: { apiKey: true, access: 'write' },
      schema: {
        tags: TAGS,
        summary: 'Start a swap',
        operationId: 'startSwap',
        description:
          'Starts swap-<txn_ref>, waits until the provider initialised it and answers the rate, amounts, expires_at, ' +
          'the pin_url for the user and the pin_token that authorises the PIN. 502 when the provider refused or did not ' +
          'answer (the swap is then failed or needs_reconciliation; its view is included). A reused txn_ref is 409 with ' +
          'the existing swap and never reaches the provider again.',
        security: API_KEY_SECURITY,
        headers: IdempotencyHeaders,
        body: SwapStartBody,
        response: {
          201: StartedSwapSchema,
          400: ErrorBody,
          401: ErrorBody,
          409: z.union([DuplicateSwapBody, IdempotencyInUseBody]),
          ...IDEMPOTENCY_RESPONSES,
          502: ProviderFailedSwapBody,
          504: PendingBody,
        },
      },
    },
    async (req, reply) =>
      idempotent(ctx, {
        route: 'POST /v1/swaps',
        fields: () => ({ ...req.body }),
        run: async (_req, idempotencyId) => {
          try {
            const { swap, pin_url, pin_token } = await mpf.startSwap(req.body, { idempotencyId });
            rememberUserRef(swap);
            return startAnswer(swap, { pin_url, pin_token });
          } catch (err) {
            // A retry after the first request started the swap but never kept its answer (its
            // gateway died, or it gave up waiting): the swap is this key's own, so answer it.
            if (idempotencyId && err instanceof DuplicateFlowError && (await mpf.startedBy(err.flowId, idempotencyId))) {
              const swap = await mpf.getSwap(err.flowId);
              rememberUserRef(swap);
              return startAnswer(swap, await mpf.pinTokenOf(err.flowId));
            }
            throw err;
          }
        },
        // No token is kept: a replay derives the pin_token again from the swap's sealed seed.
        toStored: (a) => (a.status === 201 ? { status: 201, body: { ...(a.body as Record<string, unknown>), pin_url: undefined, pin_token: undefined } } : a),
        fromStored: async (a) => {
          if (a.status !== 201) return a;
          const body = a.body as SwapView;
          const tokens = await mpf.pinTokenOf(body.swap_id);
          if (!tokens) return { status: 409, body: { error: 'idempotency_key_in_use', message: 'Idempotency-Key: the first answer can no longer be rebuilt (its pin_token key left PAYLOAD_ENCRYPTION_KEYS)' } };
          return { status: 201, body: { ...body, ...tokens } };
        },
      })(req, reply),
  );

  app.get(
    '/v1/swaps/:swap_id',
    {
      config: { apiKey: true, access: 'read' },
      schema: {
        tags: TAGS,
        summary: "A swap's current state",
        operationId: 'getSwap',
        security: API_KEY_SECURITY,
        params: SwapIdParams,
        response: { 200: SwapViewSchema, 401: ErrorBody, 404: ErrorBody, 503: WorkerUnavailableBody },
      },
    },
    async (req) => mpf.getSwap(requireSwapId(req.params.swap_id)),
  );

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
      // The per-user budget of wrong PINs (across the user's swaps and every gateway): a slot is
      // taken before the PIN goes on, kept when the provider says it was wrong, else given back.
      // No worker to answer for the budget (an outage or a deploy): the PIN goes on without a slot
      // rather than failing, as it did before the budget was shared. The swap still caps its own
      // wrong PINs, it reaches the provider only once a worker runs, and no new swap can start
      // meanwhile (its initialisation needs a worker), so what the outage lets through is bounded.
      // But a budget that did not answer while another PIN of the same user is in flight here is a
      // burst of that user's PINs queued on it, not an outage: refused (429), or the burst would
      // bypass the budget. One PIN per user at a time still goes on, as in an outage.
      const userRef = await userRefOf(swapId);
      return inFlightFor(userRef, async () => {
        const taken =
          userRef === undefined
            ? undefined
            : await ctx.userPinBudget.take(userRef).catch((err: unknown) => {
                if (!(err instanceof WorkerUnavailableError)) throw err;
                if ((pinsInFlight.get(userRef) ?? 0) > 1) {
                  req.log.warn({ swap_id: swapId }, 'PIN budget did not answer with more of this user\'s PINs in flight: a burst, refused 429');
                  return { retryAfterSeconds: BUSY_BUDGET_RETRY_AFTER_SECONDS, busy: true };
                }
                req.log.warn({ swap_id: swapId }, 'PIN budget unavailable (no worker answered): the PIN goes on under the swap\'s own cap');
                return undefined;
              });
        if (taken && 'retryAfterSeconds' in taken) {
          reply.header('retry-after', String(taken.retryAfterSeconds));
          const why = 'busy' in taken ? 'too many PINs for this user at once; try again in a moment' : 'too many wrong PINs for this user; try again later';
          return sendError(reply, 429, 'rate_limited', why);
        }
        let wrong = false;
        try {
          return await idempotent(ctx, {
            route: 'POST /v1/swaps/{swap_id}/pin',
            // The pin_token was checked: a PIN's key belongs to the swap it authorises.
            scope: () => `pin:${swapId}`,
            fields: () => ({ swap_id: swapId, ...req.body }),
            run: async (_req, idempotencyId) => {
              try {
                const outcome = (await mpf.submitPin(swapId, req.body, idempotencyId ? { submissionId: idempotencyId } : {}))!;
                wrong = outcome.outcome === 'pin_rejected';
                return { status: 200, body: outcome };
              } catch (err) {
                // The swap closed between the token check and the update.
                if (err instanceof FlowClosedError) return gone(`this swap is no longer awaiting a PIN (it is ${err.finalState ?? 'closed'})`);
                if (err instanceof FlowNotFoundError) return gone('this swap is no longer awaiting a PIN');
                throw err;
              }
            },
          })(req, reply);
        } finally {
          // Not awaited: the answer does not wait for the budget's bookkeeping (one update round
          // trip). Until the settle lands the slot counts as in flight, which only makes the next
          // take stricter; a settle that never lands is given back after its hold time.
          void taken?.slot.settle(wrong).catch((e: unknown) => req.log.warn({ err: String(e) }, 'PIN budget slot not settled (given back after its hold time)'));
        }
      });
    },
  );

  app.post(
    '/v1/swaps/:swap_id/cancel',
    {
      config: { apiKey: true, access: 'write' },
      schema: {
        tags: TAGS,
        summary: 'Cancel a swap still awaiting its PIN',
        operationId: 'cancelSwap',
        description: "Answers the swap's view once the cancellation took effect; 409 with the view when it can no longer be cancelled.",
        security: API_KEY_SECURITY,
        params: SwapIdParams,
        headers: IdempotencyHeaders,
        body: CancelBody,
        response: {
          200: SwapViewSchema,
          401: ErrorBody,
          404: ErrorBody,
          409: z.union([NotCancellableSwapBody, IdempotencyInUseBody]),
          ...IDEMPOTENCY_RESPONSES,
          503: WorkerUnavailableBody,
        },
      },
    },
    async (req, reply) => {
      const swapId = requireSwapId(req.params.swap_id);
      return idempotent(ctx, {
        route: 'POST /v1/swaps/{swap_id}/cancel',
        fields: () => ({ swap_id: swapId, ...(req.body ?? {}) }),
        run: async () => {
          try {
            return { status: 200, body: await mpf.cancelSwap(swapId, req.body?.reason) }; // the cancel update answers the final view
          } catch (err) {
            if (!(err instanceof NotCancellableError)) throw err;
            const swap = err.view as SwapView;
            return { status: 409, body: { error: 'not_cancellable', message: `the swap is ${swap.state}`, swap } };
          }
        },
      })(req, reply);
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
