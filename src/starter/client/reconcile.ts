/**
 * Reconciliation from the client's side: the states a list may filter on, and the error of a
 * resolution the flow refused (not in needs_reconciliation, or closed). -> 409 not_resolvable
 */
import type { LinkState, SwapState } from '../../workflows/messages';

export const SWAP_STATES_ALL = [
  'initializing',
  'awaiting_pin',
  'confirming',
  'confirmed',
  'expired',
  'cancelled',
  'failed',
  'needs_reconciliation',
  'reconciled',
] as const satisfies readonly SwapState[];

export const LINK_STATES_ALL = [
  'creating',
  'awaiting_payment',
  'paid',
  'failed',
  'expired',
  'cancelled',
  'needs_reconciliation',
  'reconciled',
] as const satisfies readonly LinkState[];

export class NotResolvableError<V extends { state: string } = { state: string }> extends Error {
  override name = 'NotResolvableError';
  constructor(
    readonly kind: 'swap' | 'payment_link',
    readonly flowId: string,
    readonly view: V,
    why: string,
  ) {
    super(`the ${kind.replace('_', ' ')} ${flowId} cannot be resolved: ${why}`);
  }
}
