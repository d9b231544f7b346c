/**
 * The two flows and the prefixes of their workflow ids, `swap-<txn_ref>` and
 * `paylink-<txn_merchant_ref>`: a fixed contract with every caller that names a flow by its id.
 * Plain data, workflow-safe; workflows/flow-ids.ts builds and reads the ids.
 */
export type FlowKind = 'swap' | 'payment_link';

export const FLOW_ID_PREFIX: Readonly<Record<FlowKind, string>> = { swap: 'swap-', payment_link: 'paylink-' };

/** Each flow's first state: the one that has no merchant event, before its first provider call answered. */
export const FIRST_STATE = { swap: 'initializing', payment_link: 'creating' } as const satisfies Readonly<Record<FlowKind, string>>;

/** Each prefix ends in '-'; the words before it as one alternation for a pattern: `swap|paylink`. */
export const FLOW_ID_WORDS: string = Object.values(FLOW_ID_PREFIX)
  .map((p) => p.slice(0, -1))
  .join('|');

/** The longest prefix (how long a flow id is beyond its reference). */
export const MAX_FLOW_ID_PREFIX_LENGTH: number = Math.max(...Object.values(FLOW_ID_PREFIX).map((p) => p.length));
