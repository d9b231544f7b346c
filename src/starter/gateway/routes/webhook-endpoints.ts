/**
 * The deployment's webhook endpoints (client/webhook-endpoints.ts): `GET|POST /v1/webhook_endpoints`,
 * `GET|POST|DELETE /v1/webhook_endpoints/{endpoint_id}`, `POST …/disable`, `…/enable` and
 * `…/roll_secret`. Operators only (access admin: an operator key, or a person's access token with
 * the admin permission): an endpoint decides where the merchant's events, and what they say of
 * its customers' money, are sent, so a backend key (write) and a read_only key are refused 403,
 * reads included (a URL may carry a credential in its path or query). The secret is in the
 * answer of a create and of a roll only.
 */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { EVENT_TYPES } from '../../../contract/merchant-events';
import { WebhookEndpointCreateBody, WebhookEndpointUpdateBody, WebhookSecretRollBody } from '../../client/webhook-endpoints';
import { ADMIN_SECURITY, type GatewayContext } from '../context';
import { IDEMPOTENCY_HEADER, IdempotencyHeaders } from '../idempotency';
import { ErrorBody, WorkerUnavailableBody } from '../schemas';

const TAGS = ['webhook endpoints'];

export const WebhookEndpointSchema = z
  .object({
    id: z.string().describe('we_<24 hex>'),
    url: z.string(),
    enabled_events: z.array(z.string()).describe(`event types sent to it, or ['*'] for all (${EVENT_TYPES.join(', ')})`),
    description: z.string().optional(),
    status: z.enum(['enabled', 'disabled']).describe('a disabled endpoint is sent nothing, from the next event on'),
    created_at: z.string(),
    updated_at: z.string(),
    previous_secret_expires_at: z.string().optional().describe('after a roll: when the previous secret stops signing beside the current one'),
  })
  .meta({ id: 'WebhookEndpoint' });

const WithSecretSchema = WebhookEndpointSchema.extend({
  secret: z.string().describe('whsec_…: the signing secret, shown in this answer only (verify deliveries with it; roll it if lost)'),
}).meta({ id: 'WebhookEndpointWithSecret' });

const CreatedSchema = WebhookEndpointSchema.extend({
  secret: z.string().optional().describe('whsec_…: the signing secret, shown in the answer that created the endpoint only (absent on a retry with the same Idempotency-Key)'),
  created: z.boolean().describe('false: a retry with the same Idempotency-Key met the endpoint the first request created'),
}).meta({ id: 'WebhookEndpointCreated' });

const ListSchema = z.object({ items: z.array(WebhookEndpointSchema) }).meta({ id: 'WebhookEndpointList' });
const DeletedSchema = WebhookEndpointSchema.extend({ deleted: z.literal(true) }).meta({ id: 'WebhookEndpointDeleted' });
const Params = z.object({ endpoint_id: z.string().describe('we_<24 hex>') });

export function registerWebhookEndpointRoutes(root: FastifyInstance, ctx: GatewayContext): void {
  const app = root.withTypeProvider<ZodTypeProvider>();
  const endpoints = ctx.mpf.webhookEndpoints;
  const config = { apiKey: true, access: 'admin' } as const;
  const refusals = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 503: WorkerUnavailableBody };
  const one = { ...refusals, 404: ErrorBody };
  const base = { tags: TAGS, security: ADMIN_SECURITY };

  app.get(
    '/v1/webhook_endpoints',
    { config, schema: { ...base, summary: 'List webhook endpoints', operationId: 'listWebhookEndpoints', description: 'Every endpoint of the deployment, without secrets.', response: { 200: ListSchema, ...refusals } } },
    async () => ({ items: await endpoints.list() }),
  );

  app.post(
    '/v1/webhook_endpoints',
    {
      config,
      schema: {
        ...base,
        summary: 'Create a webhook endpoint',
        operationId: 'createWebhookEndpoint',
        description:
          'Registers an endpoint for the events of enabled_events (or every type with *), with a signing secret of its own, shown in this answer only. ' +
          'Flows already running send it their next events. The URL must be allowed by the deployment (MERCHANT_WEBHOOK_ALLOWED_HOSTS). ' +
          'With an Idempotency-Key, a retry meets the endpoint the first request created (200, created false, no secret).',
        headers: IdempotencyHeaders,
        body: WebhookEndpointCreateBody,
        response: { 200: CreatedSchema, 201: CreatedSchema, ...refusals },
      },
    },
    async (req, reply) => {
      const raw = req.headers[IDEMPOTENCY_HEADER];
      const key = Array.isArray(raw) ? raw[0] : raw;
      const r = await endpoints.create(req.body, key !== undefined ? { idempotencyKey: key } : {});
      return reply.code(r.created ? 201 : 200).send(r);
    },
  );

  app.get(
    '/v1/webhook_endpoints/:endpoint_id',
    { config, schema: { ...base, summary: 'One webhook endpoint', operationId: 'getWebhookEndpoint', description: 'The endpoint, without its secret.', params: Params, response: { 200: WebhookEndpointSchema, ...one } } },
    async (req) => endpoints.get(req.params.endpoint_id),
  );

  app.post(
    '/v1/webhook_endpoints/:endpoint_id',
    {
      config,
      schema: {
        ...base,
        summary: 'Update a webhook endpoint',
        operationId: 'updateWebhookEndpoint',
        description: 'Changes its url, enabled_events or description (an empty description removes it); the next event sent follows the change.',
        params: Params,
        body: WebhookEndpointUpdateBody,
        response: { 200: WebhookEndpointSchema, ...one },
      },
    },
    async (req) => endpoints.update(req.params.endpoint_id, req.body),
  );

  app.delete(
    '/v1/webhook_endpoints/:endpoint_id',
    { config, schema: { ...base, summary: 'Delete a webhook endpoint', operationId: 'deleteWebhookEndpoint', description: 'It is sent nothing more (an attempt under way finishes).', params: Params, response: { 200: DeletedSchema, ...one } } },
    async (req) => endpoints.remove(req.params.endpoint_id),
  );

  for (const [action, status] of [
    ['disable', 'disabled'],
    ['enable', 'enabled'],
  ] as const) {
    app.post(
      `/v1/webhook_endpoints/:endpoint_id/${action}`,
      {
        config,
        schema: {
          ...base,
          summary: `${action === 'disable' ? 'Disable' : 'Enable'} a webhook endpoint`,
          operationId: `${action}WebhookEndpoint`,
          description: action === 'disable' ? 'It is sent nothing from the next event (and the next attempt) on, until enabled again.' : 'It is sent the events that happen from now on.',
          params: Params,
          response: { 200: WebhookEndpointSchema, ...one },
        },
      },
      async (req) => endpoints.setStatus(req.params.endpoint_id, status),
    );
  }

  app.post(
    '/v1/webhook_endpoints/:endpoint_id/roll_secret',
    {
      config,
      schema: {
        ...base,
        summary: "Roll a webhook endpoint's secret",
        operationId: 'rollWebhookEndpointSecret',
        description:
          'A new secret, shown in this answer only. The previous one keeps signing beside it (both signatures in webhook-signature) for expires_in_seconds ' +
          '(default 86400; 0: it stops at once), so receivers can switch without a gap.',
        params: Params,
        body: WebhookSecretRollBody.nullish(),
        response: { 200: WithSecretSchema, ...one },
      },
    },
    async (req) => endpoints.rollSecret(req.params.endpoint_id, req.body ?? {}),
  );
}
