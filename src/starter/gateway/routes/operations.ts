/** Liveness, readiness (Temporal answers and a worker polls the task queue: readiness.ts) and the OpenAPI document. */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { GatewayContext } from '../context';
import { PROBE_TIMEOUT_MS } from '../../client/health';
import { checkReadiness, READY_POLLER_WINDOW_MS, type Readiness } from '../readiness';

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
          `503 temporal_unavailable when the Temporal frontend does not answer within ${PROBE_TIMEOUT_MS / 1000} s; ` +
          `503 temporal_persistence_unavailable when the frontend answers but its database does not (within ${PROBE_TIMEOUT_MS / 1000} s); ` +
          `503 no_worker_polling when no worker polled the task queue's workflow tasks in the last ${READY_POLLER_WINDOW_MS / 1000} s ` +
          '(starts and PINs would wait for one). Every 503 carries Retry-After and a message naming what is down.',
        response: {
          200: z.object({ ok: z.literal(true) }),
          503: z.object({ ok: z.literal(false), error: z.string(), message: z.string().optional() }),
        },
      },
    },
    async (_req, reply) => {
      const r = await checkReadiness(ctx.mpf);
      if (r.ready) return { ok: true as const };
      reply.header('retry-after', '5');
      return reply.code(503).send({ ok: false as const, error: r.error ?? 'temporal_unavailable', message: readinessMessage(r.error, ctx.mpf.taskQueue) });
    },
  );

  app.get('/openapi.json', { schema: { hide: true } }, async () => root.swagger());
}

/** What a 503 of /readyz says is down. */
function readinessMessage(error: Readiness['error'], taskQueue: string): string {
  if (error === 'no_worker_polling') return `no worker polled task queue ${taskQueue} in the last ${READY_POLLER_WINDOW_MS / 1000} s`;
  if (error === 'temporal_persistence_unavailable') {
    return "Temporal's persistence (its database) is unavailable: the Temporal frontend answers but cannot read or write flows";
  }
  return 'the Temporal server (its frontend) cannot be reached';
}
