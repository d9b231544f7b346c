/**
 * What both flows' sessions share (workflow-safe): the state as operators see it (FlowStatus), the
 * provider's notifications, and the cancel request a cancellable state may take.
 */
import { FlowStatus } from './flow-status';
import type { FlowKind } from './flow-ids';
import { flowMetrics } from './flow-metrics';
import { NotificationBook } from './notifications';

export abstract class FlowSession<S extends string> {
  readonly status: FlowStatus<S>;
  readonly notifications = new NotificationBook();
  cancelRequested: string | undefined;
  /** State changes so far (each one's index keys its metric, counted once: flow-metrics.ts). */
  private stateChanges = 0;

  protected constructor(
    initial: S,
    private readonly kind: FlowKind,
    ref: string,
    private readonly terminal: readonly S[],
    private readonly cancellable: readonly S[],
  ) {
    this.status = new FlowStatus<S>(initial, kind, ref);
    flowMetrics.started(kind);
  }

  get state(): S {
    return this.status.state;
  }

  set(next: S, why?: string): void {
    const [before, wasTerminal] = [this.state, this.isTerminal()];
    this.status.set(next, why);
    if (next !== before) flowMetrics.changed(this.kind, ++this.stateChanges, next, wasTerminal, this.isTerminal());
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
