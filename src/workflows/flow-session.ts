/**
 * What both flows' sessions share (workflow-safe): the state as operators see it (FlowStatus and
 * Temporal Web's current details), the provider's notifications, and the cancel request a
 * cancellable state may take.
 */
import { patched, setCurrentDetails, setHandler } from '@temporalio/workflow';
import { flowFactsQuery } from './closed-flows';
import { FlowStatus, startCarriedStatus } from './flow-status';
import { FRESH_TARGETS_PATCH, START_CARRIED_PATCH, START_MEMO_PATCH } from './patches';
import type { FlowKind } from './flow-ids';
import { flowMetrics } from './flow-metrics';
import { NotificationBook } from './notifications';
import { checkResolveInput, type Reconciliation, type ResolveInput } from './reconciliation';
import { EventOutbox } from './event-outbox';

export abstract class FlowSession<S extends string> {
  readonly status: FlowStatus<S>;
  readonly notifications = new NotificationBook();
  cancelRequested: string | undefined;
  /** The audit record of an operator's resolution (state `reconciled`). */
  reconciliation: Reconciliation | undefined;
  /** The merchant events every state change emits (event-outbox.ts). */
  readonly events: EventOutbox;
  /** State changes so far (each one's index keys its metric, counted once: flow-metrics.ts). */
  private stateChanges = 0;

  protected constructor(
    initial: S,
    readonly kind: FlowKind,
    ref: string,
    private readonly terminal: readonly S[],
    private readonly cancellable: readonly S[],
    webhookUrl?: string,
    /** A flow carried on from a run closed from outside (closed-flow.ts): not a new start. */
    carriedOn = false,
  ) {
    // Asked before the outbox's patches, newest first: a new flow records one marker, which stands
    // for the older ones (each asked only when replaying a flow recorded before the one above it).
    const startMemo = patched(START_MEMO_PATCH);
    const freshTargets = startMemo || patched(FRESH_TARGETS_PATCH);
    const startCarried = freshTargets || patched(START_CARRIED_PATCH);
    this.events = new EventOutbox(kind, webhookUrl, startCarried, freshTargets, startMemo);
    this.status = new FlowStatus<S>(initial, kind, ref, startCarried && startCarriedStatus(kind, ref, initial));
    if (!carriedOn) flowMetrics.started(kind);
    // What the worker's sweeper needs to carry the flow on if it is closed from outside (a query: no command).
    setHandler(flowFactsQuery, () => ({ kind, ref, ...(webhookUrl ? { webhook_url: webhookUrl } : {}) }));
  }

  /** The flow's view (what queries answer); events carry an allow-listed part of it. */
  abstract view(): object;

  get state(): S {
    return this.status.state;
  }

  set(next: S, why?: string): void {
    const [from, wasTerminal] = [this.state, this.isTerminal()];
    this.status.set(next, why);
    if (next !== from) flowMetrics.changed(this.kind, ++this.stateChanges, next, wasTerminal, this.isTerminal());
    this.refreshDetails();
    this.events.stateChanged(from, next, () => this.view() as Record<string, unknown>);
  }

  /**
   * Temporal Web's "Current Details" (the SDK's workflow metadata query): what the flow is and
   * where it stands, in an operator's words. Held in memory, no command: replay-neutral.
   */
  refreshDetails(): void {
    setCurrentDetails(this.currentDetails());
  }

  protected abstract currentDetails(): string;

  isTerminal(): boolean {
    return this.terminal.includes(this.state);
  }

  isCancellable(): boolean {
    return this.cancellable.includes(this.state);
  }

  /** Records the first cancel request while the flow is cancellable (signal, update or Temporal's cancellation). */
  requestCancel(reason: string | undefined): void {
    if (this.isCancellable() && this.cancelRequested === undefined) this.cancelRequested = reason?.slice(0, 200) || 'cancelled by request';
  }

  /** The `resolve` update's validator (synchronous): only in needs_reconciliation, with a valid input. */
  validateResolve(input: ResolveInput): void {
    if ((this.state as string) !== 'needs_reconciliation') throw new Error(`only a flow in needs_reconciliation can be resolved (state: ${this.state})`);
    const problem = checkResolveInput(input, this.kind);
    if (problem) throw new Error(problem.message);
  }

  /** Records the operator's resolution and moves the flow to `reconciled` (an ordinary state transition). */
  resolve(input: ResolveInput, at: string): void {
    this.reconciliation = {
      outcome: input.outcome,
      provider_reference: input.provider_reference,
      operator: input.operator,
      note: input.note,
      resolved_at: at,
      reason_before: this.status.reason,
    };
    this.set('reconciled' as S, `reconciled by ${input.operator}: ${input.outcome} at the provider (reference ${input.provider_reference})`);
  }
}
