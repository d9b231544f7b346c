/**
 * A flow's state as operators see it: the state, why it is there, when it changed, and the typed
 * search attributes (kind, state, reference — no personal data: they are not encrypted).
 * Shared by the swap and payment-link workflows (workflow-safe).
 */
import { log, upsertSearchAttributes } from '@temporalio/workflow';
import type { FlowKind } from './flow-ids';
import { FLOW_KIND, FLOW_REF, FLOW_STATE } from './search-attributes';

export class FlowStatus<S extends string> {
  reason: string | undefined;
  updatedAt = new Date().toISOString();

  constructor(
    private current: S,
    kind: FlowKind,
    ref: string,
  ) {
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
