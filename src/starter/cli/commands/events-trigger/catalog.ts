/**
 * What `mpf events trigger <type>` does for each merchant event type, in words (for `--list` and
 * the help; light: loads nothing). The recipes that do it are in recipes.ts; a test holds the two
 * and EVENT_TYPES together.
 */
import { EVENT_TYPES } from '../../../../contract/merchant-events';

/** The confirmation window of the swap.expired trigger's swap: it closes soon after the start. */
export const SHORT_WINDOW_SECONDS = 3;
/** The window of a swap left in doubt: long enough to send the PIN, short enough that its unanswered confirmation is soon given up. */
export const DOUBT_WINDOW_SECONDS = 10;
/** How slowly the simulator creates the payment_link.terminated trigger's link: the time to terminate it while it is created. */
export const LINK_CREATE_DELAY_MS = 6_000;

export const HOW: Readonly<Record<string, string>> = {
  'swap.awaiting_pin': 'starts a swap (the provider initialises it and it waits for the PIN)',
  'swap.confirmed': "starts a swap and sends the simulator's wallet PIN",
  'swap.pin_rejected': 'starts a swap and sends a wrong PIN (the swap waits for another)',
  'swap.cancelled': 'starts a swap and cancels it',
  'swap.expired': `starts a swap the simulator gives a ${SHORT_WINDOW_SECONDS} s confirmation window, and sends no PIN`,
  'swap.failed': 'starts a swap whose initialisation the simulator refuses (a fault scoped to that swap)',
  'swap.needs_reconciliation':
    `starts a swap with a ${DOUBT_WINDOW_SECONDS} s window whose confirmations the simulator drops unanswered (scoped fault); ` +
    "the gateway's SWAP_SETTLE_WAIT_SECONDS then passes without a notification",
  'swap.reconciled': 'swap.needs_reconciliation, then resolves it as failed through the operator route (an operator key)',
  'payment_link.created': 'creates a payment link',
  'payment_link.paid': 'creates a payment link and pays it on the simulator',
  'payment_link.failed': 'creates a payment link and fails its payment on the simulator',
  'payment_link.cancelled': 'creates a payment link and cancels it',
  'payment_link.expired': "creates a payment link and waits out its lifetime (the gateway's LINK_LIFETIME_SECONDS: give it a short one)",
  'payment_link.needs_reconciliation': 'creates a payment link, cancels it, then the customer pays it on the simulator',
  'payment_link.reconciled': 'payment_link.needs_reconciliation, then resolves it as paid through the operator route (an operator key)',
  'swap.terminated': "starts a swap and terminates it in Temporal while it awaits the PIN (the operator's Temporal settings: TEMPORAL_ADDRESS, PAYLOAD_ENCRYPTION_KEYS)",
  'payment_link.terminated':
    "creates a payment link the simulator creates slowly (scoped fault) and terminates it in Temporal while it is created (the operator's Temporal settings: TEMPORAL_ADDRESS, PAYLOAD_ENCRYPTION_KEYS)",
  'provider.paused': 'pauses money-moving calls through the operator route and resumes them at once (an operator key)',
  'provider.resumed': 'pauses money-moving calls through the operator route and resumes them at once (an operator key)',
  'provider.breaker_opened':
    "starts a swap whose confirmations the simulator answers 503 (scoped fault) until the confirm breaker opens, then removes the fault (an operator key)",
  'provider.breaker_closed': "provider.breaker_opened, then a second swap whose held confirmation is the breaker's trial call once its probe succeeds (PROVIDER_BREAKER_COOLDOWN_SECONDS, 30 s by default)",
};

/** The event types, each with what the trigger does for it. */
export function triggerList(): Array<{ type: string; how: string }> {
  return EVENT_TYPES.map((type) => ({ type, how: HOW[type] ?? '(no trigger for this type yet)' }));
}
