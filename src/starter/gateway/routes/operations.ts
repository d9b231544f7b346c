/** Liveness, readiness (Temporal answers) and the OpenAPI document. */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { GatewayContext } from '../context';

const READY_TIMEOUT_MS = 3_000;

export function registerOperationRoutes(root: FastifyInstance, ctx: GatewayContext): void {
  const app = root.withTypeProvider<ZodTypeProvider>();

  app.get(
    '/healthz',
    { schema: { tags: ['operations'], summary: 'Liveness', operationId: 'liveness', response: { 200: z.object({ ok: z.literal(true) }) } } },
    async () => ({ ok: true as const }),
  );

  app.get(
    '/readyz',
    {
      schema: {
        tags: ['operations'],
        summary: 'Readiness: Temporal answers',
        operationId: 'readiness',
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

  app.get('/openapi.json', { schema: { hide: true } }, async () => root.swagger());
}
