/**
 * The typed client of merchant-payment-flows: what backend code, the gateway, the CLI and the demo
 * use to start and drive flows. A facade over modules by concern:
 *
 *   requests.ts       the request bodies (zod) and InputError naming the field
 *   flows.ts          starting, viewing, PINs and cancels of swaps and links
 *   tokens.ts         per-flow pin and notification tokens (v1 and v2 behind one API)
 *   reconcile.ts      resolving a flow in needs_reconciliation
 *   notifications.ts  handing a provider notification to its flow
 *   lists.ts          visibility lists;  categories.ts  the provider's categories
 *   health.ts         every call to Temporal, bounded; the server's word on a flow
 *   idempotency.ts    Idempotency-Key records
 *
 * Input is validated with the contract (a bad field is an InputError naming it, and nothing is
 * started); the PIN is sealed before it leaves this process; only hashes of tokens are kept.
 */
import type { Client } from '@temporalio/client';
import { LINK_STATES, linkWorkflowId, type LinkView, type PinOutcome, SWAP_STATES, swapStateQuery, swapWorkflowId, type SwapView } from '../../workflows/messages';
import type { FlowKind } from '../../workflows/flow-ids';
import { listCategories } from './categories';
import { DuplicateFlowError, InputError, LimitExceededError, LimitUnavailableError, TemporalUnavailableError } from './errors';
import { Flows } from './flows';
import { TemporalGate, type TemporalAvailability } from './health';
import { IdempotencyStore } from './idempotency';
import { DEFAULT_PIN_BUDGET, SharedPinBudget } from './pin-budget';
import { PinGate, type PinGateOptions } from './pin-gate';
import { type FlowPage, listFlows, PageTokens, parseListFilter } from './lists';
import { deliverNotification, registeredTypesOf } from './notifications';
import { WebhookEndpointsReader } from '../../temporal/webhook-endpoints-reading';
import { type EventPage, type MerchantEventDetail, MerchantEventsReader } from './events';
import { EventRedeliveries, type Redelivery } from './event-redelivery';
import { ProviderGuardClient } from './provider-guard';
import { WebhookEndpoints } from './webhook-endpoints';
import { ApiKeys } from './api-keys';
import { webhookEgressFromEnv } from '../../config/webhook-egress';
import type { GuardView, MoneyClass } from '../../contract/provider-guard';
import type { MpfClientOptions } from './options';
import { resolveFlow } from './reconcile';
import type { LinkCreateRequest, PinRequest, SwapStartRequest } from './requests';
import { ClientTokens, type TokenMemo, type TokenVerdict } from './tokens';
import type { CategoriesResult, CreatedLink, FlowStatusSummary, StartedSwap, StartOptions, Viewed } from './views';
import type { LimitUsage } from './limits';
import type { TimelineEntry } from './timeline';
import { z } from 'zod';
import { Reference } from '../../contract/provider';
import { FIRST_STATE } from '../../contract/flow-kinds';
import { parseOrThrow } from './requests';

/** The workflow id a start would take (the key of a half-open breaker's trial), when its reference is a string. */
function trialKey(body: unknown, field: string, id: (ref: string) => string): string | undefined {
  const ref = (body as Record<string, unknown> | undefined)?.[field];
  return typeof ref === 'string' && ref.length > 0 ? id(ref) : undefined;
}

/**
 * Whether a start that failed with `err` started nothing that will send the claimed trial's call:
 * a field refused, a limit reached or unreadable, or a reference already used by a flow that is
 * past its first provider call (one still making it keeps the claim: the trial is its own). A
 * start whose outcome is unknown (Temporal unreachable, no answer in time) keeps the claim.
 */
function startedNothing(err: unknown): boolean {
  if (err instanceof InputError || err instanceof LimitExceededError || err instanceof LimitUnavailableError) return true;
  if (err instanceof DuplicateFlowError) {
    const state = (err.existing as { state?: unknown } | undefined)?.state;
    return typeof state === 'string' && state !== FIRST_STATE[err.kind];
  }
  return false;
}

export { LinkCreateBody, PinBody, SwapStartBody, parseOrThrow } from './requests';
export type { LinkCreateRequest, PinRequest, SwapStartRequest } from './requests';
export type { MpfClientOptions } from './options';
export type { CategoriesResult, CreatedLink, FlowExecution, FlowStatusSummary, StartedSwap, StartOptions, Viewed } from './views';
export type { LimitUsage } from './limits';
export type { TimelineEntry } from './timeline';
export { notificationDedupKey } from './notifications';

export class MpfClient {
  readonly temporal: Client;
  /** Idempotency-Key records (the gateway's retried POSTs), kept in Temporal. */
  readonly idempotency: IdempotencyStore;
  private readonly gate: TemporalGate;
  private readonly tokens: ClientTokens;
  private readonly flows: Flows;
  private readonly pageTokens: PageTokens;
  private readonly eventsReader: MerchantEventsReader;
  private readonly redeliveries: EventRedeliveries;
  private readonly providerGuard: ProviderGuardClient;
  /** The event types the registered webhook endpoints take, for the notifications this client signals (a reading of the record, cached as a worker's). */
  private readonly registeredTypes: () => Promise<string[] | undefined>;
  /** The deployment's webhook endpoints (webhook-endpoints.ts), kept in Temporal. */
  readonly webhookEndpoints: WebhookEndpoints;
  /** The API keys made through the gateway's API (api-keys.ts), kept in Temporal. */
  readonly apiKeys: ApiKeys;

  constructor(private readonly opts: MpfClientOptions) {
    this.temporal = opts.client;
    this.gate = new TemporalGate(opts.client, opts);
    this.tokens = new ClientTokens(opts.keys, this.gate, opts.tokenLocalWindowSeconds);
    this.flows = new Flows(opts, this.gate, this.tokens);
    this.pageTokens = new PageTokens(opts.keys);
    this.eventsReader = new MerchantEventsReader(this.gate, opts.taskQueue, this.pageTokens);
    this.webhookEndpoints = new WebhookEndpoints({
      gate: this.gate,
      taskQueue: opts.taskQueue,
      egress: opts.webhookEgress ?? webhookEgressFromEnv({ NODE_ENV: opts.production ? 'production' : undefined }),
      production: opts.production ?? false,
      ...(opts.resolveHost ? { resolveHost: opts.resolveHost } : {}),
    });
    this.apiKeys = new ApiKeys({ gate: this.gate, taskQueue: opts.taskQueue });
    this.redeliveries = new EventRedeliveries(this.gate, this.eventsReader, opts.taskQueue, this.webhookEndpoints);
    this.providerGuard = new ProviderGuardClient(this.gate, opts.taskQueue);
    this.registeredTypes = registeredTypesOf(WebhookEndpointsReader.ofViews({ client: this.gate.temporal, taskQueue: opts.taskQueue }));
    this.idempotency = new IdempotencyStore({
      client: opts.client,
      guard: (fn, flowId) => this.gate.guard(fn, flowId),
      availability: () => this.gate.availability(),
      taskQueue: opts.taskQueue,
      keys: opts.keys,
      ...(opts.idempotencyMaxLivePerKey !== undefined ? { maxLivePerKey: opts.idempotencyMaxLivePerKey } : {}),
    });
  }

  /** The task queue this client starts flows on (the gateway's readiness checks its pollers). */
  get taskQueue(): string {
    return this.opts.taskQueue;
  }

  /** The gateway's public base URL (set after it listens when its port was 0). */
  setPublicUrl(url: string): void {
    this.flows.setPublicUrl(url);
  }

  /** The gateway's public base URL (the PIN page's, the console's sign-in redirect). */
  get publicUrl(): string {
    return this.flows.gatewayPublicUrl;
  }

  // ---- swaps -----------------------------------------------------------------------------------

  /** Starts a swap and answers once the provider initialised it: the view, pin_url and pin_token. */
  async startSwap(body: SwapStartRequest, start: StartOptions = {}): Promise<StartedSwap> {
    // Paused or breaker open: nothing starts (a half-open breaker's trial is this swap's, if unclaimed).
    return this.admitted('initiate', 'swap', trialKey(body, 'txn_ref', swapWorkflowId), () => this.flows.startSwap(body, start));
  }

  /** The swap's view, with the deliveries of its merchant events. */
  getSwap(swapId: string): Promise<Viewed<SwapView>> {
    return this.flows.getSwap(swapId);
  }

  /**
   * Submits a PIN. `wait` (default) uses the update and returns the outcome of this PIN; otherwise
   * a signal (fire and forget) and `undefined`.
   */
  submitPin(swapId: string, body: PinRequest, opts: { wait?: boolean; submissionId?: string } = {}): Promise<PinOutcome | undefined> {
    return this.flows.submitPin(swapId, body, opts);
  }

  /** The swap's view with its timeline (states, provider calls, notifications, operator acts; timeline.ts): the single view's answer. */
  async getSwapDetail(swapId: string): Promise<Viewed<SwapView> & { timeline: TimelineEntry[] }> {
    return this.flows.withTimeline('swap', swapId, await this.flows.getSwap(swapId));
  }

  /** Cancels a swap awaiting its PIN: its final view, or NotCancellableError with the current view. */
  cancelSwap(swapId: string, reason?: string): Promise<SwapView> {
    return this.flows.cancelSwap(swapId, reason);
  }

  /**
   * A swap's user_ref (it never changes) by one state query: no describe, no merchant-event
   * lookup. Undefined when there is no such swap or no worker answers in time.
   */
  async swapUserRef(swapId: string): Promise<string | undefined> {
    try {
      return (await this.gate.guard(() => this.gate.queryWithinDeadline(swapId, swapStateQuery), swapId)).user_ref;
    } catch (err) {
      if (err instanceof TemporalUnavailableError) throw err;
      return undefined;
    }
  }

  // ---- payment links ---------------------------------------------------------------------------

  /** Creates a payment link and answers once the provider created it (pay_link, payment_ref). */
  async createLink(body: LinkCreateRequest, start: StartOptions = {}): Promise<CreatedLink> {
    return this.admitted('create', 'payment link', trialKey(body, 'txn_merchant_ref', linkWorkflowId), () => this.flows.createLink(body, start));
  }

  /**
   * A start the provider guard admits (ProviderUnavailableError when it holds the class). When it
   * claimed a half-open breaker's trial and then started nothing, the trial is given back before
   * the error is answered, so the next start may be the trial at once.
   */
  private async admitted<T>(cls: MoneyClass, what: string, key: string | undefined, start: () => Promise<T>): Promise<T> {
    const claimed = await this.providerGuard.admit(cls, what, key);
    try {
      return await start();
    } catch (err) {
      if (claimed && key !== undefined && startedNothing(err)) await this.providerGuard.releaseTrial(cls, key);
      throw err;
    }
  }

  /** The link's view, with the deliveries of its merchant events. */
  getLink(linkId: string): Promise<Viewed<LinkView>> {
    return this.flows.getLink(linkId);
  }

  /** The link's view with its timeline (timeline.ts): the single view's answer. */
  async getLinkDetail(linkId: string): Promise<Viewed<LinkView> & { timeline: TimelineEntry[] }> {
    return this.flows.withTimeline('payment_link', linkId, await this.flows.getLink(linkId));
  }

  /** Cancels a link awaiting payment; NotCancellableError otherwise. */
  cancelLink(linkId: string, reason?: string): Promise<LinkView> {
    return this.flows.cancelLink(linkId, reason);
  }

  // ---- idempotent starts, reconciliation, lists --------------------------------------------------

  /** A swap's pin_token and pin_url again (from the seed in its encrypted memo), if it can be derived. */
  async pinTokenOf(swapId: string): Promise<{ pin_token: string; pin_url: string } | undefined> {
    const token = await this.tokens.pinTokenOf(swapId);
    return token ? { pin_token: token, pin_url: this.flows.pinUrl(swapId, token) } : undefined;
  }

  /** Whether the flow was started by the request that holds the Idempotency-Key record `idempotencyId`. */
  startedBy(flowId: string, idempotencyId: string): Promise<boolean> {
    return this.flows.startedBy(flowId, idempotencyId);
  }

  /**
   * Resolves a flow in needs_reconciliation: its `reconciled` view with the audit record.
   * InputError for a bad input (nothing sent); NotResolvableError when the flow is in another state or closed.
   */
  resolveFlow(flowId: string, input: unknown): Promise<Viewed<SwapView> | Viewed<LinkView>> {
    return resolveFlow(this.gate, this.flows, flowId, input);
  }

  /**
   * The PIN gate (pin-gate.ts) over the wrong-PIN budget per user: what every face puts in front
   * of a PIN; fails closed when the budget cannot answer.
   */
  pinGate(opts: { limits?: { max: number; timeWindowMs: number; answerTimeoutMs?: number } } & Omit<PinGateOptions, 'budget' | 'userRefOf'> = {}): PinGate {
    const { limits, ...gate } = opts;
    return new PinGate({ budget: this.sharedPinBudget(limits ?? DEFAULT_PIN_BUDGET), userRefOf: (swapId) => this.swapUserRef(swapId), ...gate });
  }

  /** The wrong-PIN budget per user shared by every gateway on this Temporal (pin-budget.ts). */
  sharedPinBudget(limits: { max: number; timeWindowMs: number; answerTimeoutMs?: number }): SharedPinBudget {
    return new SharedPinBudget({
      client: this.temporal,
      guard: (fn, flowId) => this.gate.guard(fn, flowId),
      availability: () => this.gate.availability(),
      taskQueue: this.opts.taskQueue,
      keys: this.opts.keys,
      ...limits,
    });
  }

  /** One page of swaps or payment links (visibility query on MpfFlowKind/MpfState and start time). */
  async listFlows(kind: FlowKind | 'any', filter: unknown): Promise<FlowPage> {
    const states = kind === 'swap' ? SWAP_STATES : kind === 'payment_link' ? LINK_STATES : [...new Set([...SWAP_STATES, ...LINK_STATES])];
    const f = parseListFilter(filter, states);
    const kinds: FlowKind[] = kind === 'any' ? ['swap', 'payment_link'] : [kind];
    return this.gate.guard(() => listFlows(this.temporal, this.opts.taskQueue, kinds, f, this.pageTokens, this.opts.keys));
  }

  /**
   * Today's use of each configured daily limit: the deployment's, and with `userRef` that user's
   * (limits.ts). InputError naming user_ref for a malformed one; [] when no limit is set.
   */
  limitsUsage(userRef?: string): Promise<LimitUsage[]> {
    if (userRef !== undefined) parseOrThrow(z.object({ user_ref: Reference }), { user_ref: userRef });
    return this.flows.limitsUsage(userRef);
  }

  // ---- merchant events --------------------------------------------------------------------------

  /** One page of merchant events across flows (type, flow_id, created_from/to; events.ts). */
  listEvents(filter: unknown): Promise<EventPage> {
    return this.eventsReader.list(filter);
  }

  /** One event with its delivery attempts per endpoint and its redeliveries; FlowNotFoundError (404) when none. */
  async getEvent(eventId: string): Promise<MerchantEventDetail & { redeliveries: Redelivery[] }> {
    const event = await this.eventsReader.get(eventId);
    return { ...event, redeliveries: await this.redeliveries.list(eventId) };
  }

  /** Sends an event again to its flow's endpoints, or only to the registered endpoint named (same id; event-redelivery.ts). */
  redeliverEvent(eventId: string, opts: { endpoint?: string } = {}): Promise<Redelivery> {
    return this.redeliveries.redeliver(eventId, opts);
  }

  // ---- the provider guard (kill switch and breakers) ---------------------------------------------

  /** Returns the unused units of the deployment's daily counts this client leased in blocks (limits.ts); a gateway does as it closes. */
  returnLeasedQuota(): Promise<void> {
    return this.flows.returnLeasedQuota();
  }

  /** Keeps this client's reading of the provider guard fresh, so starts never wait for it (the gateway); answers its stop. */
  watchProviderGuard(): () => Promise<void> {
    return this.providerGuard.watch();
  }

  /** The guard's state: pause, breakers, settings, the last operator actions (undefined: none yet). */
  providerStatus(): Promise<GuardView | undefined> {
    return this.providerGuard.status();
  }

  /** Stops every money-moving call deployment-wide, recorded as done by `by` (an API key's id). */
  pauseProvider(by: string, reason: string): Promise<GuardView> {
    return this.providerGuard.pause(by, reason);
  }

  resumeProvider(by: string): Promise<GuardView> {
    return this.providerGuard.resume(by);
  }

  // ---- tokens and notifications ----------------------------------------------------------------

  /** Checks a per-flow token (tokens.ts): 'authentic' or 'ok' to go on; 'closed', 'unknown_flow' or 'bad_token' otherwise. */
  verifyToken(flowId: string, field: keyof TokenMemo, token: string): Promise<TokenVerdict> {
    return this.tokens.verify(flowId, field, token);
  }

  /** Signals a flow with a received notification (compacted); answers its dedup key. */
  deliverNotification(flowId: string, payload: unknown, rawBody: string, dedupKey?: string): Promise<string> {
    return deliverNotification(this.gate, flowId, payload, rawBody, dedupKey, this.registeredTypes);
  }

  /**
   * Whether Temporal's frontend and its persistence answer (each probed within PROBE_TIMEOUT_MS;
   * concurrent callers share one probe): what the gateway's readiness reports.
   */
  temporalAvailability(): Promise<TemporalAvailability> {
    return this.gate.availability();
  }

  /** How the server describes a flow (no worker needed); undefined when there is no such flow. */
  flowStatus(flowId: string): Promise<FlowStatusSummary | undefined> {
    return this.gate.flowStatus(flowId);
  }

  // ---- categories ------------------------------------------------------------------------------

  /** The provider's categories; WorkerUnavailableError when no worker answers in time. */
  listCategories(): Promise<CategoriesResult> {
    return listCategories(this.gate, this.opts);
  }
}
