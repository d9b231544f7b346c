/**
 * Typed custom search attributes for operators (Temporal Web filters). They are NOT encrypted, so
 * they carry no personal data: flow kind, state, the merchant's transaction reference, a keyed hash
 * of the flow's customer reference, and the public id of the API key an idempotency record belongs to.
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

export const FLOW_KIND = defineSearchAttributeKey('MpfFlowKind', SearchAttributeType.KEYWORD);
export const FLOW_STATE = defineSearchAttributeKey('MpfState', SearchAttributeType.KEYWORD);
export const FLOW_REF = defineSearchAttributeKey('MpfTxnRef', SearchAttributeType.KEYWORD);
/**
 * A flow's customer reference (its user_ref) as HMAC-SHA256 under a key derived from the payload
 * key (codec/derive.ts, purpose customer_ref), set by the starter at start: lists filter on it
 * without the user_ref ever being in Temporal in plaintext. Flows started before it have none.
 */
export const CUSTOMER_REF = defineSearchAttributeKey('MpfCustomerRef', SearchAttributeType.KEYWORD);
/** The public id of the API key an Idempotency-Key record belongs to (never the key itself): the live records per key are counted by it. */
export const API_KEY_ID = defineSearchAttributeKey('MpfApiKeyId', SearchAttributeType.KEYWORD);

/** Name -> Temporal type name, as the dev server's --search-attribute flag wants it. */
export const CUSTOM_SEARCH_ATTRIBUTES: Record<string, 'Keyword'> = {
  MpfFlowKind: 'Keyword',
  MpfState: 'Keyword',
  MpfTxnRef: 'Keyword',
  MpfApiKeyId: 'Keyword',
  MpfCustomerRef: 'Keyword',
};
