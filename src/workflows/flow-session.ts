/**
 * What both flows' sessions share (workflow-safe): the state as operators see it (FlowStatus), the
 * provider's notifications, and the cancel request a cancellable state may take.
 */
import { FlowStatus } from './flow-status';
import type { FlowKind } from './flow-ids';
import { NotificationBook } from './notifications';
import { EventOutbox } from './event-outbox';

export abstract class FlowSession<S extends string> {
  readonly status: FlowStatus<S>;
  readonly notifications = new NotificationBook();
  cancelRequested: string | undefined;
  /** The merchant events every state change emits (event-outbox.ts). */
  readonly events: EventOutbox;

  protected constructor(
    initial: S,
    kind: FlowKind,
    ref: string,
    private readonly terminal: readonly S[],
    private readonly cancellable: readonly S[],
    webhookUrl?: string,
  ) {
    this.events = new EventOutbox(kind, webhookUrl);
    this.status = new FlowStatus<S>(initial, kind, ref);
  }

  /** The flow's view (what queries answer); events carry an allow-listed part of it. */
  abstract view(): object;

  get state(): S {
    return this.status.state;
  }

  set(next: S, why?: string): void {
    const from = this.state;
    this.status.set(next, why);
    this.events.stateChanged(from, next, () => this.view() as Record<string, unknown>);
  }

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
}
