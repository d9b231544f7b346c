/**
 * The `webhooks` of the gateway's OpenAPI document: one POST per merchant event type, as the
 * workers deliver it to the merchant's endpoints (MERCHANT_WEBHOOK_URL(S) and a flow's own
 * webhook_url), its body the event's schema from the contract (merchant-event-schemas.ts, whose
 * zod ids put the schemas in `components`). openapi-typescript turns them into the `webhooks`
 * types of the generated client.
 */
import { EVENT_SUMMARIES, eventSchemaId } from '../../contract/merchant-event-schemas';
import { EVENT_TYPES } from '../../contract/merchant-events';

type Json = Record<string, unknown>;

export const EVENTS_TAG = { name: 'events', description: 'Merchant events: what the workers POST to your endpoints, signed as Standard Webhooks' };

const DELIVERY_DESCRIPTION =
  'POSTed as JSON to every endpoint configured for the flow, signed as Standard Webhooks (https://www.standardwebhooks.com): ' +
  'verify the webhook-signature against the raw body with your whsec_ secret (verifyEvent of @merchant-payment-flows/client ' +
  'does) before trusting it. Events of a flow are sent in order; any answer but 2xx (or none within the attempt timeout) is ' +
  'retried with backoff until the retry period ends (3 days by default), with the same id: de-duplicate on it.';

const HEADERS: Json[] = [
  { name: 'webhook-id', in: 'header', required: true, description: "the event's id (the body's id): the same on every attempt", schema: { type: 'string' } },
  { name: 'webhook-timestamp', in: 'header', required: true, description: 'when this attempt was signed, in seconds since the epoch; refuse one far from now', schema: { type: 'string' } },
  {
    name: 'webhook-signature',
    in: 'header',
    required: true,
    description: 'v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">, one per signing secret, space-separated',
    schema: { type: 'string' },
  },
];

/** `swap.pin_rejected` -> swapPinRejectedEvent. */
function operationIdOf(type: string): string {
  const id = eventSchemaId(type);
  return id.charAt(0).toLowerCase() + id.slice(1);
}

export function eventWebhooks(): Json {
  return Object.fromEntries(
    EVENT_TYPES.map((type) => [
      type,
      {
        post: {
          tags: [EVENTS_TAG.name],
          summary: EVENT_SUMMARIES[type] ?? type,
          operationId: operationIdOf(type),
          description: DELIVERY_DESCRIPTION,
          security: [],
          parameters: HEADERS,
          requestBody: { required: true, content: { 'application/json': { schema: { $ref: `#/components/schemas/${eventSchemaId(type)}` } } } },
          responses: {
            '2XX': { description: 'Delivered: the event is not sent again' },
            '4XX': { description: 'Not delivered: retried with backoff until the retry period ends (also any 5XX, or no answer)' },
          },
        },
      },
    ]),
  );
}
