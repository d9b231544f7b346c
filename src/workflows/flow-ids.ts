/**
 * One vocabulary for the two flows (workflow-safe, shared by workflows, client, gateway and CLI):
 * the flow kinds and their workflow ids, `swap-<txn_ref>` and `paylink-<txn_merchant_ref>` (a
 * fixed contract: the kinds and prefixes live in contract/flow-kinds.ts). "Hosted link" is kept
 * only for the provider's own term for the endpoint.
 */
import { FLOW_ID_PREFIX, type FlowKind } from '../contract/flow-kinds';

export { FLOW_ID_PREFIX, type FlowKind };

/** The workflow id of a flow: the merchant's reference behind the kind's prefix. */
export function flowId(kind: FlowKind, ref: string): string {
  return `${FLOW_ID_PREFIX[kind]}${ref}`;
}

/** The kind of a workflow id, or undefined when it is neither flow's. */
export function flowKindOf(id: string): FlowKind | undefined {
  for (const kind of Object.keys(FLOW_ID_PREFIX) as FlowKind[]) if (id.startsWith(FLOW_ID_PREFIX[kind]) && id.length > FLOW_ID_PREFIX[kind].length) return kind;
  return undefined;
}
