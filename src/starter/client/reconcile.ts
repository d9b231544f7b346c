/**
 * Reconciliation from the client's side: the error of a resolution the flow refused (not in needs_reconciliation, or closed). -> 409 not_resolvable
 */
import type { FlowKind } from '../../workflows/flow-ids';

export class NotResolvableError<V extends { state: string } = { state: string }> extends Error {
  override name = 'NotResolvableError';
  constructor(
    readonly kind: FlowKind,
    readonly flowId: string,
    readonly view: V,
    why: string,
  ) {
    super(`the ${kind.replace('_', ' ')} ${flowId} cannot be resolved: ${why}`);
  }
}
