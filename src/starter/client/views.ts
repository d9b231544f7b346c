/**
 * What the client answers: a flow's view (the workflow's own, plus `execution` when the execution
 * was closed from outside the flow), a flow as the server describes it, and the results of starts.
 */
import type { CategoryTree } from '../../contract/categories';
import type { Category } from '../../contract/provider';
import { LINK_TERMINAL_STATES, type LinkView, SWAP_TERMINAL_STATES, type SwapView } from '../../workflows/messages';

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

export const EXECUTION_OF_STATUS: Record<string, FlowExecution> = {
  TERMINATED: 'terminated',
  TIMED_OUT: 'timed_out',
  FAILED: 'failed',
  CANCELLED: 'cancelled',
  CANCELED: 'cancelled',
};

export const TERMINAL_STATES: ReadonlySet<string> = new Set<string>([...SWAP_TERMINAL_STATES, ...LINK_TERMINAL_STATES]);

export function closedExecutionReason(kind: string, execution: FlowExecution, state: string): string {
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

/** How a start was asked for: the Idempotency-Key record that owns it, if any. */
export interface StartOptions {
  idempotencyId?: string;
}
