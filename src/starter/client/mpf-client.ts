/**
 * The typed client of merchant-payment-flows: what backend code, the gateway, the CLI and the demo
 * use to start and drive flows. Validates input with the contract (a bad field is an InputError
 * naming it, and nothing is started), starts flows with update-with-start so the caller gets the
 * initialization / pay_link in one call, seals the PIN before it leaves this process, and keeps
 * only hashes of the per-flow tokens (in the workflow's encrypted memo).
 */
import { createHash, randomUUID } from 'node:crypto';
import { DEFAULT_SWAP_NOTIFICATION_WAIT_SECONDS } from '../../config/flow-defaults';
import {
  type Client,
  WithStartWorkflowOperation,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
} from '@temporalio/client';
import type { QueryDefinition, SignalDefinition, UpdateDefinition } from '@temporalio/common';
import { z } from 'zod';
import { secretMatches } from '../../auth/secrets';
import { createSealer, type Sealer, sealUrlLastSegment } from '../../codec/seal';
import { buildCategoryTree, type CategoryTree } from '../../contract/categories';
import {
  type Category,
  compactNotificationPayload,
  notificationIdOf,
  describeZodError,
  HostedLinkRequest,
  differentCurrencies,
  SwapInitFields,
  WalletPin,
} from '../../contract/provider';
import {
  CATEGORIES_WORKFLOW_TYPE,
  cancelLinkUpdate,
  cancelSwapUpdate,
  resolveLinkUpdate,
  resolveSwapUpdate,
  type ResolveInput,
  LINK_STATES,
  LINK_TERMINAL_STATES,
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
  SWAP_STATES,
  SWAP_TERMINAL_STATES,
  SWAP_WORKFLOW_TYPE,
  swapInitializedUpdate,
  swapStateQuery,
  type SwapView,
  swapWorkflowId,
  type SwapWorkflowInput,
} from '../../workflows/messages';
import { isAlreadyStarted, isDeadlineExceeded, isNoPoller, isTemporalUnavailable } from './temporal-errors';
import {
  InputError,
  DuplicateFlowError,
  FlowClosedError,
  FlowNotFoundError,
  FlowPendingError,
  NotCancellableError,
  PinNotAcceptedError,
  TemporalUnavailableError,
  WorkerUnavailableError,
} from './errors';
import { FLOW_STATE } from '../../workflows/search-attributes';
import { linkStaticDetails, linkStaticSummary, swapStaticDetails, swapStaticSummary } from '../../workflows/flow-summary';
import { notificationUrl, pinUrl } from './urls';
import { IdempotencyStore } from './idempotency';
import { type FlowPage, listFlows, parseListFilter } from './lists';
import { type PinTokenSeed, PinTokens } from './pin-tokens';
import { FlowTokens, type TokenPurpose } from './flow-tokens';
import { checkResolveInput } from '../../workflows/reconciliation';
import { NotResolvableError } from './reconcile';
import { checkWebhookUrl, readDeliveries, WebhookUrl, withDeliveries } from './merchant-events';
import { type FlowKind, flowKindOf as kindOf } from '../../workflows/flow-ids';
import type { CategoriesWorkflow, PaymentLinkWorkflow, SwapWorkflow } from './workflow-refs';

export const SwapStartBody = SwapInitFields.omit({ notification_url: true })
  .extend({ webhook_url: WebhookUrl.optional() })
  .refine(...differentCurrencies);
export type SwapStartBody = z.infer<typeof SwapStartBody>;
export const LinkCreateBody = HostedLinkRequest.omit({ notification_url: true }).extend({
  currency: HostedLinkRequest.shape.currency.default('NGN'),
  webhook_url: WebhookUrl.optional(),
});
export type LinkCreateBody = z.input<typeof LinkCreateBody>;
export const PinBody = z.object({ wallet_pin: WalletPin });

/** What a caller passes to startSwap (the contract's zod schema, inferred): validated again at run time. */
export type SwapStartRequest = z.input<typeof SwapStartBody>;
/** What a caller passes to createLink; `currency` defaults to NGN (the only one the provider takes). */
export type LinkCreateRequest = z.input<typeof LinkCreateBody>;
/** What a caller passes to submitPin: the user's wallet PIN, sealed before it leaves this process. */
export type PinRequest = z.input<typeof PinBody>;

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
  /** SWAP_NOTIFICATION_WAIT_SECONDS: how long a confirmed swap stays open for the provider's notification (default DEFAULT_SWAP_NOTIFICATION_WAIT_SECONDS). */
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
  /** How long the category list waits for a worker before WorkerUnavailableError (default 10 s). */
  categoriesAnswerTimeoutMs?: number;
  /**
   * A call to Temporal that has not answered after this long checks that the server answers at
   * all (GetSystemInfo, 2 s deadline), and again every as long; when it does not, the call ends
   * with TemporalUnavailableError instead of retrying for half a minute (default 2 s).
   */
  temporalProbeIntervalMs?: number;
  /** NODE_ENV=production: a loopback webhook_url in a start body is refused. */
  production?: boolean;
  /**
   * How long after its issue a pin_token or notification token is checked with the payload keys
   * alone (no Temporal call); older ones are checked against the flow's memo (default 3600 s; keep
   * it well under the namespace's retention, see flow-tokens.ts).
   */
  tokenLocalWindowSeconds?: number;
}

/** Temporal Web's summary and details of a flow, given at start (flow-summary.ts: no personal data). */
interface UserMetadata {
  staticSummary: string;
  staticDetails: string;
}

/** How a closed execution that did not complete normally ended (absent while running or completed). */
export type FlowExecution = 'terminated' | 'timed_out' | 'failed' | 'cancelled';

/**
 * A flow's view as the client answers it: the workflow's own view, plus `execution` when the
 * execution was closed from outside the flow (terminated or cancelled in Temporal, timed out,
 * failed): `state` is then the last state it reached and `reason` says so.
 */
export type Viewed<V> = V & { execution?: FlowExecution };

/** A closed or running flow as the server describes it (no worker needed). */
export interface FlowStatusSummary {
  /** RUNNING, COMPLETED, TERMINATED, … */
  status: string;
  /** The last state the flow published (search attribute MpfState). */
  state: string | undefined;
}

const EXECUTION_OF_STATUS: Record<string, FlowExecution> = {
  TERMINATED: 'terminated',
  TIMED_OUT: 'timed_out',
  FAILED: 'failed',
  CANCELLED: 'cancelled',
  CANCELED: 'cancelled',
};

const TERMINAL_STATES: ReadonlySet<string> = new Set<string>([...SWAP_TERMINAL_STATES, ...LINK_TERMINAL_STATES]);

function closedExecutionReason(kind: string, execution: FlowExecution, state: string): string {
  const what = kind.replace('_', ' ');
  const how =
    execution === 'terminated'
      ? 'terminated in Temporal by an operator'
      : execution === 'cancelled'
        ? 'cancelled in Temporal by an operator'
        : execution === 'timed_out'
          ? 'timed out in Temporal'
          : 'failed in Temporal';
  return (
    `the ${what} was ${how} while ${state}; it will not move again. The provider may still hold this ${what} ` +
    `(check its state with the provider, e.g. a payment made or a confirmation applied, before acting)`
  );
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

interface TokenMemo extends Partial<PinTokenSeed> {
  pin_token_sha256?: string;
  notify_token_sha256?: string;
  /** The Idempotency-Key record (workflow id) of the request that started the flow, if any. */
  idempotency_id?: string;
}

/** How a start was asked for: the Idempotency-Key record that owns it, if any. */
export interface StartOptions {
  idempotencyId?: string;
}

const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');

/** The memo field that keeps the hash of each purpose's token. */
const TOKEN_PURPOSE: Partial<Record<keyof TokenMemo, TokenPurpose>> = { pin_token_sha256: 'pin', notify_token_sha256: 'notify' };

export function parseOrThrow<T extends z.ZodType>(schema: T, value: unknown, prefix = ''): z.output<T> {
  const r = schema.safeParse(value);
  if (!r.success) throw new InputError(describeZodError(r.error, prefix), r.error.issues[0]?.path.map(String).join('.') ?? '');
  return r.data;
}

export class MpfClient {
  readonly temporal: Client;
  private readonly sealer: Sealer;
  /** v1 pin_tokens (swaps started before v2: handed out again by pinTokenOf). */
  private readonly pinTokens: PinTokens;
  /** v2 pin and notification tokens, checked without a Temporal call. */
  private readonly tokens: FlowTokens;
  /** Idempotency-Key records (the gateway's retried POSTs), kept in Temporal. */
  readonly idempotency: IdempotencyStore;
  private publicUrl: string;
  private readonly notificationBaseUrl: string | undefined;

  constructor(private readonly opts: MpfClientOptions) {
    this.temporal = opts.client;
    this.sealer = createSealer(opts.keys);
    this.pinTokens = new PinTokens(opts.keys);
    this.tokens = new FlowTokens(opts.keys, opts.tokenLocalWindowSeconds !== undefined ? { localWindowSeconds: opts.tokenLocalWindowSeconds } : {});
    this.idempotency = new IdempotencyStore({ client: opts.client, taskQueue: opts.taskQueue, keys: opts.keys });
    this.publicUrl = opts.publicUrl.replace(/\/+$/, '');
    this.notificationBaseUrl = opts.notificationBaseUrl?.replace(/\/+$/, '');
  }

  /** The task queue this client starts flows on (the gateway's readiness checks its pollers). */
  get taskQueue(): string {
    return this.opts.taskQueue;
  }

  /** The gateway's public base URL (set after it listens when its port was 0). */
  setPublicUrl(url: string): void {
    this.publicUrl = url.replace(/\/+$/, '');
  }

  private notificationUrl(kind: FlowKind, flowId: string, token: string): string {
    return notificationUrl(this.notificationBaseUrl ?? this.publicUrl, kind, flowId, token);
  }

  private pinUrl(swapId: string, pinToken: string): string {
    return pinUrl(this.publicUrl, swapId, pinToken);
  }

  // --------------------------------------------------------------------------------------------
  // Swaps
  // --------------------------------------------------------------------------------------------

  async startSwap(body: SwapStartRequest, start: StartOptions = {}): Promise<StartedSwap> {
    const { webhook_url, ...req } = parseOrThrow(SwapStartBody, body);
    checkWebhookUrl(webhook_url, this.opts.production ?? false);
    const workflowId = swapWorkflowId(req.txn_ref);
    const { token: pinToken, seed } = this.tokens.issue('pin', workflowId);
    const notifyToken = this.tokens.issue('notify', workflowId).token;
    const input: SwapWorkflowInput = {
      request: { ...req, notification_url: sealUrlLastSegment(this.notificationUrl('swap', workflowId, notifyToken), this.sealer) },
      pin_max_attempts: this.opts.pinMaxAttempts ?? 3,
      notification_wait_seconds: this.opts.swapNotificationWaitSeconds ?? DEFAULT_SWAP_NOTIFICATION_WAIT_SECONDS,
      ...(this.opts.swapSettleWaitSeconds !== undefined ? { settle_wait_seconds: this.opts.swapSettleWaitSeconds } : {}),
      ...(webhook_url ? { webhook_url } : {}),
    };
    const memo: TokenMemo = {
      pin_token_sha256: sha256(pinToken),
      notify_token_sha256: sha256(notifyToken),
      pin_token_nonce: seed.nonce,
      pin_token_key: seed.key,
      ...(start.idempotencyId ? { idempotency_id: start.idempotencyId } : {}),
    };
    const startedAt = new Date().toISOString();
    const metadata: UserMetadata = {
      staticSummary: swapStaticSummary(req),
      staticDetails: swapStaticDetails({ ...req, pin_max_attempts: input.pin_max_attempts, started_at: startedAt }),
    };
    const op = new WithStartWorkflowOperation<SwapWorkflow>(SWAP_WORKFLOW_TYPE, this.startOptions(workflowId, input, memo, metadata));
    const swap = await this.startWithUpdate(op, swapInitializedUpdate, 'swap', () => this.getSwap(workflowId));
    return { swap, pin_url: this.pinUrl(workflowId, pinToken), pin_token: pinToken };
  }

  /** The swap's view, with the deliveries of its merchant events. */
  async getSwap(swapId: string): Promise<Viewed<SwapView>> {
    return this.withEventDeliveries(swapId, await this.guard(() => this.queryFlow(swapId, swapStateQuery), swapId));
  }

  /**
   * Submits a PIN. `wait` (default) uses the update and returns the outcome of this PIN; otherwise
   * a signal (fire and forget) and `undefined`.
   */
  async submitPin(swapId: string, body: PinRequest, opts: { wait?: boolean; submissionId?: string } = {}): Promise<PinOutcome | undefined> {
    const { wallet_pin } = parseOrThrow(PinBody, body);
    // A caller's own submission id (e.g. from an Idempotency-Key) makes a resent PIN the same
    // submission: the swap answers its recorded outcome instead of counting a second attempt.
    const submission = { sealed_pin: this.sealer.seal(wallet_pin), submission_id: opts.submissionId ?? randomUUID() };
    const handle = this.temporal.workflow.getHandle(swapId);
    const waitMs = this.opts.pinAnswerTimeoutMs ?? 30_000;
    try {
      if (opts.wait === false) {
        await this.guard(() => handle.signal(submitPinSignal, submission), swapId);
        return undefined;
      }
      return await this.guard(
        () => this.temporal.withDeadline(Date.now() + waitMs, () => handle.executeUpdate(submitPinUpdate, { args: [submission] })),
        swapId,
      );
    } catch (err) {
      if (err instanceof TemporalUnavailableError) throw err;
      if (opts.wait !== false && isDeadlineExceeded(err)) throw new FlowPendingError('swap', swapId, waitMs, 'was sent a PIN');
      if (err instanceof WorkflowNotFoundError) {
        // Closed (it takes no PIN any more) or never started.
        const closed = await this.flowStatus(swapId);
        if (closed && closed.status !== 'RUNNING') throw new FlowClosedError('swap', swapId, closed.state);
        throw new FlowNotFoundError('swap', swapId);
      }
      if (err instanceof WorkflowUpdateFailedError) {
        throw new PinNotAcceptedError(err.cause?.message ?? 'the swap did not accept a PIN');
      }
      throw err;
    }
  }

  /**
   * Cancels a swap awaiting its PIN through the `cancelAndWait` update: answers its final view, or
   * throws NotCancellableError with the current view when the swap's validator refuses.
   */
  async cancelSwap(swapId: string, reason?: string): Promise<SwapView> {
    return this.cancelFlow(swapId, 'swap', cancelSwapUpdate, reason, () => this.getSwap(swapId));
  }

  // --------------------------------------------------------------------------------------------
  // Payment links
  // --------------------------------------------------------------------------------------------

  async createLink(body: LinkCreateRequest, start: StartOptions = {}): Promise<CreatedLink> {
    const { webhook_url, ...req } = parseOrThrow(LinkCreateBody, body);
    checkWebhookUrl(webhook_url, this.opts.production ?? false);
    const workflowId = linkWorkflowId(req.txn_merchant_ref);
    const notifyToken = this.tokens.issue('notify', workflowId).token;
    const input: LinkWorkflowInput = {
      request: { ...req, notification_url: sealUrlLastSegment(this.notificationUrl('payment_link', workflowId, notifyToken), this.sealer) },
      lifetime_seconds: this.opts.linkLifetimeSeconds ?? 86_400,
      late_notification_grace_seconds: this.opts.linkLateNotificationGraceSeconds ?? 0,
      ...(webhook_url ? { webhook_url } : {}),
    };
    const memo: TokenMemo = { notify_token_sha256: sha256(notifyToken), ...(start.idempotencyId ? { idempotency_id: start.idempotencyId } : {}) };
    const metadata: UserMetadata = {
      staticSummary: linkStaticSummary(input.request),
      staticDetails: linkStaticDetails({ ...input.request, lifetime_seconds: input.lifetime_seconds, started_at: new Date().toISOString() }),
    };
    const op = new WithStartWorkflowOperation<PaymentLinkWorkflow>(LINK_WORKFLOW_TYPE, this.startOptions(workflowId, input, memo, metadata));
    const link = await this.startWithUpdate(op, linkCreatedUpdate, 'payment_link', () => this.getLink(workflowId));
    return { link };
  }

  /** The link's view, with the deliveries of its merchant events. */
  async getLink(linkId: string): Promise<Viewed<LinkView>> {
    return this.withEventDeliveries(linkId, await this.guard(() => this.queryFlow(linkId, linkStateQuery), linkId));
  }

  /** Merges the delivery records of the flow's events (from `events-<flow_id>`) into its view. */
  private async withEventDeliveries<V extends { events?: SwapView['events'] }>(flowId: string, view: V): Promise<V> {
    if (!view.events?.length) return view;
    const waitMs = Math.min(this.queryAnswerTimeoutMs(), 5_000);
    return withDeliveries(view, await readDeliveries(this.temporal, flowId, waitMs));
  }

  /** Cancels a link awaiting payment (the `cancelAndWait` update); NotCancellableError otherwise. */
  async cancelLink(linkId: string, reason?: string): Promise<LinkView> {
    return this.cancelFlow(linkId, 'payment_link', cancelLinkUpdate, reason, () => this.getLink(linkId));
  }

  // --------------------------------------------------------------------------------------------
  // Idempotent starts, reconciliation, lists
  // --------------------------------------------------------------------------------------------

  /**
   * A swap's pin_token and pin_url again (derived from the seed in its encrypted memo: a v2 token,
   * or a v1 one when the memo's hash says the swap was started with one); undefined for a swap
   * started before tokens were derived, or whose seed key left the ring.
   */
  async pinTokenOf(swapId: string): Promise<{ pin_token: string; pin_url: string } | undefined> {
    const memo = (await this.guard(() => this.temporal.workflow.getHandle(swapId).describe(), swapId)).memo as TokenMemo | undefined;
    if (!memo?.pin_token_nonce || !memo.pin_token_key || !memo.pin_token_sha256) return undefined;
    const candidates = [
      this.tokens.derive('pin', swapId, { nonce: memo.pin_token_nonce, key: memo.pin_token_key }),
      this.pinTokens.derive(swapId, { pin_token_nonce: memo.pin_token_nonce, pin_token_key: memo.pin_token_key }),
    ];
    const token = candidates.find((t) => t !== undefined && sha256(t) === memo.pin_token_sha256);
    return token ? { pin_token: token, pin_url: this.pinUrl(swapId, token) } : undefined;
  }

  /** Whether the flow was started by the request that holds the Idempotency-Key record `idempotencyId`. */
  async startedBy(flowId: string, idempotencyId: string): Promise<boolean> {
    try {
      const desc = await this.guard(() => this.temporal.workflow.getHandle(flowId).describe(), flowId);
      return (desc.memo as TokenMemo | undefined)?.idempotency_id === idempotencyId;
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return false;
      throw err;
    }
  }

  /**
   * Resolves a flow in needs_reconciliation (the `resolve` update): answers its `reconciled` view
   * with the audit record. InputError for a bad input (nothing sent); NotResolvableError (with the
   * current view) when the flow is in another state or closed.
   */
  async resolveFlow(flowId: string, input: unknown): Promise<Viewed<SwapView> | Viewed<LinkView>> {
    const kind = kindOf(flowId);
    if (!kind) throw new FlowNotFoundError('flow', flowId.slice(0, 120));
    const problem = checkResolveInput(input, kind);
    if (problem) throw new InputError(problem.message, problem.field);
    const view = (): Promise<Viewed<SwapView> | Viewed<LinkView>> => (kind === 'swap' ? this.getSwap(flowId) : this.getLink(flowId));
    const waitMs = this.queryAnswerTimeoutMs();
    const handle = this.temporal.workflow.getHandle(flowId);
    const args: [ResolveInput] = [input as ResolveInput];
    try {
      return await this.guard(
        () =>
          this.temporal.withDeadline(Date.now() + waitMs, (): Promise<SwapView | LinkView> =>
            kind === 'swap' ? handle.executeUpdate(resolveSwapUpdate, { args }) : handle.executeUpdate(resolveLinkUpdate, { args }),
          ),
        flowId,
      );
    } catch (err) {
      if (err instanceof TemporalUnavailableError) throw err;
      if (isDeadlineExceeded(err)) throw new WorkerUnavailableError(kind, flowId, waitMs, (await this.flowStatus(flowId))?.state);
      if (err instanceof WorkflowNotFoundError) {
        const closed = await this.flowStatus(flowId);
        if (!closed) throw new FlowNotFoundError(kind, flowId);
        const v = await view();
        const r = v.reconciliation;
        throw new NotResolvableError(
          kind,
          flowId,
          v,
          r
            ? `it was already reconciled by ${r.operator} at ${r.resolved_at} (${r.outcome})`
            : `it is closed in state ${v.state} (a flow that completed before reconciliation stayed open cannot be resolved here; record the decision in your own books)`,
        );
      }
      if (err instanceof WorkflowUpdateFailedError) throw new NotResolvableError(kind, flowId, await view(), err.cause?.message ?? 'the flow refused the resolution');
      throw err;
    }
  }

  /** One page of swaps or payment links (visibility query on MpfFlowKind/MpfState and start time). */
  async listFlows(kind: FlowKind | 'any', filter: unknown): Promise<FlowPage> {
    const states = kind === 'swap' ? SWAP_STATES : kind === 'payment_link' ? LINK_STATES : [...new Set([...SWAP_STATES, ...LINK_STATES])];
    const f = parseListFilter(filter, states);
    const kinds: FlowKind[] = kind === 'any' ? ['swap', 'payment_link'] : [kind];
    return this.guard(() => listFlows(this.temporal, this.opts.taskQueue, kinds, f));
  }

  // --------------------------------------------------------------------------------------------
  // Tokens and notifications
  // --------------------------------------------------------------------------------------------

  /**
   * Checks a per-flow token. A v2 token made by a key of the ring for this flow, recently, is
   * 'authentic' without any call to Temporal (flow-tokens.ts): whether the flow is still open is
   * then not known, and the call that follows (update, signal, query) finds out. Any other token
   * is compared with the hash in the flow's memo, in constant time: 'ok' (flow running),
   * 'closed' (a token of a closed flow has expired with it), 'unknown_flow' or 'bad_token'.
   */
  async verifyToken(flowId: string, field: keyof TokenMemo, token: string): Promise<'authentic' | 'ok' | 'unknown_flow' | 'bad_token' | 'closed'> {
    const purpose = TOKEN_PURPOSE[field];
    if (purpose && this.tokens.verifyLocally(purpose, flowId, token)) return 'authentic';
    let desc;
    try {
      desc = await this.guard(() => this.temporal.workflow.getHandle(flowId).describe(), flowId);
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

  /**
   * A swap's user_ref (it never changes) by one state query: no describe, no merchant-event
   * lookup. Undefined when there is no such swap or no worker answers in time.
   */
  async swapUserRef(swapId: string): Promise<string | undefined> {
    try {
      return (await this.guard(() => this.queryWithinDeadline(swapId, swapStateQuery), swapId)).user_ref;
    } catch (err) {
      if (err instanceof TemporalUnavailableError) throw err;
      return undefined;
    }
  }

  /**
   * Signals a flow with a received notification (the receiver checked its token first). The
   * payload is compacted first (compactNotificationPayload: a large one keeps only the fields the
   * flows read), so deliveries cannot fill the flow's history.
   */
  async deliverNotification(flowId: string, payload: unknown, rawBody: string, dedupKey?: string): Promise<string> {
    const dedup_key = dedupKey ?? notificationDedupKey(payload, rawBody);
    await this.signalFlow(flowId, notificationSignal, {
      dedup_key,
      received_at: new Date().toISOString(),
      payload: compactNotificationPayload(payload),
    });
    return dedup_key;
  }

  /**
   * How the server describes a flow (no worker needed): its execution status and the last state it
   * published; undefined when there is no such flow.
   */
  async flowStatus(flowId: string): Promise<FlowStatusSummary | undefined> {
    try {
      const desc = await this.guard(() => this.temporal.workflow.getHandle(flowId).describe(), flowId);
      return { status: desc.status.name, state: desc.typedSearchAttributes.get(FLOW_STATE) };
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return undefined;
      throw err;
    }
  }

  // --------------------------------------------------------------------------------------------
  // Categories
  // --------------------------------------------------------------------------------------------

  /**
   * The provider's categories, through a short workflow. Bounded: when no worker answers within
   * categoriesAnswerTimeoutMs the workflow is terminated and this throws WorkerUnavailableError.
   */
  async listCategories(): Promise<CategoriesResult> {
    const workflowId = `categories-${randomUUID()}`;
    const waitMs = this.opts.categoriesAnswerTimeoutMs ?? 10_000;
    const handle = await this.guard(() =>
      this.temporal.workflow.start<CategoriesWorkflow>(CATEGORIES_WORKFLOW_TYPE, {
        workflowId,
        taskQueue: this.opts.taskQueue,
        workflowExecutionTimeout: '2 minutes',
      }),
    );
    const result = handle.result();
    result.catch(() => undefined);
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timed_out'>((resolve) => {
      timer = setTimeout(() => resolve('timed_out'), waitMs);
    });
    try {
      const categories = await this.guard(() => Promise.race([result, timedOut]));
      if (categories === 'timed_out') {
        await handle.terminate('no worker answered the category list in time').catch(() => undefined);
        throw new WorkerUnavailableError('category list', workflowId, waitMs, undefined);
      }
      return { categories, tree: buildCategoryTree(categories) };
    } finally {
      clearTimeout(timer);
    }
  }

  // --------------------------------------------------------------------------------------------

  /** The start options of a flow: its id, the task queue, the input, the token hashes, and no second start of the id. */
  private startOptions<I>(workflowId: string, input: I, memo: TokenMemo, metadata: UserMetadata) {
    return {
      // Temporal Web's Summary and Details (user metadata: encrypted by the payload codec like any payload).
      ...metadata,
      workflowId,
      taskQueue: this.opts.taskQueue,
      args: [input] as [I],
      workflowIdConflictPolicy: 'FAIL' as const,
      workflowIdReusePolicy: 'REJECT_DUPLICATE' as const,
      memo: memo as Record<string, unknown>,
    };
  }

  /**
   * Starts a flow with update-with-start (the caller gets the update's answer in the same call).
   * The workflow id is the merchant's reference: a second start, running or finished, is a
   * DuplicateFlowError carrying the existing flow's view, and never reaches the provider.
   */
  private async startWithUpdate<W extends SwapWorkflow | PaymentLinkWorkflow, V>(
    startWorkflowOperation: WithStartWorkflowOperation<W>,
    update: UpdateDefinition<V, []>,
    kind: 'swap' | 'payment_link',
    existing: () => Promise<V>,
  ): Promise<V> {
    const workflowId = startWorkflowOperation.options.workflowId;
    const waitMs = this.opts.startAnswerTimeoutMs ?? 30_000;
    try {
      return await this.guard(
        () => this.temporal.withDeadline(Date.now() + waitMs, () => this.temporal.workflow.executeUpdateWithStart(update, { startWorkflowOperation })),
        workflowId,
      );
    } catch (err) {
      if (err instanceof TemporalUnavailableError) throw err;
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
  private async queryFlow<T extends { state: string; reason?: string }>(flowId: string, query: QueryDefinition<T>): Promise<Viewed<T>> {
    const handle = this.temporal.workflow.getHandle(flowId);
    const waitMs = this.queryAnswerTimeoutMs();
    let view: T | undefined;
    try {
      view = await this.queryWithinDeadline(flowId, query);
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) throw new FlowNotFoundError(flowKindOf(flowId), flowId);
      // No answer in time, or the server knows no worker polls the queue ("no poller seen").
      if (!isDeadlineExceeded(err) && !isNoPoller(err)) throw err;
    }
    // A final state is final; any other needs the execution's status: a flow terminated (or
    // cancelled, timed out) in Temporal still answers its last view to a query.
    if (view && TERMINAL_STATES.has(view.state)) return view;
    const described = await handle.describe().catch((err: unknown) => {
      throw err instanceof WorkflowNotFoundError ? new FlowNotFoundError(flowKindOf(flowId), flowId) : err;
    });
    const status = described.status.name;
    if (status === 'RUNNING' && view) return view;
    if (status === 'COMPLETED') return view ?? ((await handle.result()) as T);
    const lastState = described.typedSearchAttributes.get(FLOW_STATE);
    const execution = EXECUTION_OF_STATUS[status];
    if (view && execution) {
      return { ...view, execution, reason: closedExecutionReason(flowKindOf(flowId), execution, view.state) };
    }
    throw new WorkerUnavailableError(flowKindOf(flowId), flowId, waitMs, lastState);
  }

  /** How long a query waits for a worker's answer (queryAnswerTimeoutMs, default 10 s). */
  private queryAnswerTimeoutMs(): number {
    return this.opts.queryAnswerTimeoutMs ?? 10_000;
  }

  /** A flow's query, answered by a worker within queryAnswerTimeoutMs or failed with the deadline. */
  private queryWithinDeadline<T>(flowId: string, query: QueryDefinition<T>): Promise<T> {
    return this.temporal.withDeadline(Date.now() + this.queryAnswerTimeoutMs(), () => this.temporal.workflow.getHandle(flowId).query(query));
  }

  /**
   * Runs a call to Temporal; when it has not answered after temporalProbeIntervalMs, checks that
   * the server answers at all (and again at that interval), and ends the call with
   * TemporalUnavailableError when it does not — instead of the SDK retrying an unreachable server
   * for half a minute. UNAVAILABLE failures of the call itself are the same error.
   */
  private async guard<T>(fn: () => Promise<T>, flowId?: string): Promise<T> {
    const intervalMs = this.opts.temporalProbeIntervalMs ?? 2_000;
    let timer: NodeJS.Timeout | undefined;
    let done = false;
    const abort = new AbortController();
    const down = new Promise<never>((_, reject) => {
      const probe = async (): Promise<void> => {
        if (done) return;
        if (!(await this.temporalAnswers())) {
          abort.abort(); // ends the call's own retries too
          return reject(new TemporalUnavailableError(flowId));
        }
        if (!done) timer = setTimeout(() => void probe(), intervalMs);
      };
      timer = setTimeout(() => void probe(), intervalMs);
    });
    down.catch(() => undefined);
    const work = this.temporal.withAbortSignal(abort.signal, fn);
    work.catch(() => undefined);
    try {
      return await Promise.race([work, down]);
    } catch (err) {
      if (!(err instanceof TemporalUnavailableError) && isTemporalUnavailable(err)) throw new TemporalUnavailableError(flowId);
      throw err;
    } finally {
      done = true;
      clearTimeout(timer);
    }
  }

  /** Whether the Temporal server answers GetSystemInfo within 2 s. */
  private async temporalAnswers(): Promise<boolean> {
    const conn = this.temporal.connection;
    try {
      await conn.withDeadline(Date.now() + 2_000, () => conn.workflowService.getSystemInfo({}));
      return true;
    } catch (err) {
      return !(isTemporalUnavailable(err) || isDeadlineExceeded(err));
    }
  }

  private async cancelFlow<V extends { state: string }>(
    flowId: string,
    kind: 'swap' | 'payment_link',
    update: UpdateDefinition<V, [{ reason?: string }]>,
    reason: string | undefined,
    view: () => Promise<V>,
  ): Promise<V> {
    const waitMs = this.queryAnswerTimeoutMs();
    try {
      return await this.temporal.withDeadline(Date.now() + waitMs, () =>
        this.temporal.workflow.getHandle(flowId).executeUpdate(update, { args: [{ reason }] }),
      );
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) {
        // Closed already (or never existed): answer with its final view when it has one.
        const v = await view();
        throw new NotCancellableError(kind, flowId, v);
      }
      if (err instanceof WorkflowUpdateFailedError) throw new NotCancellableError(kind, flowId, await view());
      throw err;
    }
  }

  private async signalFlow<A extends unknown[]>(flowId: string, signal: SignalDefinition<A>, ...args: A): Promise<void> {
    try {
      await this.guard(() => this.temporal.workflow.getHandle(flowId).signal(signal, ...args), flowId);
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) throw new FlowNotFoundError(flowKindOf(flowId), flowId);
      throw err;
    }
  }
}

function flowKindOf(flowId: string): string {
  return kindOf(flowId) ?? 'flow';
}

/** The key a notification is deduplicated by: the payload's own id, else a SHA-256 of the raw body. */
export function notificationDedupKey(payload: unknown, rawBody: string): string {
  const id = notificationIdOf(payload);
  return id !== undefined ? `id:${id}` : `sha256:${sha256(rawBody)}`;
}
