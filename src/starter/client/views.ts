/**
 * What the client answers: a flow's view (the workflow's own, plus `execution` when the execution
 * was closed from outside the flow), a flow as the server describes it, and the results of starts.
 */
import type { CategoryTree } from '../../contract/categories';
import type { Category } from '../../contract/provider';
import { closedFlowOutcome, type FlowExecution } from '../../workflows/closed-flows';
import type { FlowKind } from '../../workflows/flow-ids';
import { LINK_TERMINAL_STATES, type LinkView, SWAP_TERMINAL_STATES, type SwapView } from '../../workflows/messages';

export { EXECUTION_OF_STATUS, type FlowExecution } from '../../workflows/closed-flows';

/**
 * A flow's view as the client answers it: the workflow's own view, plus `execution` when the
 * execution was closed from outside the flow (terminated, cancelled, timed out or failed in
 * Temporal): `state` is then the state it truthfully ended in (closedFlowOutcome: `terminated`
 * when nothing that moves money was sent, `needs_reconciliation` when money may have moved) and
 * `reason` says so; the run that carries it on (closed-flow.ts) answers the same.
 */
export type Viewed<V> = V & { execution?: FlowExecution };

/** A closed or running flow as the server describes it (no worker needed). */
export interface FlowStatusSummary {
  /** RUNNING, COMPLETED, TERMINATED, … */
  status: string;
  /** The last state the flow published (search attribute MpfState). */
  state: string | undefined;
}

export const TERMINAL_STATES: ReadonlySet<string> = new Set<string>([...SWAP_TERMINAL_STATES, ...LINK_TERMINAL_STATES]);

/**
 * The view of a flow whose execution was closed from outside and not yet carried on by the
 * sweeper: the state it truthfully ended in, as the carrying run will answer it.
 */
export function closedExecutionView<V extends { state: string; reason?: string }>(kind: FlowKind, execution: FlowExecution, view: V): Viewed<V> {
  const outcome = closedFlowOutcome(kind, view.state, execution);
  return outcome ? { ...view, state: outcome.state, reason: outcome.reason, execution } : { ...view, execution };
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

/** How a start was asked for: the Idempotency-Key record that owns it, if any. */
export interface StartOptions {
  idempotencyId?: string;
}
