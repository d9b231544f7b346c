/** The merchant events a flow's view lists, with their deliveries (response allow-list, OpenAPI). */
import { z } from 'zod';

export const EventDeliverySchema = z
  .object({
    endpoint: z.string().describe("the endpoint's host (never its path or query)"),
    state: z.enum(['pending', 'delivered', 'failed']).describe('failed: not delivered within the retry period'),
    attempts: z.number().int(),
    last_status: z.number().int().optional().describe("the endpoint's HTTP status at the last attempt, when it answered"),
    last_error: z.string().optional(),
    delivered_at: z.string().optional(),
    next_attempt_at: z.string().optional(),
  })
  .meta({ id: 'EventDelivery' });

export const FlowEventsField = z
  .array(
    z
      .object({
        id: z.string().describe('stable event id, evt_<flow_id>_<n>; the webhook-id header of every delivery attempt'),
        type: z.string().describe('e.g. swap.confirmed, payment_link.paid'),
        timestamp: z.string().describe('when the state changed'),
        deliveries: z.array(EventDeliverySchema).optional().describe('one per endpoint; absent when the delivery workflow did not answer in time'),
      })
      .meta({ id: 'FlowEvent' }),
  )
  .optional()
  .describe('the merchant events this flow emitted, in order, with their deliveries (see "Events to your backend")');
