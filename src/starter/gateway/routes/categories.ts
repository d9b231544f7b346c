/** GET /v1/categories: the provider's categories (through the worker), flat and as a tree, cached. */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { CategoriesResult } from '../../client/mpf-client';
import { API_KEY_SECURITY, type GatewayContext } from '../context';
import { CategoriesResponse, ErrorBody } from '../schemas';

const CATEGORIES_CACHE_MS = 60_000;

/** The provider's categories, fetched at most once per `ttlMs` (concurrent callers share one fetch). */
function categoriesCache(load: () => Promise<CategoriesResult>, ttlMs = CATEGORIES_CACHE_MS): () => Promise<CategoriesResult> {
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

export function registerCategoryRoutes(root: FastifyInstance, ctx: GatewayContext): void {
  const app = root.withTypeProvider<ZodTypeProvider>();
  const categories = categoriesCache(() => ctx.mpf.listCategories());

  app.get(
    '/v1/categories',
    {
      config: { apiKey: true, access: 'read' },
      schema: {
        tags: ['categories'],
        summary: "The provider's product categories, flat and as a tree",
        operationId: 'listCategories',
        description:
          'Codes are strings ("13.1" and "13.10" differ; names may repeat). The tree puts N.x under N.0; sub-categories ' +
          `whose parent is missing are kept as orphans. Cached for ${CATEGORIES_CACHE_MS / 1000} s.`,
        security: API_KEY_SECURITY,
        response: { 200: CategoriesResponse, 401: ErrorBody },
      },
    },
    async () => categories(),
  );
}
