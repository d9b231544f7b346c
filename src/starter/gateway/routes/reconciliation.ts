/**
 * Reconciliation for operators (an API key of role operator, or a person's access token): the flows in needs_reconciliation, and `resolve`, which
 * records what was checked at the provider and moves the flow to `reconciled` with an audit record
 * in its view (the workflow's `resolve` update; the same one Temporal Web and `mpf reconcile
 * resolve` send).
 */
import type { KeyIdentity } from '../../../auth/keyring';
import { type PersonIdentity, personActor } from '../../../auth/person-tokens';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { InputError } from '../../client/errors';
import { ListQueryDoc } from '../../client/lists';
import { NotResolvableError } from '../../client/errors';
import { ADMIN_SECURITY, type GatewayContext } from '../context';
import { IDEMPOTENCY_RESPONSES, IdempotencyHeaders, IdempotencyInUseBody, idempotent } from '../idempotency';
import { ErrorBody, LinkViewSchema, SwapViewSchema, WorkerUnavailableBody } from '../schemas';
import { FlowPageSchema } from './lists';

const TAGS = ['reconciliation'];

export const ResolveBody = z
  .object({
    outcome: z.enum(['confirmed', 'paid', 'failed']).describe('what the provider shows: confirmed | failed for a swap, paid | failed for a payment link'),
    provider_reference: z.string().min(1).max(100).describe("the provider's reference checked out of band (e.g. the payment_ref, a statement line)"),
    operator: z
      .string()
      .min(1)
      .max(100)
      .optional()
      .describe("who decided, in words; the audit record's operator is always the credential that resolved it (the API key's id and label, or the person's name and subject), and this name is kept in the note"),
    note: z.string().min(1).max(1000).describe('what was checked and done (fulfilled, refunded, …); no tokens or secrets'),
  })
  .meta({ id: 'Resolve' });

const FlowParams = z.object({ flow_id: z.string().describe('swap-<txn_ref> or paylink-<txn_merchant_ref>') });
const NotResolvableBody = z
  .object({ error: z.literal('not_resolvable'), message: z.string(), swap: SwapViewSchema.optional(), link: LinkViewSchema.optional() })
  .meta({ id: 'NotResolvable' });

export function registerReconciliationRoutes(root: FastifyInstance, ctx: GatewayContext): void {
  const app = root.withTypeProvider<ZodTypeProvider>();
  const { mpf } = ctx;

  app.get(
    '/v1/admin/reconciliations',
    {
      config: { apiKey: true, access: 'admin', personRead: true },
      schema: {
        tags: TAGS,
        summary: 'Flows waiting for reconciliation',
        description:
          'Swaps and payment links in needs_reconciliation (money may have moved and nothing settled it), newest first; ' +
          'kind=swap|payment_link narrows it; limit and page_token as in the lists.',
        security: ADMIN_SECURITY,
        querystring: ListQueryDoc.extend({ kind: z.enum(['swap', 'payment_link']).optional() }),
        response: { 200: FlowPageSchema, 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 503: WorkerUnavailableBody },
      },
    },
    async (req) => {
      const { kind, ...rest } = req.query as Record<string, unknown> & { kind?: 'swap' | 'payment_link' };
      if ('state' in rest) throw new InputError('state: is always needs_reconciliation here', 'state');
      return mpf.listFlows(kind ?? 'any', { ...rest, state: 'needs_reconciliation' });
    },
  );

  app.post(
    '/v1/admin/flows/:flow_id/resolve',
    {
      config: { apiKey: true, access: 'admin' },
      schema: {
        tags: TAGS,
        summary: 'Resolve a flow in needs_reconciliation',
        description:
          "Records the operator's decision after checking the provider out of band and moves the flow to reconciled, with the " +
          'audit record (outcome, provider_reference, operator, note, resolved_at) in its view. 409 not_resolvable when the flow ' +
          'is in another state (with its view); 400 naming the field for a bad resolution. Temporal Web and the CLI send the same ' +
          '`resolve` update.',
        security: ADMIN_SECURITY,
        params: FlowParams,
        headers: IdempotencyHeaders,
        body: ResolveBody,
        response: {
          200: z.union([SwapViewSchema, LinkViewSchema]),
          400: ErrorBody,
          401: ErrorBody,
          403: ErrorBody,
          404: ErrorBody,
          409: z.union([NotResolvableBody, IdempotencyInUseBody]),
          ...IDEMPOTENCY_RESPONSES,
          503: WorkerUnavailableBody,
        },
      },
    },
    async (req, reply) => {
      const flowId = req.params.flow_id;
      return idempotent(ctx, {
        route: 'POST /v1/admin/flows/{flow_id}/resolve',
        fields: () => ({ flow_id: flowId, ...req.body }),
        run: async () => {
          try {
            return { status: 200, body: await mpf.resolveFlow(flowId, asResolvedBy(req.body, req.apiKey, req.person)) };
          } catch (err) {
            if (!(err instanceof NotResolvableError)) throw err;
            return { status: 409, body: { error: 'not_resolvable', message: err.message, [err.kind === 'swap' ? 'swap' : 'link']: err.view } };
          }
        },
      })(req, reply);
    },
  );
}

/**
 * Operators are named by their credential: the audit record's `operator` (and so the flow's
 * `*.reconciled` event) is the API key that resolved it, `key <id> (<label>)`, or the person whose
 * access token it was, `person <name> (sub <subject>)`; a name given in the body stays, as words,
 * in the note.
 */
export function asResolvedBy(body: z.infer<typeof ResolveBody>, key: KeyIdentity | undefined, person?: PersonIdentity): Record<string, unknown> {
  const { operator: said, ...rest } = body;
  const credential = person ? personActor(person) : key ? `key ${key.id}${key.label ? ` (${key.label})` : ''}` : undefined;
  const operator = credential ? credential.slice(0, 100) : (said ?? '');
  const note = said && credential ? `${rest.note} [named in the request: ${said}]`.slice(0, 1000) : rest.note;
  return { ...rest, operator, note };
}
