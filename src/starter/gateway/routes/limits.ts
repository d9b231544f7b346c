/**
 * Today's use of the daily limits (read access): `GET /v1/admin/limits`, the deployment's and,
 * with `?user_ref=`, that user's, one row per configured limit (an amount limit: one per currency
 * it names). Read from the ledgers in Temporal (starter/client/limits.ts); a ledger is a running
 * workflow, so a worker answers: with none, 503 worker_unavailable.
 */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { LIMIT_NAMES } from '../../../config/limits-env';
import { Reference } from '../../../contract/provider';
import { ADMIN_SECURITY, type GatewayContext } from '../context';
import { ErrorBody, WorkerUnavailableBody } from '../schemas';

const LimitUsageSchema = z
  .object({
    limit: z.enum(LIMIT_NAMES).describe('the limit, as a refusal names it'),
    scope: z.enum(['user', 'deployment']),
    user_ref: z.string().optional().describe('the user asked about (scope user)'),
    used: z.number().describe("today's use: a count, or an amount in unit"),
    max: z.number().describe('the limit configured'),
    unit: z.string().describe('count, or the currency of an amount limit'),
    day: z.string().describe('the UTC day counted, YYYY-MM-DD'),
    resets_at: z.string().describe('when the count starts afresh (00:00 UTC), ISO 8601'),
  })
  .meta({ id: 'LimitUsage' });

const LimitsUsageSchema = z.object({ data: z.array(LimitUsageSchema) }).meta({ id: 'LimitsUsage' });

const LimitsQuery = z.object({ user_ref: Reference.optional().describe("also this user's use of the per-user limits") });

export function registerLimitRoutes(root: FastifyInstance, ctx: GatewayContext): void {
  const app = root.withTypeProvider<ZodTypeProvider>();
  app.get(
    '/v1/admin/limits',
    {
      config: { apiKey: true, access: 'read' },
      schema: {
        tags: ['limits'],
        summary: "Today's use of each daily limit",
        operationId: 'getLimitsUsage',
        description:
          "One row per limit configured (LIMIT_*; an amount limit: one per currency it names): the deployment's, and with user_ref that user's. " +
          'used counts every flow started today (UTC), as the limit does. Empty when no limit is set. The ledgers are read by query: 503 ' +
          'worker_unavailable when no worker answers.',
        security: ADMIN_SECURITY,
        querystring: LimitsQuery,
        response: { 200: LimitsUsageSchema, 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 503: WorkerUnavailableBody },
      },
    },
    async (req) => ({ data: await ctx.mpf.limitsUsage(req.query.user_ref) }),
  );
}
