/**
 * The backend's swap routes (API key): start (update-with-start, answers once the provider
 * initialised it), state, and cancel. The PIN page's routes (pin_token) are in pin.ts.
 */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { DuplicateFlowError, NotCancellableError } from '../../client/errors';
import type { SwapStartRequest } from '../../client/requests';
import { type SwapState, type SwapView, swapWorkflowId } from '../../../workflows/messages';
import { LimitExceededBody, LimitUnavailableBody, ProviderUnavailableBody } from '../errors';
import { API_KEY_SECURITY, type GatewayContext, requireSwapId } from '../context';
import { type Answer, IDEMPOTENCY_RESPONSES, IdempotencyHeaders, IdempotencyInUseBody, idempotent } from '../idempotency';
import {
  CancelBody,
  DuplicateSwapBody,
  FlowClosedSwapBody,
  ErrorBody,
  PendingBody,
  WorkerUnavailableBody,
  NotCancellableSwapBody,
  ProviderFailedSwapBody,
  StartedSwapSchema,
  SwapIdParams,
  SwapStartBody,
  SwapViewSchema,
} from '../schemas';

const PROVIDER_FAILED: readonly SwapState[] = ['failed', 'needs_reconciliation'];

/** The answer to a start: 201 with the pin_token, or 502 when the provider failed it. */
function startAnswer(swap: SwapView, tokens: { pin_url: string; pin_token: string } | undefined): Answer {
  if (swap.state === 'terminated') return { status: 409, body: { error: 'flow_closed', message: `the swap is terminated: ${swap.reason ?? 'closed in Temporal'}`, swap } };
  if (PROVIDER_FAILED.includes(swap.state) || !tokens) {
    return { status: 502, body: { error: 'provider_failed', message: `the swap is ${swap.state}: ${swap.reason ?? 'initialization failed'}`, swap } };
  }
  return { status: 201, body: { ...swap, ...tokens } };
}

/** Starts the swap and answers the start: 201, or 502 / 409 as startAnswer says; a retry of the key's own start answers it. */
async function startAnswerOf({ mpf, pinGate }: GatewayContext, body: SwapStartRequest, idempotencyId: string | undefined): Promise<Answer> {
  try {
    const { swap, pin_url, pin_token } = await mpf.startSwap(body, { idempotencyId });
    pinGate.remember(swap);
    return startAnswer(swap, { pin_url, pin_token });
  } catch (err) {
    // A retry after the first request started the swap but never kept its answer (its
    // gateway died, or it gave up waiting): the swap is this key's own, so answer it.
    if (idempotencyId && err instanceof DuplicateFlowError && (await mpf.startedBy(err.flowId, idempotencyId))) {
      const swap = await mpf.getSwap(err.flowId);
      pinGate.remember(swap);
      return startAnswer(swap, await mpf.pinTokenOf(err.flowId));
    }
    throw err;
  }
}

const TAGS = ['swaps'];

export function registerSwapRoutes(root: FastifyInstance, ctx: GatewayContext): void {
  const app = root.withTypeProvider<ZodTypeProvider>();
  const { mpf, pinGate } = ctx;

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
          409: z.union([DuplicateSwapBody, IdempotencyInUseBody, FlowClosedSwapBody]),
          422: z.union([IDEMPOTENCY_RESPONSES[422], LimitExceededBody]),
          502: ProviderFailedSwapBody,
          503: z.union([WorkerUnavailableBody, LimitUnavailableBody, ProviderUnavailableBody]),
          504: PendingBody,
        },
      },
    },
    async (req, reply) =>
      idempotent(ctx, {
        route: 'POST /v1/swaps',
        fields: () => ({ ...req.body }),
        run: async (_req, idempotencyId) => {
          // The swap's PIN slot reserved in the user's wrong-PIN budget beside the start (not
          // awaited by it); given back unless the start answers 201.
          const reserved = pinGate.ahead(swapWorkflowId(req.body.txn_ref), req.body.user_ref);
          let answer: Answer | undefined;
          try {
            answer = await startAnswerOf(ctx, req.body, idempotencyId);
            return answer;
          } finally {
            if (answer?.status === 201) pinGate.started(answer.body as SwapView);
            else pinGate.giveBack(reserved);
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
        summary: "A swap's current state and its timeline",
        operationId: 'getSwap',
        description:
          "The swap's view with its timeline: its states, each provider call (initSwap, confirmSwap) with its outcome, the notifications " +
          'and the operator acts, read from Temporal with no worker. A closed swap answers with every worker stopped (a swap closed from ' +
          "outside, with no worker to answer, from the events in its memo: its notifications are then only in the timeline).",
        security: API_KEY_SECURITY,
        params: SwapIdParams,
        response: { 200: SwapViewSchema, 401: ErrorBody, 404: ErrorBody, 503: WorkerUnavailableBody },
      },
    },
    async (req) => mpf.getSwapDetail(requireSwapId(req.params.swap_id)),
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

}
