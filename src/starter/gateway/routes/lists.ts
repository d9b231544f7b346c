/**
 * Lists of swaps and payment links: `GET /v1/swaps` and `GET /v1/payment-links` with state, time
 * range, txn_ref, customer and paging (Temporal visibility on the flows' search attributes and
 * memo; opaque page token).
 */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { ListQueryDoc } from '../../client/lists';
import { API_KEY_SECURITY, type GatewayContext } from '../context';
import { ErrorBody, WorkerUnavailableBody } from '../schemas';

export const FlowListItemSchema = z
  .object({
    flow_id: z.string(),
    kind: z.enum(['swap', 'payment_link']),
    reference: z.string().optional().describe('txn_ref (swap) or txn_merchant_ref (payment link)'),
    state: z.string().optional().describe('the state the flow last published (may lag its view by a moment: visibility is eventually consistent)'),
    execution_status: z.string().describe("Temporal's execution status: RUNNING, COMPLETED, TERMINATED, …"),
    created_at: z.string().optional(),
    closed_at: z.string().optional(),
    amount: z.number().optional().describe("the flow's amount (a swap's in its from_currency); absent on flows started before lists carried it"),
    currency: z.string().optional().describe("a swap's from_currency, a payment link's currency"),
    customer_ref: z.string().optional().describe("the customer reference: the user_ref of the swap's or the payment link's request"),
  })
  .meta({ id: 'FlowListItem' });

export const FlowPageSchema = z
  .object({
    items: z.array(FlowListItemSchema),
    next_page_token: z.string().optional().describe('pass as page_token for the next page; absent on the last page'),
  })
  .meta({ id: 'FlowPage' });

const LIST_DESCRIPTION =
  'Newest first (running flows first, then by close time), one page at a time. Filters: state, created_from (inclusive) and ' +
  'created_to (exclusive), txn_ref, user_ref (or customer_ref, its other name; exact match, through a keyed hash: flows ' +
  'started before this filter existed never match), limit; page_token continues a list with the same filters. Each item carries ' +
  "the flow's amount, currency and customer_ref; no worker is needed. A bad parameter, or one not listed, " +
  'is 400 naming it. The list comes from Temporal visibility, which is eventually consistent: a flow that changed state a ' +
  'moment ago may still be listed under its former state; its own view is always current.';

export function registerListRoutes(root: FastifyInstance, ctx: GatewayContext): void {
  const app = root.withTypeProvider<ZodTypeProvider>();
  const { mpf } = ctx;
  const response = { 200: FlowPageSchema, 400: ErrorBody, 401: ErrorBody, 503: WorkerUnavailableBody };

  app.get(
    '/v1/swaps',
    {
      config: { apiKey: true, access: 'read' },
      schema: { tags: ['swaps'], summary: 'List swaps', description: LIST_DESCRIPTION, security: API_KEY_SECURITY, querystring: ListQueryDoc, response },
    },
    async (req) => mpf.listFlows('swap', req.query),
  );

  app.get(
    '/v1/payment-links',
    {
      config: { apiKey: true, access: 'read' },
      schema: { tags: ['payment links'], summary: 'List payment links', description: LIST_DESCRIPTION, security: API_KEY_SECURITY, querystring: ListQueryDoc, response },
    },
    async (req) => mpf.listFlows('payment_link', req.query),
  );
}
