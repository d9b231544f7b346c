/**
 * The typed client of merchant-payment-flows: what backend code, the gateway, the CLI and the demo
 * use to start and drive flows. Validates input with the contract (a bad field is an InputError
 * naming it, and nothing is started), starts flows with update-with-start so the caller gets the
 * initialization / pay_link in one call, seals the PIN before it leaves this process, and keeps
 * only hashes of the per-flow tokens (in the workflow's encrypted memo).
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import {
  type Client,
  WithStartWorkflowOperation,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
} from '@temporalio/client';
import type { QueryDefinition, SignalDefinition, UpdateDefinition } from '@temporalio/common';
import { z } from 'zod';
import { secretMatches } from '../../auth/secrets';
import { createSealer, type Sealer } from '../../codec/seal';
import { buildCategoryTree, type CategoryTree } from '../../contract/categories';
import {
  type Category,
  describeZodError,
  HostedLinkRequest,
  differentCurrencies,
  SwapInitFields,
  WalletPin,
} from '../../contract/provider';
import {
  CATEGORIES_WORKFLOW_TYPE,
  cancelLinkSignal,
  cancelSwapSignal,
  LINK_WORKFLOW_TYPE,
  linkCreatedUpdate,
  linkStateQuery,
  type LinkView,
  linkWorkflowId,
  type LinkWorkflowInput,
  notificationSignal,
  type PinOutcome,
  submitPinSignal,
  submitPinUpdate,
  SWAP_WORKFLOW_TYPE,
  swapInitializedUpdate,
  swapStateQuery,
  type SwapView,
  swapWorkflowId,
  type SwapWorkflowInput,
} from '../../workflows/messages';
import { isAlreadyStarted, isDeadlineExceeded } from './temporal-errors';
import {
  InputError,
  DuplicateFlowError,
  FlowNotFoundError,
  FlowPendingError,
  PinNotAcceptedError,
  WorkerUnavailableError,
} from './errors';
import { FLOW_STATE } from '../../workflows/search-attributes';
import { type NotificationKind, notificationUrl, pinUrl } from './urls';

export const SwapStartBody = SwapInitFields.omit({ notification_url: true }).refine(...differentCurrencies);
export type SwapStartBody = z.infer<typeof SwapStartBody>;
export const LinkCreateBody = HostedLinkRequest.omit({ notification_url: true }).extend({
  currency: HostedLinkRequest.shape.currency.default('NGN'),
});
export type LinkCreateBody = z.input<typeof LinkCreateBody>;
export const PinBody = z.object({ wallet_pin: WalletPin });

export interface MpfClientOptions {
  client: Client;
  taskQueue: string;
  /** PAYLOAD_ENCRYPTION_KEYS (for sealing PINs). */
  keys: string;
  /** GATEWAY_PUBLIC_URL: where the provider sends notifications and users open the PIN page. */
  publicUrl: string;
  /**
   * GATEWAY_NOTIFICATION_BASE_URL: base of the notification_url handed to the provider when it
   * reaches the gateway by another address than browsers do; default publicUrl.
   */
  notificationBaseUrl?: string;
  pinMaxAttempts?: number;
  swapNotificationWaitSeconds?: number;
  /** SWAP_SETTLE_WAIT_SECONDS: how long a confirmation in doubt waits for the provider's notification (default 900). */
  swapSettleWaitSeconds?: number;
  linkLifetimeSeconds?: number;
  /** How long a finished link keeps recording late notifications (default 0). */
  linkLateNotificationGraceSeconds?: number;
  /** How long a start waits for the flow's first answer before FlowPendingError (default 30 s). */
  startAnswerTimeoutMs?: number;
  /** How long a PIN submitted by update waits for the swap's answer before FlowPendingError (default 30 s). */
  pinAnswerTimeoutMs?: number;
  /** How long a state lookup waits for a worker to answer before falling back (default 10 s). */
  queryAnswerTimeoutMs?: number;
}

export interface StartedSwap {
  swap: SwapView;
  pin_url: string;
  pin_token: string;
}

export interface CreatedLink {
  link: LinkView;
}

export interface CategoriesResult {
  categories: Category[];
  tree: CategoryTree;
}

interface TokenMemo {
  pin_token_sha256?: string;
  notify_token_sha256?: string;
}

const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');
const newToken = (): string => randomBytes(32).toString('base64url'); // 256 bits

export function parseOrThrow<T extends z.ZodType>(schema: T, value: unknown, prefix = ''): z.output<T> {
  const r = schema.safeParse(value);
  if (!r.success) throw new InputError(describeZodError(r.error, prefix), r.error.issues[0]?.path.map(String).join('.') ?? '');
  return r.data;
}

export class MpfClient {
  readonly temporal: Client;
  private readonly sealer: Sealer;
  private publicUrl: string;
  private readonly notificationBaseUrl: string | undefined;

  constructor(private readonly opts: MpfClientOptions) {
    this.temporal = opts.client;
    this.sealer = createSealer(opts.keys);
    this.publicUrl = opts.publicUrl.replace(/\/+$/, '');
    this.notificationBaseUrl = opts.notificationBaseUrl?.replace(/\/+$/, '');
  }

  /** The gateway's public base URL (set after it listens when its port was 0). */
  setPublicUrl(url: string): void {
    this.publicUrl = url.replace(/\/+$/, '');
  }

  private notificationUrl(kind: NotificationKind, flowId: string, token: string): string {
    return notificationUrl(this.notificationBaseUrl ?? this.publicUrl, kind, flowId, token);
  }

  private pinUrl(swapId: string, pinToken: string): string {
    return pinUrl(this.publicUrl, swapId, pinToken);
  }

  // --------------------------------------------------------------------------------------------
  // Swaps
  // --------------------------------------------------------------------------------------------

  async startSwap(body: unknown): Promise<StartedSwap> {
    const req = parseOrThrow(SwapStartBody, body);
    const workflowId = swapWorkflowId(req.txn_ref);
    const pinToken = newToken();
    const notifyToken = newToken();
    const input: SwapWorkflowInput = {
      request: { ...req, notification_url: this.notificationUrl('swap', workflowId, notifyToken) },
      pin_max_attempts: this.opts.pinMaxAttempts ?? 3,
      notification_wait_seconds: this.opts.swapNotificationWaitSeconds ?? 0,
      ...(this.opts.swapSettleWaitSeconds !== undefined ? { settle_wait_seconds: this.opts.swapSettleWaitSeconds } : {}),
    };
    const memo: TokenMemo = { pin_token_sha256: sha256(pinToken), notify_token_sha256: sha256(notifyToken) };
    const swap = await this.startWithUpdate(SWAP_WORKFLOW_TYPE, workflowId, input, memo, swapInitializedUpdate, 'swap', () =>
      this.getSwap(workflowId),
    );
    return { swap, pin_url: this.pinUrl(workflowId, pinToken), pin_token: pinToken };
  }

  async getSwap(swapId: string): Promise<SwapView> {
    return this.queryFlow(swapId, swapStateQuery);
  }

  /**
   * Submits a PIN. `wait` (default) uses the update and returns the outcome of this PIN; otherwise
   * a signal (fire and forget) and `undefined`.
   */
  async submitPin(swapId: string, body: unknown, opts: { wait?: boolean } = {}): Promise<PinOutcome | undefined> {
    const { wallet_pin } = parseOrThrow(PinBody, body);
    const submission = { sealed_pin: this.sealer.seal(wallet_pin), submission_id: randomUUID() };
    const handle = this.temporal.workflow.getHandle(swapId);
    const waitMs = this.opts.pinAnswerTimeoutMs ?? 30_000;
    try {
      if (opts.wait === false) {
        await handle.signal(submitPinSignal, submission);
        return undefined;
      }
      return await this.temporal.withDeadline(Date.now() + waitMs, () =>
        handle.executeUpdate(submitPinUpdate, { args: [submission] }),
      );
    } catch (err) {
      if (opts.wait !== false && isDeadlineExceeded(err)) throw new FlowPendingError('swap', swapId, waitMs, 'was sent a PIN');
      if (err instanceof WorkflowNotFoundError) throw new FlowNotFoundError('swap', swapId);
      if (err instanceof WorkflowUpdateFailedError) {
        throw new PinNotAcceptedError(err.cause?.message ?? 'the swap did not accept a PIN');
      }
      throw err;
    }
  }

  async cancelSwap(swapId: string, reason?: string): Promise<SwapView> {
    await this.signalFlow(swapId, cancelSwapSignal, { reason });
    return this.getSwap(swapId);
  }

  // --------------------------------------------------------------------------------------------
  // Payment links
  // --------------------------------------------------------------------------------------------

  async createLink(body: unknown): Promise<CreatedLink> {
    const req = parseOrThrow(LinkCreateBody, body);
    const workflowId = linkWorkflowId(req.txn_merchant_ref);
    const notifyToken = newToken();
    const input: LinkWorkflowInput = {
      request: { ...req, notification_url: this.notificationUrl('paylink', workflowId, notifyToken) },
      lifetime_seconds: this.opts.linkLifetimeSeconds ?? 86_400,
      late_notification_grace_seconds: this.opts.linkLateNotificationGraceSeconds ?? 0,
    };
    const memo: TokenMemo = { notify_token_sha256: sha256(notifyToken) };
    const link = await this.startWithUpdate(LINK_WORKFLOW_TYPE, workflowId, input, memo, linkCreatedUpdate, 'payment_link', () =>
      this.getLink(workflowId),
    );
    return { link };
  }

  async getLink(linkId: string): Promise<LinkView> {
    return this.queryFlow(linkId, linkStateQuery);
  }

  async cancelLink(linkId: string, reason?: string): Promise<LinkView> {
    await this.signalFlow(linkId, cancelLinkSignal, { reason });
    return this.getLink(linkId);
  }

  // --------------------------------------------------------------------------------------------
  // Tokens and notifications
  // --------------------------------------------------------------------------------------------

  /**
   * Checks a per-flow token against the hash in the flow's memo, in constant time. A token of a
   * closed flow has expired with it. Returns 'ok', 'unknown_flow', 'bad_token' or 'closed'.
   */
  async verifyToken(flowId: string, field: keyof TokenMemo, token: string): Promise<'ok' | 'unknown_flow' | 'bad_token' | 'closed'> {
    let desc;
    try {
      desc = await this.temporal.workflow.getHandle(flowId).describe();
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return 'unknown_flow';
      throw err;
    }
    const expected = (desc.memo as TokenMemo | undefined)?.[field];
    if (typeof expected !== 'string' || typeof token !== 'string' || token.length === 0) return 'bad_token';
    const stored = Buffer.from(expected, 'hex');
    if (stored.length !== 32 || !secretMatches(token, stored)) return 'bad_token';
    return desc.status.name === 'RUNNING' ? 'ok' : 'closed';
  }

  /** Signals a flow with a received notification (the receiver checked its token first). */
  async deliverNotification(flowId: string, payload: unknown, rawBody: string): Promise<string> {
    const dedup_key = notificationDedupKey(payload, rawBody);
    await this.signalFlow(flowId, notificationSignal, { dedup_key, received_at: new Date().toISOString(), payload });
    return dedup_key;
  }

  // --------------------------------------------------------------------------------------------
  // Categories
  // --------------------------------------------------------------------------------------------

  async listCategories(): Promise<CategoriesResult> {
    const categories = await this.temporal.workflow.execute(CATEGORIES_WORKFLOW_TYPE, {
      workflowId: `categories-${randomUUID()}`,
      taskQueue: this.opts.taskQueue,
      workflowExecutionTimeout: '2 minutes',
    });
    return { categories: categories as Category[], tree: buildCategoryTree(categories as Category[]) };
  }

  // --------------------------------------------------------------------------------------------

  /**
   * Starts a flow with update-with-start (the caller gets the update's answer in the same call).
   * The workflow id is the merchant's reference: a second start, running or finished, is a
   * DuplicateFlowError carrying the existing flow's view, and never reaches the provider.
   */
  private async startWithUpdate<V>(
    workflowType: string,
    workflowId: string,
    input: SwapWorkflowInput | LinkWorkflowInput,
    memo: TokenMemo,
    update: UpdateDefinition<V, []>,
    kind: 'swap' | 'payment_link',
    existing: () => Promise<V>,
  ): Promise<V> {
    const startWorkflowOperation = new WithStartWorkflowOperation(workflowType, {
      workflowId,
      taskQueue: this.opts.taskQueue,
      args: [input],
      workflowIdConflictPolicy: 'FAIL',
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      memo: memo as Record<string, unknown>,
    });
    const waitMs = this.opts.startAnswerTimeoutMs ?? 30_000;
    try {
      return await this.temporal.withDeadline(Date.now() + waitMs, () =>
        this.temporal.workflow.executeUpdateWithStart(update, { startWorkflowOperation }),
      );
    } catch (err) {
      if (isAlreadyStarted(err)) throw new DuplicateFlowError(kind, workflowId, await existing().catch(() => undefined));
      if (isDeadlineExceeded(err)) throw new FlowPendingError(kind, workflowId, waitMs);
      throw err;
    }
  }

  /**
   * A flow's state by query, answered by a worker. When no worker answers in time, a finished
   * flow's final view is its result (kept by the server, no worker needed); a running flow is a
   * WorkerUnavailableError carrying its last state from the search attributes.
   */
  private async queryFlow<T>(flowId: string, query: QueryDefinition<T>): Promise<T> {
    const handle = this.temporal.workflow.getHandle(flowId);
    const waitMs = this.opts.queryAnswerTimeoutMs ?? 10_000;
    try {
      return await this.temporal.withDeadline(Date.now() + waitMs, () => handle.query(query));
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) throw new FlowNotFoundError(flowKindOf(flowId), flowId);
      if (!isDeadlineExceeded(err)) throw err;
    }
    const described = await handle.describe().catch((err: unknown) => {
      throw err instanceof WorkflowNotFoundError ? new FlowNotFoundError(flowKindOf(flowId), flowId) : err;
    });
    if (described.status.name === 'COMPLETED') return (await handle.result()) as T;
    const lastState = described.typedSearchAttributes.get(FLOW_STATE);
    throw new WorkerUnavailableError(flowKindOf(flowId), flowId, waitMs, lastState);
  }

  private async signalFlow<A extends unknown[]>(flowId: string, signal: SignalDefinition<A>, ...args: A): Promise<void> {
    try {
      await this.temporal.workflow.getHandle(flowId).signal(signal, ...args);
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) throw new FlowNotFoundError(flowKindOf(flowId), flowId);
      throw err;
    }
  }
}

function flowKindOf(flowId: string): string {
  return flowId.startsWith('swap-') ? 'swap' : flowId.startsWith('paylink-') ? 'payment_link' : 'flow';
}

/** The payload's own notification id when it has one, else a hash of the raw body. */
function notificationDedupKey(payload: unknown, rawBody: string): string {
  if (payload && typeof payload === 'object') {
    const top = payload as Record<string, unknown>;
    const inner = top.data && typeof top.data === 'object' ? (top.data as Record<string, unknown>) : {};
    for (const v of [inner.notification_id, top.notification_id, top.event_id, top.id]) {
      if (typeof v === 'string' && v.length > 0 && v.length <= 200) return `id:${v}`;
    }
  }
  return `sha256:${sha256(rawBody)}`;
}
