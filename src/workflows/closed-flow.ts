/**
 * The run that carries on a flow closed from outside (`closedFlowWorkflow`, the same workflow id's
 * next run, started by the worker's sweeper): it takes the state the flow truthfully ended in
 * (closed-flows.ts), sends its event through the flow's own outbox (numbered after the earlier
 * run's events, delivered by the same `events-<flow_id>` workflow), answers the flow's queries, and
 * for `needs_reconciliation` stays open for the operator's `resolve`, recording any notification
 * that arrives meanwhile. Nothing here calls the provider.
 */
import { defineQuery, defineUpdate, setHandler } from '@temporalio/workflow';
import { type ClosedFlowInput, closedFlowOutcome, type LastView } from './closed-flows';
import { FlowSession } from './flow-session';
import {
  cancelSwapUpdate,
  LINK_TERMINAL_STATES,
  linkCreatedUpdate,
  notificationSignal,
  type PinSubmission,
  type ResolveInput,
  resolveSwapUpdate,
  submitPinUpdate,
  SWAP_TERMINAL_STATES,
  swapInitializedUpdate,
  swapStateQuery,
} from './messages';
import { awaitResolution, lateDoubt } from './reconciliation';

class ClosedFlowSession extends FlowSession<string> {
  constructor(readonly input: ClosedFlowInput) {
    const terminal: readonly string[] = input.kind === 'swap' ? SWAP_TERMINAL_STATES : LINK_TERMINAL_STATES;
    super(input.view.state, input.kind, input.ref, terminal, [], input.webhook_url, true);
    this.status.reason = input.view.reason;
    this.events.carryOn(input.events);
    this.refreshDetails();
  }

  view(): LastView {
    const earlier = Array.isArray(this.input.view.notifications) ? this.input.view.notifications : [];
    return {
      ...this.input.view,
      state: this.state,
      reason: this.status.reason,
      notifications: [...earlier, ...this.notifications.list()],
      ...(this.reconciliation ? { reconciliation: this.reconciliation } : {}),
      events: this.events.list(),
      execution: this.input.execution,
      updated_at: this.status.updatedAt,
    };
  }

  protected currentDetails(): string {
    return `**${this.state}**: ${this.status.reason ?? ''}\n\nClosed in Temporal (${this.input.execution}) at ${this.input.closed_at}, run ${this.input.closed_run_id}; this run carries it on.`;
  }

  /** Nothing can be started, cancelled or confirmed any more: the same refusal as a flow in a final state. */
  refuse(what: string): void {
    throw new Error(`${this.kind === 'swap' ? 'swap' : 'payment link'} cannot ${what} in state ${this.state} (closed in Temporal: ${this.input.execution})`);
  }

  /** A notification is recorded (never lost); money notified after a `terminated` flow needs reconciliation. */
  note(record: ReturnType<FlowSession<string>['notifications']['add']>): void {
    if (record && this.state === 'terminated' && record.outcome === 'paid') {
      record.applied = true;
      this.set('needs_reconciliation', `the provider notified a success after the flow was closed in Temporal: check it at the provider, then resolve it`);
    }
    this.refreshDetails();
  }
}

/** The flows' own messages, by name (a swap's and a link's share their names, but `initialized`/`created`). */
const stateQuery = defineQuery<LastView>(swapStateQuery.name);
const cancelUpdate = defineUpdate<LastView, [{ reason?: string }]>(cancelSwapUpdate.name);
const resolveUpdate = defineUpdate<LastView, [ResolveInput]>(resolveSwapUpdate.name);
const pinUpdate = defineUpdate<LastView, [PinSubmission]>(submitPinUpdate.name);

export async function closedFlowWorkflow(input: ClosedFlowInput): Promise<LastView> {
  const s = new ClosedFlowSession(input);
  setHandler(stateQuery, () => s.view());
  setHandler(defineUpdate<LastView>(input.kind === 'swap' ? swapInitializedUpdate.name : linkCreatedUpdate.name), () => s.view());
  setHandler(cancelUpdate, (_arg) => s.view(), { validator: (_arg) => s.refuse('be cancelled') });
  if (input.kind === 'swap') setHandler(pinUpdate, (_sub) => s.view(), { validator: (_sub) => s.refuse('take a PIN') });
  setHandler(notificationSignal, (n) => s.note(s.notifications.add(n)));
  setHandler(resolveUpdate, (r) => (s.resolve(r, new Date().toISOString()), s.view()), { validator: (r) => s.validateResolve(r) });

  const outcome = closedFlowOutcome(input.kind, input.view.state, input.execution);
  if (outcome) s.set(outcome.state, outcome.reason);
  do {
    if (s.state === 'needs_reconciliation') await awaitResolution(s);
    const handing = s.events.finish();
    if (handing) await handing;
  } while (lateDoubt(s));
  return s.view();
}
