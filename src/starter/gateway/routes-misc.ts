/** Categories (cached), liveness/readiness, the PIN page and the OpenAPI document. */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { CategoriesResult } from '../client';
import { API_KEY_SECURITY, type GatewayContext } from './context';
import { PIN_PAGE_HEADERS, PIN_PAGE_HTML } from './pin-page';
import { CategoriesResponse, ErrorBody, SwapIdParams } from './schemas';

export const CATEGORIES_CACHE_MS = 60_000;
const READY_TIMEOUT_MS = 3_000;

/** The provider's categories, fetched at most once per `ttlMs` (concurrent callers share one fetch). */
export function categoriesCache(load: () => Promise<CategoriesResult>, ttlMs = CATEGORIES_CACHE_MS): () => Promise<CategoriesResult> {
  let cached: { at: number; value: Promise<CategoriesResult> } | undefined;
  return () => {
    if (cached && Date.now() - cached.at < ttlMs) return cached.value;
    const value = load();
    const entry = { at: Date.now(), value };
    cached = entry;
    value.catch(() => {
      if (cached === entry) cached = undefined; // a failure is not cached
    });
    return value;
  };
}

export function registerMiscRoutes(root: FastifyInstance, ctx: GatewayContext): void {
  const app = root.withTypeProvider<ZodTypeProvider>();
  const categories = categoriesCache(() => ctx.mpf.listCategories());

  app.get(
    '/v1/categories',
    {
      config: { apiKey: true },
      schema: {
        tags: ['categories'],
        summary: "The provider's product categories, flat and as a tree",
        description:
          'Codes are strings ("13.1" and "13.10" differ; names may repeat). The tree puts N.x under N.0; sub-categories ' +
          `whose parent is missing are kept as orphans. Cached for ${CATEGORIES_CACHE_MS / 1000} s.`,
        security: API_KEY_SECURITY,
        response: { 200: CategoriesResponse, 401: ErrorBody },
      },
    },
    async () => categories(),
  );

  app.get(
    '/healthz',
    { schema: { tags: ['operations'], summary: 'Liveness', response: { 200: z.object({ ok: z.literal(true) }) } } },
    async () => ({ ok: true as const }),
  );

  app.get(
    '/readyz',
    {
      schema: {
        tags: ['operations'],
        summary: 'Readiness: Temporal answers',
        response: { 200: z.object({ ok: z.literal(true) }), 503: z.object({ ok: z.literal(false), error: z.string() }) },
      },
    },
    async (_req, reply) => {
      const conn = ctx.mpf.temporal.connection;
      try {
        // The deadline ends the call itself (retries included), so nothing outlives the answer.
        await conn.withDeadline(Date.now() + READY_TIMEOUT_MS, () => conn.workflowService.getSystemInfo({}));
        return { ok: true as const };
      } catch {
        return reply.code(503).send({ ok: false as const, error: 'temporal_unavailable' });
      }
    },
  );

  app.get(
    '/pin/:swap_id',
    {
      schema: {
        tags: ['PIN page'],
        summary: 'The reference PIN-entry page (HTML)',
        description: "Open the pin_url (…/pin/{swap_id}#token=<pin_token>); the token stays in the fragment and never reaches a server log.",
        params: SwapIdParams,
      },
    },
    async (_req, reply) => reply.code(200).headers(PIN_PAGE_HEADERS).send(PIN_PAGE_HTML),
  );

  app.get('/openapi.json', { schema: { hide: true } }, async () => root.swagger());
}
