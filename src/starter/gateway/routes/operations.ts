/** Liveness, readiness (Temporal answers and a worker polls the task queue: readiness.ts) and the OpenAPI document. */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { GatewayContext } from '../context';
import { checkReadiness, READY_POLLER_WINDOW_MS } from '../readiness';

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
        summary: 'Readiness: Temporal answers and a worker polled the task queue recently',
        operationId: 'readiness',
        description:
          `503 temporal_unavailable when Temporal does not answer within 3 s; 503 no_worker_polling when no worker polled ` +
          `the task queue's workflow tasks in the last ${READY_POLLER_WINDOW_MS / 1000} s (starts and PINs would wait for one).`,
        response: {
          200: z.object({ ok: z.literal(true) }),
          503: z.object({ ok: z.literal(false), error: z.string(), message: z.string().optional() }),
        },
      },
    },
    async (_req, reply) => {
      const r = await checkReadiness(ctx.mpf);
      if (r.ready) return { ok: true as const };
      if (r.error === 'no_worker_polling') {
        const message = `no worker polled task queue ${ctx.mpf.taskQueue} in the last ${READY_POLLER_WINDOW_MS / 1000} s`;
        return reply.code(503).send({ ok: false as const, error: r.error, message });
      }
      return reply.code(503).send({ ok: false as const, error: 'temporal_unavailable' });
    },
  );

  app.get('/openapi.json', { schema: { hide: true } }, async () => root.swagger());
}
