/** Payment-link routes: create (update-with-start, answers pay_link), state with notifications, cancel. */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { NotCancellableError } from '../../client/errors';
import type { LinkState, LinkView } from '../../../workflows/messages';
import { API_KEY_SECURITY, type GatewayContext, requireLinkId } from '../context';
import {
  CancelBody,
  DuplicateLinkBody,
  ErrorBody,
  PendingBody,
  WorkerUnavailableBody,
  LinkCreateBody,
  LinkIdParams,
  LinkViewSchema,
  NotCancellableLinkBody,
  ProviderFailedLinkBody,
} from '../schemas';

const PROVIDER_FAILED: readonly LinkState[] = ['failed', 'needs_reconciliation'];
const TAGS = ['payment links'];

export function registerLinkRoutes(root: FastifyInstance, ctx: GatewayContext): void {
  const app = root.withTypeProvider<ZodTypeProvider>();
  const { mpf } = ctx;

  app.post(
    '/v1/payment-links',
    {
      config: { apiKey: true },
      schema: {
        tags: TAGS,
        summary: 'Create a hosted bank-transfer payment link',
        operationId: 'createPaymentLink',
        description:
          'Starts paylink-<txn_merchant_ref>, waits until the provider created the link and answers pay_link and payment_ref. ' +
          'payment_method (HOSTED_PAY_LINK), payment_channel (BANK_TRANSFER) and currency (NGN) are defaulted and may only ' +
          'take those values. 502 when the provider refused or did not answer; 409 with the existing link for a reused ' +
          'txn_merchant_ref (never sent to the provider again).',
        security: API_KEY_SECURITY,
        body: LinkCreateBody,
        response: { 201: LinkViewSchema, 400: ErrorBody, 401: ErrorBody, 409: DuplicateLinkBody, 502: ProviderFailedLinkBody, 504: PendingBody },
      },
    },
    async (req, reply) => {
      const { link } = await mpf.createLink(req.body);
      if (PROVIDER_FAILED.includes(link.state)) {
        return reply.code(502).send({ error: 'provider_failed', message: `the payment link is ${link.state}: ${link.reason ?? 'creation failed'}`, link });
      }
      return reply.code(201).send(link);
    },
  );

  app.get(
    '/v1/payment-links/:link_id',
    {
      config: { apiKey: true },
      schema: {
        tags: TAGS,
        summary: "A payment link's state and the notifications received",
        operationId: 'getPaymentLink',
        security: API_KEY_SECURITY,
        params: LinkIdParams,
        response: { 200: LinkViewSchema, 401: ErrorBody, 404: ErrorBody, 503: WorkerUnavailableBody },
      },
    },
    async (req) => mpf.getLink(requireLinkId(req.params.link_id)),
  );

  app.post(
    '/v1/payment-links/:link_id/cancel',
    {
      config: { apiKey: true },
      schema: {
        tags: TAGS,
        summary: 'Cancel a payment link not yet paid',
        operationId: 'cancelPaymentLink',
        description: "Answers the link's view once the cancellation took effect; 409 with the view when it has already ended.",
        security: API_KEY_SECURITY,
        params: LinkIdParams,
        body: CancelBody,
        response: { 200: LinkViewSchema, 401: ErrorBody, 404: ErrorBody, 409: NotCancellableLinkBody, 503: WorkerUnavailableBody },
      },
    },
    async (req, reply) => {
      const linkId = requireLinkId(req.params.link_id);
      try {
        return await mpf.cancelLink(linkId, req.body?.reason); // the cancel update answers the view
      } catch (err) {
        if (!(err instanceof NotCancellableError)) throw err;
        const link = err.view as LinkView;
        return reply.code(409).send({ error: 'not_cancellable', message: `the payment link is ${link.state}`, link });
      }
    },
  );
}
