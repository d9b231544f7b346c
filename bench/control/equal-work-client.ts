/**
 * The equal-work control's client and webhook receiver, as a competent engineer writes them:
 *
 * - the client validates what callers send with zod (the contract's field schemas, as ours does),
 *   starts a flow with update-with-start and sends the PIN by update; no tokens, memo, search
 *   attributes, idempotency records, limits or PIN budget;
 * - the receiver (fastify, as our gateway) takes the provider's notification on
 *   `POST /notify/<secret>/<workflow id>`, checks the one deployment-wide secret in constant time,
 *   and signals the flow with the parsed body; a flow that already closed is acknowledged.
 */
import { randomBytes } from 'node:crypto';
import { type Client, WithStartWorkflowOperation, WorkflowNotFoundError } from '@temporalio/client';
import Fastify, { type FastifyInstance } from 'fastify';
import { z } from 'zod';
import { describeZodError, differentCurrencies, HostedLinkRequest, SwapInitFields, WalletPin } from '../../src/contract/provider';
import { secretDigest, secretMatches } from '../../src/auth/secrets';
import {
  type EqualLinkView,
  equalLinkCreatedUpdate,
  equalNotificationSignal,
  equalPinUpdate,
  equalSwapInitializedUpdate,
  type EqualSwapView,
} from './equal-work-workflows';

const SwapStart = SwapInitFields.omit({ notification_url: true }).refine(...differentCurrencies);
const LinkStart = HostedLinkRequest.omit({ notification_url: true }).extend({ currency: HostedLinkRequest.shape.currency.default('NGN') });
const Pin = z.object({ wallet_pin: WalletPin });

function parse<T extends z.ZodType>(schema: T, value: unknown): z.output<T> {
  const r = schema.safeParse(value);
  if (!r.success) throw new Error(`invalid request: ${describeZodError(r.error)}`);
  return r.data;
}

export interface EqualWorkClientOptions {
  client: Client;
  taskQueue: string;
  /** The receiver's base URL with its secret (`http://127.0.0.1:port/notify/<secret>`). */
  notifyBaseUrl: string;
  notificationWaitSeconds: number;
  linkLifetimeSeconds: number;
}

export class EqualWorkClient {
  constructor(private readonly o: EqualWorkClientOptions) {}

  private async start<V>(workflowType: string, workflowId: string, input: unknown, update: typeof equalSwapInitializedUpdate | typeof equalLinkCreatedUpdate): Promise<V> {
    const op = new WithStartWorkflowOperation(workflowType, {
      workflowId,
      taskQueue: this.o.taskQueue,
      args: [input],
      workflowIdConflictPolicy: 'FAIL',
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
    });
    return (await this.o.client.workflow.executeUpdateWithStart(update, { startWorkflowOperation: op })) as V;
  }

  /** Starts `swapeq-<txn_ref>`; answers once the provider initialised it. */
  async startSwap(body: z.input<typeof SwapStart>): Promise<{ swapId: string; view: EqualSwapView }> {
    const req = parse(SwapStart, body);
    const swapId = `swapeq-${req.txn_ref}`;
    const input = { request: { ...req, notification_url: `${this.o.notifyBaseUrl}/${swapId}` }, notification_wait_seconds: this.o.notificationWaitSeconds };
    return { swapId, view: await this.start<EqualSwapView>('swapEqualWorkflow', swapId, input, equalSwapInitializedUpdate) };
  }

  /** The PIN by update; answers its outcome. */
  async submitPin(swapId: string, body: z.input<typeof Pin>): Promise<string> {
    const { wallet_pin } = parse(Pin, body);
    return this.o.client.workflow.getHandle(swapId).executeUpdate(equalPinUpdate, { args: [{ wallet_pin }] });
  }

  /** Starts `paylinkeq-<txn_merchant_ref>`; answers with pay_link once the provider created it. */
  async createLink(body: z.input<typeof LinkStart>): Promise<{ linkId: string; view: EqualLinkView }> {
    const req = parse(LinkStart, body);
    const linkId = `paylinkeq-${req.txn_merchant_ref}`;
    const input = { request: { ...req, notification_url: `${this.o.notifyBaseUrl}/${linkId}` }, lifetime_seconds: this.o.linkLifetimeSeconds };
    return { linkId, view: await this.start<EqualLinkView>('linkEqualWorkflow', linkId, input, equalLinkCreatedUpdate) };
  }
}

export interface EqualWorkReceiver {
  /** `http://127.0.0.1:<port>/notify/<secret>` */
  notifyBaseUrl: string;
  close(): Promise<void>;
}

/** The webhook receiver on loopback: the provider's notification becomes a signal. */
export async function startEqualWorkReceiver(client: Client): Promise<EqualWorkReceiver> {
  const secret = randomBytes(24).toString('base64url');
  const expected = secretDigest(secret);
  const app: FastifyInstance = Fastify({ logger: false, bodyLimit: 64 * 1024 });
  app.post<{ Params: { secret: string; workflowId: string } }>('/notify/:secret/:workflowId', async (req, reply) => {
    if (!secretMatches(req.params.secret, expected)) return reply.code(404).send({ error: 'not_found' });
    try {
      await client.workflow.getHandle(req.params.workflowId).signal(equalNotificationSignal, req.body);
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
      return { received: true, applied: false };
    }
    return { received: true };
  });
  const address = await app.listen({ host: '127.0.0.1', port: 0 });
  return { notifyBaseUrl: `${address}/notify/${secret}`, close: () => app.close() };
}
