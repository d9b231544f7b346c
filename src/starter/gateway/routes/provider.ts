/**
 * The provider guard for operators (operator role): `GET /v1/admin/provider` (the pause, each
 * breaker, the thresholds and the last operator actions), `POST /v1/admin/provider/pause` and
 * `/resume`. A pause stops every money-moving call deployment-wide without stopping the workers
 * (reads, timers, notifications and views go on) and survives restarts of every process: it is
 * kept in Temporal. Each action is recorded with who did it: the API key (its id and label), or
 * the person whose access token it was (`person <name> (sub <subject>)`).
 */
import type { KeyIdentity } from '../../../auth/keyring';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { closedGuardView, DEFAULT_BREAKER } from '../../../contract/provider-guard';
import { GuardViewSchema } from '../../../contract/provider-guard-view';
import { actorOfRequest, ADMIN_SECURITY, type GatewayContext } from '../context';
import { ErrorBody, WorkerUnavailableBody } from '../schemas';

const TAGS = ['provider guard'];

const PauseBody = z.object({ reason: z.string().min(1).max(500).describe('why (kept with the pause, shown to whoever is refused)') }).meta({ id: 'ProviderPause' });

/** The identity an action by an API key is recorded under: its id and label (a person's: actorOfRequest). */
export function actorOf(key: KeyIdentity | undefined): string {
  return key ? `key ${key.id}${key.label ? ` (${key.label})` : ''}`.slice(0, 200) : 'gateway key';
}

export function registerProviderRoutes(root: FastifyInstance, ctx: GatewayContext): void {
  const app = root.withTypeProvider<ZodTypeProvider>();
  const { mpf } = ctx;
  const config = { apiKey: true, access: 'admin' } as const;
  const responses = { 200: GuardViewSchema, 401: ErrorBody, 403: ErrorBody, 503: WorkerUnavailableBody };

  app.get(
    '/v1/admin/provider',
    {
      config: { ...config, personRead: true },
      schema: {
        tags: TAGS,
        summary: 'The provider guard: pause and breakers',
        operationId: 'getProviderGuard',
        description: 'Whether money-moving calls are paused, each breaker (initiate, confirm, create), its thresholds and the last operator actions.',
        security: ADMIN_SECURITY,
        response: responses,
      },
    },
    async () => (await mpf.providerStatus()) ?? closedGuardView(DEFAULT_BREAKER, Date.now()),
  );

  app.post(
    '/v1/admin/provider/pause',
    {
      config,
      schema: {
        tags: TAGS,
        summary: 'Pause every money-moving call (kill switch)',
        operationId: 'pauseProvider',
        description:
          'Deployment-wide and at once (workers read it every second): no swap initiation, confirmation or link creation is sent. ' +
          'New swaps and links get 503 provider_unavailable; a PIN that arrives waits inside its swap\'s window (a swap whose window ' +
          'closes while paused expires, nothing sent); reads, timers, notifications and views keep working. Survives restarts.',
        security: ADMIN_SECURITY,
        body: PauseBody,
        response: { ...responses, 400: ErrorBody },
      },
    },
    async (req) => mpf.pauseProvider(actorOfRequest(req), req.body.reason),
  );

  app.post(
    '/v1/admin/provider/resume',
    {
      config,
      schema: {
        tags: TAGS,
        summary: 'Resume money-moving calls',
        operationId: 'resumeProvider',
        description: 'Ends the pause; held confirmations still inside their window go on. An open breaker stays open until its probe succeeds.',
        security: ADMIN_SECURITY,
        response: responses,
      },
    },
    async (req) => mpf.resumeProvider(actorOfRequest(req)),
  );
}

