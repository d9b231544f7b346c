/**
 * The merchant events API: `GET /v1/events` (list with filters and cursor pages), `GET
 * /v1/events/{event_id}` (one event with its delivery attempts per endpoint and its redeliveries)
 * and `POST /v1/events/{event_id}/redeliver` (sent again, same id). Reading needs the read role;
 * a redelivery the write role (a backend key): it moves no money, and it is what a merchant's
 * backend does to recover from an outage of its own receiver, so it must not wait for an operator.
 */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { EventNotDeliverableError } from '../../client/event-redelivery';
import { EventListQueryDoc, parseEventId } from '../../client/events';
import { API_KEY_SECURITY, type GatewayContext } from '../context';
import { EventDeliverySchema } from '../event-schemas';
import { IDEMPOTENCY_RESPONSES, IdempotencyHeaders, IdempotencyInUseBody, idempotent } from '../idempotency';
import { ErrorBody, WorkerUnavailableBody } from '../schemas';

const TAGS = ['events'];

const RedeliverBody = z
  .object({ endpoint: z.string().optional().describe('we_…: send it to this registered webhook endpoint only (enabled, taking the event\'s type)') })
  .nullish()
  .meta({ id: 'RedeliverRequest' });

const EventSchema = z
  .object({
    id: z.string().describe('evt_<flow_id>_<n>: the webhook-id of its deliveries'),
    type: z.string().describe('e.g. swap.confirmed (the webhooks section of this document has each type and its data)'),
    timestamp: z.string().describe('when the state changed'),
    data: z.record(z.string(), z.unknown()).describe("the event's data, exactly as delivered"),
    flow_id: z.string(),
  })
  .meta({ id: 'MerchantEvent' });

const EventPageSchema = z
  .object({
    items: z.array(EventSchema),
    next_page_token: z.string().optional().describe('pass as page_token for the next page; absent on the last page'),
  })
  .meta({ id: 'MerchantEventPage' });

const RedeliverySchema = z
  .object({
    id: z.string().describe('redeliver-<event_id>-<n>: a delivery workflow in Temporal Web'),
    event_id: z.string(),
    deliveries: z.array(EventDeliverySchema),
  })
  .meta({ id: 'EventRedelivery' });

const EventDetailSchema = EventSchema.extend({
  deliveries: z.array(EventDeliverySchema).describe('the first delivery: one record per endpoint (hosts only)'),
  redeliveries: z.array(RedeliverySchema),
}).meta({ id: 'MerchantEventDetail' });

const EventParams = z.object({ event_id: z.string().describe('evt_<flow_id>_<n>') });
const NotDeliverableBody = ErrorBody.extend({ error: z.literal('not_deliverable') }).meta({ id: 'NotDeliverable' });

const LIST_DESCRIPTION =
  'The events of every swap and payment link, newest first across flows (by when each event happened). Filters: type, ' +
  'flow_id, created_from (inclusive) and created_to (exclusive) on when the event happened, limit; page_token continues ' +
  'a list with the same filters, after the last event of the page before. Each flow keeps its events with it, so they ' +
  'are listed with every worker stopped, for the namespace retention after the flow closed (30 days by default). ' +
  'To catch up after an outage of your receiver, list with created_from and de-duplicate by id.';

export function registerEventRoutes(root: FastifyInstance, ctx: GatewayContext): void {
  const app = root.withTypeProvider<ZodTypeProvider>();
  const { mpf } = ctx;

  app.get(
    '/v1/events',
    {
      config: { apiKey: true, access: 'read' },
      schema: {
        tags: TAGS,
        summary: 'List merchant events',
        operationId: 'listEvents',
        description: LIST_DESCRIPTION,
        security: API_KEY_SECURITY,
        querystring: EventListQueryDoc,
        response: { 200: EventPageSchema, 400: ErrorBody, 401: ErrorBody, 503: WorkerUnavailableBody },
      },
    },
    async (req) => mpf.listEvents(req.query),
  );

  app.get(
    '/v1/events/:event_id',
    {
      config: { apiKey: true, access: 'read' },
      schema: {
        tags: TAGS,
        summary: 'One merchant event with its deliveries',
        operationId: 'getEvent',
        description: 'The event as delivered, its delivery attempts per endpoint (hosts only) and its redeliveries.',
        security: API_KEY_SECURITY,
        params: EventParams,
        response: { 200: EventDetailSchema, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody, 503: WorkerUnavailableBody },
      },
    },
    async (req) => mpf.getEvent(req.params.event_id),
  );

  app.post(
    '/v1/events/:event_id/redeliver',
    {
      config: { apiKey: true, access: 'write', personWrite: true },
      schema: {
        tags: TAGS,
        summary: 'Send a merchant event again',
        operationId: 'redeliverEvent',
        description:
          'Sends the event again, with the same id (your receiver de-duplicates it) and signed with the current secret, to the ' +
          "endpoints its flow's events went to and the registered webhook endpoints that take it; with endpoint, to that registered endpoint only. " +
          'Retried for an hour like any delivery. A redelivery still under way (to the same target) is answered ' +
          'again, not doubled. 409 not_deliverable when there is no endpoint to send it to (the named one disabled or not taking its type), or after 10 redeliveries.',
        security: API_KEY_SECURITY,
        params: EventParams,
        headers: IdempotencyHeaders,
        body: RedeliverBody,
        response: {
          202: RedeliverySchema,
          400: ErrorBody,
          401: ErrorBody,
          403: ErrorBody,
          404: ErrorBody,
          409: z.union([NotDeliverableBody, IdempotencyInUseBody]),
          ...IDEMPOTENCY_RESPONSES,
          503: WorkerUnavailableBody,
        },
      },
    },
    async (req, reply) => {
      const eventId = req.params.event_id;
      parseEventId(eventId); // a malformed id is 400 before anything is recorded
      const endpoint = req.body?.endpoint;
      return idempotent(ctx, {
        route: 'POST /v1/events/{event_id}/redeliver',
        fields: () => ({ event_id: eventId, ...(endpoint !== undefined ? { endpoint } : {}) }),
        run: async () => {
          try {
            return { status: 202, body: await mpf.redeliverEvent(eventId, endpoint !== undefined ? { endpoint } : {}) };
          } catch (err) {
            if (!(err instanceof EventNotDeliverableError)) throw err;
            return { status: 409, body: { error: 'not_deliverable', message: err.message } };
          }
        },
      })(req, reply);
    },
  );
}
