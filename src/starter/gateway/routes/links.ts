/** Payment-link routes: create (update-with-start, answers pay_link), state with notifications, cancel. */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { DuplicateFlowError, NotCancellableError } from '../../client/errors';
import { type Answer, IDEMPOTENCY_RESPONSES, IdempotencyHeaders, IdempotencyInUseBody, idempotent } from '../idempotency';
import type { LinkState, LinkView } from '../../../workflows/messages';
import { LimitExceededBody, LimitUnavailableBody, ProviderUnavailableBody } from '../errors';
import { API_KEY_SECURITY, type GatewayContext, requireLinkId } from '../context';
import {
  CancelBody,
  DuplicateLinkBody,
  ErrorBody,
  PendingBody,
  WorkerUnavailableBody,
  FlowClosedLinkBody,
  LinkCreateBody,
  LinkIdParams,
  LinkViewSchema,
  NotCancellableLinkBody,
  ProviderFailedLinkBody,
} from '../schemas';

const PROVIDER_FAILED: readonly LinkState[] = ['failed', 'needs_reconciliation'];
const TAGS = ['payment links'];

function createdAnswer(link: LinkView): Answer {
  if (link.state === 'terminated') return { status: 409, body: { error: 'flow_closed', message: `the payment link is terminated: ${link.reason ?? 'closed in Temporal'}`, link } };
  if (PROVIDER_FAILED.includes(link.state)) {
    return { status: 502, body: { error: 'provider_failed', message: `the payment link is ${link.state}: ${link.reason ?? 'creation failed'}`, link } };
  }
  return { status: 201, body: link };
}

export function registerLinkRoutes(root: FastifyInstance, ctx: GatewayContext): void {
  const app = root.withTypeProvider<ZodTypeProvider>();
  const { mpf } = ctx;

  app.post(
    '/v1/payment-links',
    {
      config: { apiKey: true, access: 'write' },
      schema: {
        tags: TAGS,
        summary: 'Create a hosted bank-transfer payment link',
        operationId: 'createPaymentLink',
        description:
          'Starts paylink-<txn_merchant_ref>, waits until the provider created the link and answers pay_link and payment_ref. ' +
          'payment_method (HOSTED_PAY_LINK), payment_channel (BANK_TRANSFER) and currency (NGN) are defaulted and may only ' +
          'take those values. 502 when the provider refused or did not answer; 409 with the existing link for a reused ' +
          'txn_merchant_ref (never sent to the provider again), or flow_closed when it was terminated in Temporal before it was created.',
        security: API_KEY_SECURITY,
        headers: IdempotencyHeaders,
        body: LinkCreateBody,
        response: {
          201: LinkViewSchema,
          400: ErrorBody,
          401: ErrorBody,
          409: z.union([DuplicateLinkBody, IdempotencyInUseBody, FlowClosedLinkBody]),
          422: z.union([IDEMPOTENCY_RESPONSES[422], LimitExceededBody]),
          502: ProviderFailedLinkBody,
          503: z.union([WorkerUnavailableBody, LimitUnavailableBody, ProviderUnavailableBody]),
          504: PendingBody,
        },
      },
    },
    async (req, reply) =>
      idempotent(ctx, {
        route: 'POST /v1/payment-links',
        fields: () => ({ ...req.body }),
        run: async (_req, idempotencyId) => {
          try {
            return createdAnswer((await mpf.createLink(req.body, { idempotencyId })).link);
          } catch (err) {
            // This key's own link, started by a first request whose answer was never kept.
            if (idempotencyId && err instanceof DuplicateFlowError && (await mpf.startedBy(err.flowId, idempotencyId))) {
              return createdAnswer(await mpf.getLink(err.flowId));
            }
            throw err;
          }
        },
      })(req, reply),
  );

  app.get(
    '/v1/payment-links/:link_id',
    {
      config: { apiKey: true, access: 'read' },
      schema: {
        tags: TAGS,
        summary: "A payment link's state, the notifications received and its timeline",
        operationId: 'getPaymentLink',
        description:
          "The link's view with its timeline: its states, the provider call (createPaymentLink) with its outcome, the notifications " +
          'and the operator acts, read from Temporal with no worker. A closed link answers with every worker stopped (a link closed from ' +
          "outside, with no worker to answer, from the events in its memo: its notifications are then only in the timeline).",
        security: API_KEY_SECURITY,
        params: LinkIdParams,
        response: { 200: LinkViewSchema, 401: ErrorBody, 404: ErrorBody, 503: WorkerUnavailableBody },
      },
    },
    async (req) => mpf.getLinkDetail(requireLinkId(req.params.link_id)),
  );

  app.post(
    '/v1/payment-links/:link_id/cancel',
    {
      config: { apiKey: true, access: 'write' },
      schema: {
        tags: TAGS,
        summary: 'Cancel a payment link not yet paid',
        operationId: 'cancelPaymentLink',
        description: "Answers the link's view once the cancellation took effect; 409 with the view when it has already ended.",
        security: API_KEY_SECURITY,
        params: LinkIdParams,
        headers: IdempotencyHeaders,
        body: CancelBody,
        response: {
          200: LinkViewSchema,
          401: ErrorBody,
          404: ErrorBody,
          409: z.union([NotCancellableLinkBody, IdempotencyInUseBody]),
          ...IDEMPOTENCY_RESPONSES,
          503: WorkerUnavailableBody,
        },
      },
    },
    async (req, reply) => {
      const linkId = requireLinkId(req.params.link_id);
      return idempotent(ctx, {
        route: 'POST /v1/payment-links/{link_id}/cancel',
        fields: () => ({ link_id: linkId, ...(req.body ?? {}) }),
        run: async () => {
          try {
            return { status: 200, body: await mpf.cancelLink(linkId, req.body?.reason) }; // the cancel update answers the view
          } catch (err) {
            if (!(err instanceof NotCancellableError)) throw err;
            const link = err.view as LinkView;
            return { status: 409, body: { error: 'not_cancellable', message: `the payment link is ${link.state}`, link } };
          }
        },
      })(req, reply);
    },
  );
}
