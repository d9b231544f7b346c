/**
 * Every message of the flows, shared by the workflows and the starter (typed client, gateway,
 * CLI): workflow names, inputs, signals, queries, updates and the views they return. Pure types
 * and definitions: safe inside the workflow sandbox.
 *
 * Nothing here ever carries the PIN or auth_token in plaintext: a PIN travels sealed
 * (`sealed:v1:…`, sealed by the gateway/client, unsealed only inside the confirm activity).
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { HostedLinkRequest, NotificationOutcome, SwapInitRequest } from '../contract/provider';
import { flowId } from './flow-ids';
import type { Reconciliation, ResolveInput } from './reconciliation';

export type { Reconciliation, ResolveInput } from './reconciliation';
export { RESOLUTION_OUTCOMES } from './reconciliation';
import type { FlowEventSummary } from './event-types';

export { type FlowKind, flowId, flowKindOf } from './flow-ids';

// ---------------------------------------------------------------------------------------------
// Workflow ids (fixed contract)
// ---------------------------------------------------------------------------------------------

export const swapWorkflowId = (txnRef: string): string => flowId('swap', txnRef);
export const linkWorkflowId = (txnMerchantRef: string): string => flowId('payment_link', txnMerchantRef);

// ---------------------------------------------------------------------------------------------
// Notifications (both flows): what the receiver signals after it checked the URL token
// ---------------------------------------------------------------------------------------------

export interface NotificationInput {
  /** Deduplication key: the payload's own id when it has one, else a hash of the raw body. */
  dedup_key: string;
  received_at: string;
  /** The payload as received (JSON); kept in (encrypted) workflow state. */
  payload: unknown;
  /**
   * The flows' event types the deployment's registered webhook endpoints took when the receiver
   * signalled (its reading at most a few seconds old, as a worker's): the event of the state this
   * notification decides then needs no eventTargets local activity (FRESH_TARGETS_PATCH). Absent
   * when they could not be read at once: the flow asks, as before.
   */
  registered_types?: string[];
}

export interface NotificationRecord {
  dedup_key: string;
  received_at: string;
  outcome: NotificationOutcome;
  /** True when it moved the flow's state. */
  applied: boolean;
  /** Deliveries of the same notification (retries, duplicates). */
  deliveries: number;
  payload: unknown;
}

export const notificationSignal = defineSignal<[NotificationInput]>('notification');

// ---------------------------------------------------------------------------------------------
// Swap
// ---------------------------------------------------------------------------------------------

export const SWAP_WORKFLOW_TYPE = 'swapWorkflow';

/**
 * Every state of a swap, the one list (the type, the gateway's schemas, list filters and metrics
 * derive from it). `reconciled`: an operator resolved needs_reconciliation (`resolve` update); the
 * outcome is in `reconciliation`. `terminated`: closed in Temporal from outside before anything
 * that moves money was sent (closed-flows.ts).
 */
export const SWAP_STATES = [
  'initializing',
  'awaiting_pin',
  'confirming',
  'confirmed',
  'expired',
  'cancelled',
  'failed',
  'needs_reconciliation',
  'reconciled',
  'terminated',
] as const;
export type SwapState = (typeof SWAP_STATES)[number];

/** The states a swap does not leave on its own (needs_reconciliation waits only for an operator). */
export const SWAP_TERMINAL_STATES = [
  'confirmed',
  'expired',
  'cancelled',
  'failed',
  'needs_reconciliation',
  'reconciled',
  'terminated',
] as const satisfies readonly SwapState[];

export interface SwapWorkflowInput {
  request: SwapInitRequest;
  /** Our cap on PIN attempts (default 3). */
  pin_max_attempts: number;
  /** After confirmation, wait up to this long for the provider's notification (0 = don't). */
  notification_wait_seconds: number;
  /**
   * A confirmation in doubt (its answer lost, or a retry told the token was used) waits up to this
   * long for the provider's notification before it needs reconciliation. Absent: 900 s.
   */
  settle_wait_seconds?: number;
  /** The merchant's own endpoint for this swap's events (besides the worker's MERCHANT_WEBHOOK_URL). */
  webhook_url?: string;
}

export interface SwapView {
  swap_id: string;
  state: SwapState;
  txn_ref: string;
  user_ref: string;
  payment_ref?: string;
  from_currency: string;
  to_currency: string;
  amount: number;
  converted_amount?: number;
  rate_used?: number;
  expires_in_seconds?: number;
  /** ISO time after which no confirmation is attempted (provider window less a safety margin). */
  expires_at?: string;
  pin_attempts_used: number;
  pin_attempts_left: number;
  /** Why the swap ended failed / needs_reconciliation / cancelled, in words an operator can use. */
  reason?: string;
  provider_message?: string;
  notifications: NotificationRecord[];
  /** Who resolved needs_reconciliation, when, with what outcome and note (state `reconciled`). */
  reconciliation?: Reconciliation;
  /** The merchant events this flow emitted, in order (deliveries merged in by the client). Absent on flows from before events. */
  events?: FlowEventSummary[];
  updated_at: string;
}

export interface PinSubmission {
  /** The PIN sealed with the payload key (`sealed:v1:…`); never the PIN itself. */
  sealed_pin: string;
  /** Caller's id for this submission (idempotency of a retried update). */
  submission_id: string;
}

export type PinOutcome =
  | { outcome: 'confirmed'; state: SwapState }
  | { outcome: 'pin_rejected'; state: SwapState; attempts_left: number }
  | { outcome: 'expired'; state: SwapState }
  | { outcome: 'cancelled'; state: SwapState }
  | { outcome: 'failed'; state: SwapState; reason?: string }
  | { outcome: 'needs_reconciliation'; state: SwapState; reason?: string };

/** Fire-and-forget PIN (a signal; the update below answers the outcome). */
export const submitPinSignal = defineSignal<[PinSubmission]>('submitPin');
/** PIN with an answer: validated synchronously, returns the outcome of that PIN. */
export const submitPinUpdate = defineUpdate<PinOutcome, [PinSubmission]>('submitPinAndWait');
/** Cancels a swap still awaiting its PIN (fire and forget; kept for flows started before the update). */
export const cancelSwapSignal = defineSignal<[{ reason?: string }]>('cancel');
/** Cancels a swap still awaiting its PIN and answers its final view; the validator refuses otherwise. */
export const cancelSwapUpdate = defineUpdate<SwapView, [{ reason?: string }]>('cancelAndWait');
export const swapStateQuery = defineQuery<SwapView>('state');
/**
 * Resolves a swap in needs_reconciliation (outcome confirmed | failed, provider_reference,
 * operator, note) and answers its `reconciled` view; the validator refuses any other state.
 */
export const resolveSwapUpdate = defineUpdate<SwapView, [ResolveInput]>('resolve');
/** Used with update-with-start: returns once initialization has finished (either way). */
export const swapInitializedUpdate = defineUpdate<SwapView>('initialized');

// ---------------------------------------------------------------------------------------------
// Payment link
// ---------------------------------------------------------------------------------------------

export const LINK_WORKFLOW_TYPE = 'paymentLinkWorkflow';

/** Every state of a payment link, the one list (see SWAP_STATES). */
export const LINK_STATES = [
  'creating',
  'awaiting_payment',
  'paid',
  'failed',
  'expired',
  'cancelled',
  'needs_reconciliation',
  'reconciled',
  'terminated',
] as const;
export type LinkState = (typeof LINK_STATES)[number];

/** The states a link does not leave on its own (see SWAP_TERMINAL_STATES). */
export const LINK_TERMINAL_STATES = ['paid', 'failed', 'expired', 'cancelled', 'needs_reconciliation', 'reconciled', 'terminated'] as const satisfies readonly LinkState[];

export interface LinkWorkflowInput {
  request: HostedLinkRequest;
  /** How long the link is awaited before it ends `expired`. */
  lifetime_seconds: number;
  /**
   * After a terminal state, keep recording late notifications this long (0 = end at once).
   * A payment notified after the link expired or was cancelled moves it to needs_reconciliation.
   */
  late_notification_grace_seconds?: number;
  /** The merchant's own endpoint for this link's events (besides the worker's MERCHANT_WEBHOOK_URL). */
  webhook_url?: string;
}

export interface LinkView {
  link_id: string;
  state: LinkState;
  txn_merchant_ref: string;
  user_ref: string;
  amount: number;
  currency: string;
  payment_ref?: string;
  pay_link?: string;
  redirect_url: string;
  expires_at?: string;
  reason?: string;
  notifications: NotificationRecord[];
  /** Who resolved needs_reconciliation, when, with what outcome and note (state `reconciled`). */
  reconciliation?: Reconciliation;
  /** The merchant events this flow emitted, in order (deliveries merged in by the client). Absent on flows from before events. */
  events?: FlowEventSummary[];
  updated_at: string;
}

export const cancelLinkSignal = defineSignal<[{ reason?: string }]>('cancel');
/** Cancels a link still awaiting payment and answers its view; the validator refuses otherwise. */
export const cancelLinkUpdate = defineUpdate<LinkView, [{ reason?: string }]>('cancelAndWait');
export const linkStateQuery = defineQuery<LinkView>('state');
/** Resolves a link in needs_reconciliation (outcome paid | failed, …); see resolveSwapUpdate. */
export const resolveLinkUpdate = defineUpdate<LinkView, [ResolveInput]>('resolve');
/** Used with update-with-start: returns once the link was created (or creation failed). */
export const linkCreatedUpdate = defineUpdate<LinkView>('created');

// ---------------------------------------------------------------------------------------------
// Categories
// ---------------------------------------------------------------------------------------------

export const CATEGORIES_WORKFLOW_TYPE = 'categoriesWorkflow';
