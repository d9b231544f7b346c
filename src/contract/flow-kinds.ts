/**
 * The two flows and the prefixes of their workflow ids, `swap-<txn_ref>` and
 * `paylink-<txn_merchant_ref>`: a fixed contract with every caller that names a flow by its id.
 * Plain data, workflow-safe; workflows/flow-ids.ts builds and reads the ids.
 */
export type FlowKind = 'swap' | 'payment_link';

export const FLOW_ID_PREFIX: Readonly<Record<FlowKind, string>> = { swap: 'swap-', payment_link: 'paylink-' };
