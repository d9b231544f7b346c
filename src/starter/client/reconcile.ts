/**
 * Reconciliation from the client's side: resolving a flow in needs_reconciliation (the `resolve`
 * update), with NotResolvableError (errors.ts) when the flow refuses.
 */
import { WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { flowKindOf as kindOf } from '../../workflows/flow-ids';
import { type LinkView, type ResolveInput, resolveLinkUpdate, resolveSwapUpdate, type SwapView } from '../../workflows/messages';
import { checkResolveInput } from '../../workflows/reconciliation';
import { FlowNotFoundError, InputError, NotResolvableError, TemporalUnavailableError, WorkerUnavailableError } from './errors';
import type { Flows } from './flows';
import type { TemporalGate } from './health';
import type { Viewed } from './views';


/**
 * Resolves a flow in needs_reconciliation (the `resolve` update): answers its `reconciled` view
 * with the audit record. InputError for a bad input (nothing sent); NotResolvableError (with the
 * current view) when the flow is in another state or closed.
 */
export async function resolveFlow(gate: TemporalGate, flows: Flows, flowId: string, input: unknown): Promise<Viewed<SwapView> | Viewed<LinkView>> {
  const kind = kindOf(flowId);
  if (!kind) throw new FlowNotFoundError('flow', flowId.slice(0, 120));
  const problem = checkResolveInput(input, kind);
  if (problem) throw new InputError(problem.message, problem.field);
  const view = (): Promise<Viewed<SwapView> | Viewed<LinkView>> => (kind === 'swap' ? flows.getSwap(flowId) : flows.getLink(flowId));
  const handle = gate.temporal.workflow.getHandle(flowId);
  const args: [ResolveInput] = [input as ResolveInput];
  try {
    return await gate.answered(flowId, kind, gate.queryAnswerTimeoutMs(), (): Promise<SwapView | LinkView> =>
      kind === 'swap' ? handle.executeUpdate(resolveSwapUpdate, { args }) : handle.executeUpdate(resolveLinkUpdate, { args }),
    );
  } catch (err) {
    if (err instanceof TemporalUnavailableError || err instanceof WorkerUnavailableError) throw err;
    if (err instanceof WorkflowNotFoundError) {
      const closed = await gate.flowStatus(flowId);
      if (!closed) throw new FlowNotFoundError(kind, flowId);
      const v = await view();
      const r = v.reconciliation;
      throw new NotResolvableError(
        kind,
        flowId,
        v,
        r
          ? `it was already reconciled by ${r.operator} at ${r.resolved_at} (${r.outcome})`
          : `it is closed in state ${v.state} (a flow that completed before reconciliation stayed open cannot be resolved here; record the decision in your own books)`,
      );
    }
    if (err instanceof WorkflowUpdateFailedError) throw new NotResolvableError(kind, flowId, await view(), err.cause?.message ?? 'the flow refused the resolution');
    throw err;
  }
}
