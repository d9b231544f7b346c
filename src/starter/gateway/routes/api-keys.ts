/**
 * The API keys made through the gateway (client/api-keys.ts): `GET|POST /v1/api_keys`,
 * `POST /v1/api_keys/{key_id}/revoke` and `…/rotate`. Operators only (access admin: an operator key,
 * or a person's access token with the admin permission): a key opens the API, so a backend key
 * (write) and a read_only key are refused 403, the list included. The key is in the answer of a
 * create and of a rotation only; no answer holds a digest. Each change is read back into this
 * gateway's cache before it answers; every other gateway reads it within its refresh interval.
 */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { API_KEY_ROLES, DEFAULT_ROTATE_OVERLAP_SECONDS } from '../../../contract/api-keys';
import { ApiKeyCreateBody, ApiKeyRotateBody, DEFAULT_API_KEYS_REFRESH_MS, DEFAULT_API_KEYS_STALE_MS } from '../../client/api-keys';
import { actorOfRequest, ADMIN_SECURITY, type GatewayContext } from '../context';
import { IDEMPOTENCY_HEADER, IdempotencyHeaders } from '../idempotency';
import { ErrorBody, WorkerUnavailableBody } from '../schemas';

const TAGS = ['API keys'];

export const ApiKeySchema = z
  .object({
    id: z.string().describe('ak_<24 hex>: what logs, metrics and audit records name'),
    role: z.enum(API_KEY_ROLES),
    label: z.string().optional(),
    created_at: z.string(),
    created_by: z.string().describe('who created it: key <id> (<label>) or person <name> (sub <subject>)'),
    expires_at: z.string().optional().describe('refused after this time (401 key_expired); a rotation sets it to the end of the overlap'),
    revoked_at: z.string().optional().describe('refused from this time on (401)'),
    revoked_by: z.string().optional(),
    rotated_to: z.string().optional().describe('the id of the key a rotation made to replace it'),
  })
  .meta({ id: 'ApiKey' });

const WithKeySchema = ApiKeySchema.extend({
  key: z.string().describe('mpfa_…: the key, shown in this answer only (only its SHA-256 is kept); send it as x-api-key or Authorization: Bearer'),
}).meta({ id: 'ApiKeyWithKey' });

const ListSchema = z.object({ data: z.array(ApiKeySchema) }).meta({ id: 'ApiKeyList' });
const Params = z.object({ key_id: z.string().describe('ak_<24 hex>') });

const PROPAGATION =
  `Every gateway reads the keys every ${DEFAULT_API_KEYS_REFRESH_MS / 1000} s, so a change reaches all of them within that; ` +
  `a gateway that could not read them for ${DEFAULT_API_KEYS_STALE_MS / 1000} s refuses these keys (503 api_keys_unavailable) until it can.`;

export function registerApiKeyRoutes(root: FastifyInstance, ctx: GatewayContext): void {
  const app = root.withTypeProvider<ZodTypeProvider>();
  const keys = ctx.mpf.apiKeys;
  const cache = ctx.apiKeyCache;
  const config = { apiKey: true, access: 'admin' } as const;
  const refusals = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 503: WorkerUnavailableBody };
  const one = { ...refusals, 404: ErrorBody, 409: ErrorBody };
  const base = { tags: TAGS, security: ADMIN_SECURITY };
  /** The request's Idempotency-Key, as the client's option. */
  const withKey = (headers: Record<string, string | string[] | undefined>): { idempotencyKey?: string } => {
    const raw = headers[IDEMPOTENCY_HEADER];
    const key = Array.isArray(raw) ? raw[0] : raw;
    return key !== undefined ? { idempotencyKey: key } : {};
  };

  app.get(
    '/v1/api_keys',
    {
      config,
      schema: {
        ...base,
        summary: 'List API keys',
        operationId: 'listApiKeys',
        description: 'The keys made through this API, newest first (revoked and expired ones for 30 days after they ended), never a key or its digest. The keyring file\'s keys are not listed (mpf keys list --keyring).',
        response: { 200: ListSchema, ...refusals },
      },
    },
    async () => ({ data: await keys.list() }),
  );

  app.post(
    '/v1/api_keys',
    {
      config,
      schema: {
        ...base,
        summary: 'Create an API key',
        operationId: 'createApiKey',
        description:
          `A new key of the role, shown in this answer only (201). ${PROPAGATION} ` +
          'With an Idempotency-Key, a retry meets the key the first request created (200, without the key: revoke it and create another if the first answer was lost).',
        headers: IdempotencyHeaders,
        body: ApiKeyCreateBody,
        response: { 200: ApiKeySchema, 201: WithKeySchema, ...refusals, 409: ErrorBody },
      },
    },
    async (req, reply) => {
      const r = await keys.create(req.body, { by: actorOfRequest(req), ...withKey(req.headers) });
      await cache.refreshAfterChange();
      return reply.code(r.key !== undefined ? 201 : 200).send(r);
    },
  );

  app.post(
    '/v1/api_keys/:key_id/revoke',
    {
      config,
      schema: {
        ...base,
        summary: 'Revoke an API key',
        operationId: 'revokeApiKey',
        description: `The key is refused (401) from now on. ${PROPAGATION} Revoking it again answers it as it is.`,
        params: Params,
        response: { 200: ApiKeySchema, ...one },
      },
    },
    async (req) => {
      const r = await keys.revoke(req.params.key_id, { by: actorOfRequest(req) });
      await cache.refreshAfterChange();
      return r;
    },
  );

  app.post(
    '/v1/api_keys/:key_id/rotate',
    {
      config,
      schema: {
        ...base,
        summary: 'Rotate an API key',
        operationId: 'rotateApiKey',
        description:
          'A new key of the same role and label, shown in this answer only (201); the rotated one keeps working for overlap_seconds ' +
          `(default ${DEFAULT_ROTATE_OVERLAP_SECONDS}, at most 7 days; 0: it stops at once), then is refused (401 key_expired). A revoked, expired or already rotated key is 409. ` +
          'With an Idempotency-Key, a retry meets the successor the first request made (200, without the key).',
        headers: IdempotencyHeaders,
        params: Params,
        body: ApiKeyRotateBody.nullish(),
        response: { 200: ApiKeySchema, 201: WithKeySchema, ...one },
      },
    },
    async (req, reply) => {
      const r = await keys.rotate(req.params.key_id, req.body ?? {}, { by: actorOfRequest(req), ...withKey(req.headers) });
      await cache.refreshAfterChange();
      return reply.code(r.key !== undefined ? 201 : 200).send(r);
    },
  );
}
