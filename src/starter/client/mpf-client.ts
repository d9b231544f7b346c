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
import { createSealer, type Sealer, sealUrlLastSegment } from '../../codec/seal';
import { buildCategoryTree, type CategoryTree } from '../../contract/categories';
import {
  type Category,
  compactNotificationPayload,
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
import { notificationUrl, pinUrl } from './urls';
import { type FlowKind, flowKindOf as kindOf } from '../../workflows/flow-ids';

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
  /** How long the category list waits for a worker before WorkerUnavailableError (default 10 s). */
  categoriesAnswerTimeoutMs?: number;
  /**
   * A call to Temporal that has not answered after this long checks that the server answers at
   * all (GetSystemInfo, 2 s deadline), and again every as long; when it does not, the call ends
   * with TemporalUnavailableError instead of retrying for half a minute (default 2 s).
   */
  temporalProbeIntervalMs?: number;
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

  async startSwap(body: unknown): Promise<StartedSwap> {
    const req = parseOrThrow(SwapStartBody, body);
    const workflowId = swapWorkflowId(req.txn_ref);
    const pinToken = newToken();
    const notifyToken = newToken();
    const input: SwapWorkflowInput = {
      request: { ...req, notification_url: sealUrlLastSegment(this.notificationUrl('swap', workflowId, notifyToken), this.sealer) },
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

  async getSwap(swapId: string): Promise<Viewed<SwapView>> {
    return this.guard(() => this.queryFlow(swapId, swapStateQuery), swapId);
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

  async createLink(body: unknown): Promise<CreatedLink> {
    const req = parseOrThrow(LinkCreateBody, body);
    const workflowId = linkWorkflowId(req.txn_merchant_ref);
    const notifyToken = newToken();
    const input: LinkWorkflowInput = {
      request: { ...req, notification_url: sealUrlLastSegment(this.notificationUrl('payment_link', workflowId, notifyToken), this.sealer) },
      lifetime_seconds: this.opts.linkLifetimeSeconds ?? 86_400,
      late_notification_grace_seconds: this.opts.linkLateNotificationGraceSeconds ?? 0,
    };
    const memo: TokenMemo = { notify_token_sha256: sha256(notifyToken) };
    const link = await this.startWithUpdate(LINK_WORKFLOW_TYPE, workflowId, input, memo, linkCreatedUpdate, 'payment_link', () =>
      this.getLink(workflowId),
    );
    return { link };
  }

  async getLink(linkId: string): Promise<Viewed<LinkView>> {
    return this.guard(() => this.queryFlow(linkId, linkStateQuery), linkId);
  }

  /** Cancels a link awaiting payment (the `cancelAndWait` update); NotCancellableError otherwise. */
  async cancelLink(linkId: string, reason?: string): Promise<LinkView> {
    return this.cancelFlow(linkId, 'payment_link', cancelLinkUpdate, reason, () => this.getLink(linkId));
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
      this.temporal.workflow.start(CATEGORIES_WORKFLOW_TYPE, {
        workflowId,
        taskQueue: this.opts.taskQueue,
        workflowExecutionTimeout: '2 minutes',
      }),
    );
    const result = handle.result() as Promise<Category[]>;
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
    const waitMs = this.opts.queryAnswerTimeoutMs ?? 10_000;
    let view: T | undefined;
    try {
      view = await this.temporal.withDeadline(Date.now() + waitMs, () => handle.query(query));
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
    const waitMs = this.opts.queryAnswerTimeoutMs ?? 10_000;
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

/** The payload's own notification id when it has one, else a hash of the raw body. */
export function notificationDedupKey(payload: unknown, rawBody: string): string {
  if (payload && typeof payload === 'object') {
    const top = payload as Record<string, unknown>;
    const inner = top.data && typeof top.data === 'object' ? (top.data as Record<string, unknown>) : {};
    for (const v of [inner.notification_id, top.notification_id, top.event_id, top.id]) {
      if (typeof v === 'string' && v.length > 0 && v.length <= 200) return `id:${v}`;
    }
  }
  return `sha256:${sha256(rawBody)}`;
}
