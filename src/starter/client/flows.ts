/**
 * Starting and driving the two flows: validated starts with update-with-start (the caller gets the
 * initialization / pay_link in one call), the PIN sealed before it leaves this process, views by
 * query with a fallback to the server's word when no worker answers, and cancels.
 */
import { randomUUID } from 'node:crypto';
import { WithStartWorkflowOperation, WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import type { QueryDefinition, UpdateDefinition } from '@temporalio/common';
import { DEFAULT_SWAP_NOTIFICATION_WAIT_SECONDS } from '../../config/flow-defaults';
import { createSealer, type Sealer, sealUrlLastSegment } from '../../codec/seal';
import {
  cancelLinkUpdate,
  cancelSwapUpdate,
  LINK_WORKFLOW_TYPE,
  flowKindOf,
  linkCreatedUpdate,
  linkStateQuery,
  type LinkView,
  linkWorkflowId,
  type LinkWorkflowInput,
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
import { CUSTOMER_REF, FLOW_KIND, FLOW_REF, FLOW_STATE } from '../../workflows/search-attributes';
import { linkStaticDetails, linkStaticSummary, swapStaticDetails, swapStaticSummary } from '../../workflows/flow-summary';
import type { FlowKind } from '../../workflows/flow-ids';
import { DuplicateFlowError, FlowClosedError, FlowNotFoundError, FlowPendingError, NotCancellableError, PinNotAcceptedError, TemporalUnavailableError } from './errors';
import { WorkerUnavailableError } from './errors';
import { flowWord, type TemporalGate } from './health';
import { checkWebhookUrl, readDeliveries, withDeliveries } from './merchant-events';
import { type WebhookEgressPolicy, webhookEgressFromEnv } from '../../config/webhook-egress';
import type { MpfClientOptions } from './options';
import { LinkCreateBody, type LinkCreateRequest, parseOrThrow, PinBody, type PinRequest, SwapStartBody, type SwapStartRequest } from './requests';
import { DailyLimitLedgers, type LimitUsage } from './limits';
import { customerRefHashes, isUnknownSearchAttribute, LIST_MEMO_FIELD, type ListMemo } from './lists';
import { isAlreadyStarted, isClosedBeforeAnswer, isDeadlineExceeded, isNoPoller } from './temporal-errors';
import { type ClientTokens, sha256, type TokenMemo } from './tokens';
import { memoEventsOf, readTimeline, type TimelineEntry } from './timeline';
import { EVENTS_MEMO_FIELD } from '../../contract/merchant-events';
import { FIRST_STATE } from '../../contract/flow-kinds';
import { notificationUrl, pinUrl } from './urls';
import { closedExecutionView, type CreatedLink, EXECUTION_OF_STATUS, type StartedSwap, type StartOptions, TERMINAL_STATES, type Viewed } from './views';
import type { PaymentLinkWorkflow, SwapWorkflow } from './workflow-refs';

/** How long a lookup of a completed flow waits for a worker's answer before it answers from the flow's result. */
const COMPLETED_FALLBACK_MS = 1_000;

/** A flow's kind, reference and first state, set as search attributes at its start (the workflow then does not upsert them). */
interface StartStatus {
  kind: FlowKind;
  ref: string;
  state: (typeof FIRST_STATE)[FlowKind];
}

/** Temporal Web's summary and details of a flow, given at start (flow-summary.ts: no personal data). */
interface UserMetadata {
  staticSummary: string;
  staticDetails: string;
}

/**
 * The view of a closed flow that no worker answered for, from the events it keeps in its memo: the
 * last event's data is the allow-listed fields of its view when it emitted it (contract
 * merchant-events.ts). Not in it: `notifications` (empty here; the timeline lists them from the
 * history), `provider_message`, `expires_in_seconds`; `updated_at` is the last event's time.
 * Undefined for a flow that kept no event (it closed before its first one, or is of an older release).
 */
export function memoView<T>(kind: FlowKind, memo: Record<string, unknown> | undefined): T | undefined {
  const events = memoEventsOf(memo);
  const last = events?.[events.length - 1];
  if (!events || !last) return undefined;
  const { object: _object, previous_state: _previous, ...fields } = last.data;
  const pin = kind === 'swap' ? { pin_attempts_used: 0, pin_attempts_left: 0 } : {};
  return {
    ...pin,
    ...fields,
    notifications: [],
    events: events.map(({ id, type, timestamp }) => ({ id, type, timestamp })),
    updated_at: last.timestamp,
  } as T;
}

export class Flows {
  private readonly sealer: Sealer;
  private publicUrl: string;
  private readonly notificationBaseUrl: string | undefined;
  private readonly webhookEgress: WebhookEgressPolicy;

  /** The daily limits (limits.ts); undefined when none is set. */
  private readonly limits: DailyLimitLedgers | undefined;

  constructor(
    private readonly opts: MpfClientOptions,
    private readonly gate: TemporalGate,
    private readonly tokens: ClientTokens,
  ) {
    const { client, taskQueue, keys, dailyLimits: limits, limitAnswerTimeoutMs: answerTimeoutMs, deploymentLeaseBlock } = opts;
    this.limits = DailyLimitLedgers.of({
      client,
      taskQueue,
      keys,
      gate,
      limits,
      ...(answerTimeoutMs !== undefined ? { answerTimeoutMs } : {}),
      ...(deploymentLeaseBlock !== undefined ? { deploymentLeaseBlock } : {}),
    });
    this.sealer = createSealer(opts.keys);
    this.publicUrl = opts.publicUrl.replace(/\/+$/, '');
    this.notificationBaseUrl = opts.notificationBaseUrl?.replace(/\/+$/, '');
    this.webhookEgress = opts.webhookEgress ?? webhookEgressFromEnv({ NODE_ENV: opts.production ? 'production' : undefined });
  }

  /** Today's use of each configured limit (limits.ts); none configured: []. */
  async limitsUsage(userRef?: string): Promise<LimitUsage[]> {
    return this.limits ? this.limits.usage(userRef) : [];
  }

  /** Returns the unused units of the deployment's daily counts this client leased (limits.ts), as a gateway closes. */
  async returnLeasedQuota(): Promise<void> {
    await this.limits?.close();
  }

  /** The gateway's public base URL (set after it listens when its port was 0). */
  setPublicUrl(url: string): void {
    this.publicUrl = url.replace(/\/+$/, '');
  }

  /** The gateway's public base URL, as last set. */
  get gatewayPublicUrl(): string {
    return this.publicUrl;
  }

  private notificationUrl(kind: FlowKind, flowId: string, token: string): string {
    return notificationUrl(this.notificationBaseUrl ?? this.publicUrl, kind, flowId, token);
  }

  pinUrl(swapId: string, pinToken: string): string {
    return pinUrl(this.publicUrl, swapId, pinToken);
  }

  async startSwap(body: SwapStartRequest, start: StartOptions = {}): Promise<StartedSwap> {
    const { webhook_url, ...req } = parseOrThrow(SwapStartBody, body);
    await checkWebhookUrl(webhook_url, this.webhookEgress, this.opts.production ?? false, this.opts.resolveHost);
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
    const listed: ListMemo = { amount: req.amount, currency: req.from_currency, customer_ref: req.user_ref };
    const op = (customer: boolean) => new WithStartWorkflowOperation<SwapWorkflow>(SWAP_WORKFLOW_TYPE, this.startOptions(workflowId, input, memo, metadata, { kind: 'swap', ref: req.txn_ref, state: FIRST_STATE.swap }, listed, customer));
    const swap = await this.startWithUpdate(op, swapInitializedUpdate, 'swap', () => this.getSwap(workflowId));
    return { swap, pin_url: this.pinUrl(workflowId, pinToken), pin_token: pinToken };
  }

  /** The swap's view, with the deliveries of its merchant events. */
  async getSwap(swapId: string): Promise<Viewed<SwapView>> {
    return this.withEventDeliveries(swapId, await this.gate.guard(() => this.queryFlow(swapId, swapStateQuery), swapId));
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
    const handle = this.gate.temporal.workflow.getHandle(swapId);
    const waitMs = this.opts.pinAnswerTimeoutMs ?? 30_000;
    try {
      if (opts.wait === false) {
        await this.gate.guard(() => handle.signal(submitPinSignal, submission), swapId);
        return undefined;
      }
      return await this.gate.guard(
        () => this.gate.temporal.withDeadline(Date.now() + waitMs, () => handle.executeUpdate(submitPinUpdate, { args: [submission] })),
        swapId,
      );
    } catch (err) {
      if (err instanceof TemporalUnavailableError) throw err;
      if (opts.wait !== false && isDeadlineExceeded(err)) throw new FlowPendingError('swap', swapId, waitMs, 'was sent a PIN');
      if (err instanceof WorkflowNotFoundError) {
        // Closed (it takes no PIN any more) or never started.
        const closed = await this.gate.flowStatus(swapId);
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

  async createLink(body: LinkCreateRequest, start: StartOptions = {}): Promise<CreatedLink> {
    const { webhook_url, ...req } = parseOrThrow(LinkCreateBody, body);
    await checkWebhookUrl(webhook_url, this.webhookEgress, this.opts.production ?? false, this.opts.resolveHost);
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
    const listed: ListMemo = { amount: req.amount, currency: req.currency, customer_ref: req.user_ref };
    const op = (customer: boolean) => new WithStartWorkflowOperation<PaymentLinkWorkflow>(LINK_WORKFLOW_TYPE, this.startOptions(workflowId, input, memo, metadata, { kind: 'payment_link', ref: req.txn_merchant_ref, state: FIRST_STATE.payment_link }, listed, customer));
    const link = await this.startWithUpdate(op, linkCreatedUpdate, 'payment_link', () => this.getLink(workflowId));
    return { link };
  }

  /** The link's view, with the deliveries of its merchant events. */
  async getLink(linkId: string): Promise<Viewed<LinkView>> {
    return this.withEventDeliveries(linkId, await this.gate.guard(() => this.queryFlow(linkId, linkStateQuery), linkId));
  }

  /** Merges the delivery records of the flow's events (from `events-<flow_id>`) into its view. */
  async withEventDeliveries<V extends { events?: SwapView['events'] }>(flowId: string, view: V): Promise<V> {
    if (!view.events?.length) return view;
    const waitMs = Math.min(this.gate.queryAnswerTimeoutMs(), 5_000);
    return withDeliveries(view, await readDeliveries(this.gate.temporal, flowId, waitMs));
  }

  /** Cancels a link awaiting payment (the `cancelAndWait` update); NotCancellableError otherwise. */
  async cancelLink(linkId: string, reason?: string): Promise<LinkView> {
    return this.cancelFlow(linkId, 'payment_link', cancelLinkUpdate, reason, () => this.getLink(linkId));
  }

  /** Whether the flow was started by the request that holds the Idempotency-Key record `idempotencyId`. */
  async startedBy(flowId: string, idempotencyId: string): Promise<boolean> {
    try {
      const desc = await this.gate.guard(() => this.gate.temporal.workflow.getHandle(flowId).describe(), flowId);
      return (desc.memo as TokenMemo | undefined)?.idempotency_id === idempotencyId;
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return false;
      throw err;
    }
  }

  /**
   * The start options of a flow: its id, the task queue, the input, the token hashes, and no second
   * start of the id; with `listed`, what its list item shows (memo `mpf_list`, encrypted by the
   * payload codec as every memo value) and the keyed hash of its customer reference (MpfCustomerRef:
   * a search attribute is not encrypted, so never the user_ref itself) unless `customer` is false.
   * It also carries what the flow's first workflow task would otherwise upsert: its kind, reference
   * and first state (MpfFlowKind, MpfTxnRef, MpfState), and its empty events list (`mpf_events`,
   * mpf-start-memo-v1). A worker of a release before the events memo (a ramp) would keep that list
   * empty: readers trust an empty list only while MpfState is the first state (timeline.ts
   * memoEventsOf), and ask the flow's `events` query past it.
   */
  startOptions<I>(workflowId: string, input: I, memo: TokenMemo, metadata: UserMetadata, status: StartStatus, listed?: ListMemo, customer = true) {
    const typedSearchAttributes = [
      { key: FLOW_KIND, value: status.kind as string },
      { key: FLOW_REF, value: status.ref },
      { key: FLOW_STATE, value: status.state },
      ...(listed && customer ? [{ key: CUSTOMER_REF, value: customerRefHashes(this.opts.keys, listed.customer_ref)[0]! }] : []),
    ];
    return {
      // Temporal Web's Summary and Details (user metadata: encrypted by the payload codec like any payload).
      ...metadata,
      workflowId,
      taskQueue: this.opts.taskQueue,
      args: [input] as [I],
      workflowIdConflictPolicy: 'FAIL' as const,
      workflowIdReusePolicy: 'REJECT_DUPLICATE' as const,
      memo: { ...memo, [EVENTS_MEMO_FIELD]: [], ...(listed ? { [LIST_MEMO_FIELD]: listed } : {}) } as Record<string, unknown>,
      typedSearchAttributes,
    };
  }

  /**
   * Starts a flow with update-with-start (the caller gets the update's answer in the same call).
   * The workflow id is the merchant's reference: a second start, running or finished, is a
   * DuplicateFlowError carrying the existing flow's view, and never reaches the provider. Under
   * daily limits the flow is reserved first (limits.ts): past a limit nothing is started.
   *
   * `operation(true)` carries MpfCustomerRef. A namespace that has no such search attribute yet
   * (workers of the release before, which register it, still running) refuses the start and
   * starts nothing; it is started again without it, so a rolling upgrade never stops payments:
   * that flow is then listed without matching a customer filter, as a flow of the release before.
   */
  async startWithUpdate<W extends SwapWorkflow | PaymentLinkWorkflow, V extends { state: string }>(
    operation: (customer: boolean) => WithStartWorkflowOperation<W>,
    update: UpdateDefinition<V, []>,
    kind: 'swap' | 'payment_link',
    existing: () => Promise<V>,
  ): Promise<V> {
    const first = operation(true);
    const workflowId = first.options.workflowId;
    const waitMs = this.opts.startAnswerTimeoutMs ?? 30_000;
    const startWith = (startWorkflowOperation: WithStartWorkflowOperation<W>): Promise<V> =>
      this.gate.guard(
        () => this.gate.temporal.withDeadline(Date.now() + waitMs, () => this.gate.temporal.workflow.executeUpdateWithStart(update, { startWorkflowOperation })),
        workflowId,
      );
    const start = async (): Promise<V> => {
      try {
        return await startWith(first);
      } catch (err) {
        if (!isUnknownSearchAttribute(err, CUSTOMER_REF.name)) throw err;
        return startWith(operation(false));
      }
    };
    const { request } = (first.options.args as [SwapWorkflowInput | LinkWorkflowInput])[0];
    try {
      return await (this.limits ? this.limits.around(kind, workflowId, request, start) : start());
    } catch (err) {
      if (err instanceof TemporalUnavailableError) throw err;
      if (isAlreadyStarted(err)) throw new DuplicateFlowError(kind, workflowId, await existing().catch(() => undefined));
      if (isDeadlineExceeded(err)) throw new FlowPendingError(kind, workflowId, waitMs);
      // Closed from outside (terminated in Temporal) before it answered: its view says how it ended.
      if (isClosedBeforeAnswer(err)) return existing();
      throw err;
    }
  }

  /**
   * A flow's state by query, answered by a worker. When no worker answers in time, a finished
   * flow's final view is its result (kept by the server, no worker needed); a running flow is a
   * WorkerUnavailableError carrying its last state from the search attributes.
   */
  async queryFlow<T extends { state: string; reason?: string }>(flowId: string, query: QueryDefinition<T>): Promise<Viewed<T>> {
    const handle = this.gate.temporal.workflow.getHandle(flowId);
    const waitMs = this.gate.queryAnswerTimeoutMs();
    // The server's own word on the execution, asked beside the query: a flow that completed needs
    // no worker (its final view is its result), so its lookup never waits out the query's deadline.
    const describing = handle.describe().catch((err: unknown) => {
      throw err instanceof WorkflowNotFoundError ? new FlowNotFoundError(flowWord(flowId), flowId) : err;
    });
    describing.catch(() => undefined);
    const abort = new AbortController();
    const querying = this.gate.temporal.withAbortSignal(abort.signal, () => this.gate.queryWithinDeadline(flowId, query)).then(
      (view) => ({ view }),
      (err: unknown) => {
        if (err instanceof WorkflowNotFoundError) throw new FlowNotFoundError(flowWord(flowId), flowId);
        // No answer in time, or the server knows no worker polls the queue ("no poller seen").
        if (!isDeadlineExceeded(err) && !isNoPoller(err)) throw err;
        return { view: undefined };
      },
    );
    querying.catch(() => undefined);
    // A worker answers a query in milliseconds; only when none has within a second is the result used
    // (and the query ended), so a worker never finds the query it is answering gone.
    const completed = describing.then(
      (d) => (d.status.name === 'COMPLETED' ? new Promise<'completed'>((r) => setTimeout(() => r('completed'), COMPLETED_FALLBACK_MS).unref()) : new Promise<never>(() => undefined)),
      () => new Promise<never>(() => undefined),
    );
    const first = await Promise.race([querying, completed]);
    if (first === 'completed') {
      abort.abort(); // the query would only wait for a worker: end it
      return (await handle.result()) as T;
    }
    const { view } = first;
    // A final state is final; any other needs the execution's status: a flow terminated (or
    // cancelled, timed out) in Temporal still answers its last view to a query.
    if (view && TERMINAL_STATES.has(view.state)) return view;
    const described = await describing;
    const status = described.status.name;
    if (status === 'RUNNING' && view) return view;
    if (status === 'COMPLETED') return view ?? ((await handle.result()) as T);
    const lastState = described.typedSearchAttributes.get(FLOW_STATE);
    const execution = EXECUTION_OF_STATUS[status];
    const kind = flowKindOf(flowId);
    if (view && execution && kind) return closedExecutionView(kind, execution, view);
    // Closed and no worker answered: the view its memo's last event carried (memoView).
    const kept = status !== 'RUNNING' && kind ? memoView<T>(kind, described.memo) : undefined;
    if (kept && execution && kind) return closedExecutionView(kind, execution, kept);
    if (kept) return kept;
    throw new WorkerUnavailableError(flowWord(flowId), flowId, waitMs, lastState);
  }

  /**
   * A flow's view with its timeline (timeline.ts: the memo and the history, no worker): only the
   * single view of GET /v1/swaps/{id} and /v1/payment-links/{id} asks for it.
   */
  async withTimeline<V extends { state: string }>(kind: FlowKind, flowId: string, view: V): Promise<V & { timeline: TimelineEntry[] }> {
    const timeline = await this.gate.guard(() => readTimeline(this.gate.temporal, kind, flowId, view as Parameters<typeof readTimeline>[3]), flowId);
    return { ...view, timeline };
  }

  async cancelFlow<V extends { state: string }>(
    flowId: string,
    kind: 'swap' | 'payment_link',
    update: UpdateDefinition<V, [{ reason?: string }]>,
    reason: string | undefined,
    view: () => Promise<V>,
  ): Promise<V> {
    const waitMs = this.gate.queryAnswerTimeoutMs();
    try {
      return await this.gate.answered(flowId, kind, waitMs, () => this.gate.temporal.workflow.getHandle(flowId).executeUpdate(update, { args: [{ reason }] }));
    } catch (err) {
      if (err instanceof TemporalUnavailableError || err instanceof WorkerUnavailableError) throw err;
      if (err instanceof WorkflowNotFoundError) {
        // Closed already (or never existed): answer with its final view when it has one.
        const v = await view();
        throw new NotCancellableError(kind, flowId, v);
      }
      if (err instanceof WorkflowUpdateFailedError) throw new NotCancellableError(kind, flowId, await view());
      throw err;
    }
  }
}
