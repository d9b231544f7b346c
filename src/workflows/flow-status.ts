/**
 * A flow's state as operators see it: the state, why it is there, when it changed, and the typed
 * search attributes (kind, state, reference — no personal data: they are not encrypted).
 * Shared by the swap and payment-link workflows (workflow-safe).
 */
import { log, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { FlowKind } from './flow-ids';
import { FLOW_KIND, FLOW_REF, FLOW_STATE } from './search-attributes';

/**
 * Whether the flow's start already set its kind, reference and first state (the starter sets them
 * since START_CARRIED_PATCH): the search attributes the start event gave, so replay-safe.
 */
export function startCarriedStatus(kind: FlowKind, ref: string, initial: string): boolean {
  const given = workflowInfo().typedSearchAttributes;
  return given.get(FLOW_KIND) === kind && given.get(FLOW_REF) === ref && given.get(FLOW_STATE) === initial;
}

export class FlowStatus<S extends string> {
  reason: string | undefined;
  updatedAt = new Date().toISOString();

  /** `carried`: the start already set the three search attributes (startCarriedStatus): no upsert. */
  constructor(
    private current: S,
    kind: FlowKind,
    ref: string,
    carried = false,
  ) {
    if (carried) return;
    upsertSearchAttributes([
      { key: FLOW_KIND, value: kind },
      { key: FLOW_REF, value: ref },
      { key: FLOW_STATE, value: current },
    ]);
  }

  get state(): S {
    return this.current;
  }

  set(next: S, why?: string): void {
    this.current = next;
    if (why !== undefined) this.reason = why;
    this.updatedAt = new Date().toISOString();
    upsertSearchAttributes([{ key: FLOW_STATE, value: next }]);
    log.info('flow state', { state: next, reason: why });
  }
}
