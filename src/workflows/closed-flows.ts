/**
 * Flows closed from outside (workflow-safe, pure; shared by the workflows, the client and the
 * worker's sweeper): a swap or payment link terminated, timed out or failed in Temporal never ran
 * its own ending, so its last state would stay `awaiting_pin` or `awaiting_payment` for ever and
 * the merchant would get no event. What it truthfully ended as is decided here, once:
 *
 * - nothing that moves money was sent (a swap initialising or awaiting its PIN, a link being
 *   created): `terminated`, with an event `<kind>.terminated`;
 * - money may have moved (a swap's confirmation was under way; a link's customer holds pay_link
 *   and may pay with nobody listening): `needs_reconciliation`, with its event, resolved by an
 *   operator as any other;
 * - a state that was already final stays as it was (no event: the merchant had it).
 *
 * The worker's sweeper (starter/client/closed-flow-sweeper.ts) starts the flow's next run, the
 * `closedFlowWorkflow` (closed-flow.ts), which takes that state, sends the event through the flow's
 * own outbox and, for needs_reconciliation, waits for the operator's resolution.
 */
import { defineQuery } from '@temporalio/workflow';
import type { FlowEvent } from '../contract/merchant-events';
import type { FlowKind } from './flow-ids';

/** How a closed execution that did not complete normally ended. */
export type FlowExecution = 'terminated' | 'timed_out' | 'failed' | 'cancelled';

/** Temporal's execution status name -> how it ended (absent: running or completed normally). */
export const EXECUTION_OF_STATUS: Readonly<Record<string, FlowExecution>> = {
  TERMINATED: 'terminated',
  TIMED_OUT: 'timed_out',
  FAILED: 'failed',
  CANCELLED: 'cancelled',
  CANCELED: 'cancelled',
};

/** The run that takes over a flow closed from outside (the flow's id, the next run). */
export const CLOSED_FLOW_WORKFLOW_TYPE = 'closedFlowWorkflow';

/** What a flow says of itself for the sweeper: enough to carry it on in its next run. */
export interface FlowFacts {
  kind: FlowKind;
  ref: string;
  webhook_url?: string;
}

/** Answered by every flow (a query adds no command: recorded histories replay unchanged). */
export const flowFactsQuery = defineQuery<FlowFacts>('mpf.flowFacts');

/** A flow's view as it was when its execution closed (each kind's own view; `state` at least). */
export type LastView = { state: string; reason?: string; notifications?: unknown[] } & Record<string, unknown>;

/** The input of the run that takes over a flow closed from outside. */
export interface ClosedFlowInput extends FlowFacts {
  execution: FlowExecution;
  /** When the closed run closed, and its run id (for the audit in the view). */
  closed_at: string;
  closed_run_id: string;
  /** Its last view and its events (the outbox's numbering goes on after them). */
  view: LastView;
  events: FlowEvent[];
}

/** States in which nothing that moves money had been sent. */
const NOTHING_SENT: Readonly<Record<FlowKind, readonly string[]>> = {
  swap: ['initializing', 'awaiting_pin'],
  payment_link: ['creating'],
};
/** States in which money may have moved with nobody left to see it. */
const MONEY_MAY_HAVE_MOVED: Readonly<Record<FlowKind, readonly string[]>> = {
  swap: ['confirming'],
  payment_link: ['awaiting_payment'],
};

const HOW: Readonly<Record<FlowExecution, string>> = {
  terminated: 'terminated in Temporal',
  timed_out: 'timed out in Temporal',
  failed: 'failed in Temporal',
  cancelled: 'cancelled in Temporal',
};

const WHAT: Readonly<Record<FlowKind, string>> = { swap: 'swap', payment_link: 'payment link' };

/** The state a flow closed from outside truthfully ended in, and why. Pure. */
export function closedFlowOutcome(kind: FlowKind, lastState: string, execution: FlowExecution): { state: string; reason: string } | undefined {
  const how = `the ${WHAT[kind]} was ${HOW[execution]} while ${lastState}`;
  if (NOTHING_SENT[kind].includes(lastState)) {
    const none = kind === 'swap' ? 'no confirmation was sent: no money moved' : 'the customer never received pay_link: no money moved';
    return { state: 'terminated', reason: `${how}; ${none}` };
  }
  if (MONEY_MAY_HAVE_MOVED[kind].includes(lastState)) {
    const doubt =
      kind === 'swap'
        ? 'a confirmation had been sent and nothing settled it: check the swap at the provider, then resolve it'
        : 'the customer holds pay_link and may pay with nobody listening: check for a payment at the provider, then resolve it';
    return { state: 'needs_reconciliation', reason: `${how}; ${doubt}` };
  }
  return undefined; // already final: it stays as it was
}
