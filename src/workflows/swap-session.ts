/**
 * A swap's state and decisions, workflow-safe (no I/O): what the swap is, which PIN waits to be
 * used, what a confirmation's answer means (`decideConfirm`, a pure function), and how a doubt is
 * settled from the provider's notification. The workflow function (swap.ts) only sequences the
 * steps; message handlers are one line each, calling methods here.
 */
import { expirySafetyMarginMs } from '../contract/expiry';
import { notificationFacts } from '../contract/notifications';
import { ApplicationFailure, condition, workflowInfo } from '@temporalio/workflow';
import type { ConfirmOutcome, SwapInitResult } from '../activities/types';
import { SEALED_PREFIX } from '../codec/sealed-prefix';
import { FlowSession } from './flow-session';
import { swapCurrentDetails } from './flow-summary';
import {
  type NotificationInput,
  type PinOutcome,
  type PinSubmission,
  SWAP_TERMINAL_STATES,
  type SwapState,
  type SwapView,
  type SwapWorkflowInput,
} from './messages';

/** How long a confirmation in doubt waits for the provider's notification, unless the input says. */
export const DEFAULT_SETTLE_WAIT_SECONDS = 900;

export type ConfirmDecision =
  | { kind: 'final'; state: SwapState; outcome: PinOutcome['outcome']; reason?: string; attemptsLeft?: number }
  /** The provider may have confirmed: wait for its notification (settle), then decide. */
  | { kind: 'settle'; evidence: string };

/**
 * What the provider's answer to one confirmation means. Pure: the same inputs, the same decision.
 * `attemptsLeft` counts this attempt as used; `pastDeadline` is our window (provider's less margin).
 */
export function decideConfirm(res: ConfirmOutcome, attemptsLeft: number, pastDeadline: boolean): ConfirmDecision {
  switch (res.outcome) {
    case 'confirmed':
      return { kind: 'final', state: 'confirmed', outcome: 'confirmed' };
    case 'wrong_pin':
      if (attemptsLeft <= 0) return { kind: 'final', state: 'failed', outcome: 'pin_rejected', attemptsLeft: 0, reason: 'PIN rejected: attempts exhausted' };
      if (pastDeadline) return { kind: 'final', state: 'expired', outcome: 'pin_rejected', attemptsLeft, reason: 'PIN rejected and the confirmation window closed' };
      return { kind: 'final', state: 'awaiting_pin', outcome: 'pin_rejected', attemptsLeft };
    case 'token_used_on_retry':
      return { kind: 'settle', evidence: `a retried confirmation was told "${res.message}": the earlier attempt most likely confirmed` };
    case 'token_invalid': {
      const state = pastDeadline ? 'expired' : 'failed';
      return { kind: 'final', state, outcome: state, reason: `the provider refused the swap's auth_token: ${res.message}` };
    }
    default:
      return { kind: 'final', state: 'failed', outcome: 'failed', reason: `the provider rejected the confirmation: ${res.message}` };
  }
}

/** The answer a PIN submission gets once the swap is in `state`. */
export function outcomeOf(state: SwapState, reason?: string): PinOutcome {
  switch (state) {
    case 'confirmed':
    case 'expired':
    case 'cancelled':
      return { outcome: state, state };
    case 'needs_reconciliation':
      return { outcome: 'needs_reconciliation', state, reason };
    default:
      return { outcome: 'failed', state, reason };
  }
}

/** The provider's confirmation window, fixed once the swap was initialised. */
export interface SwapWindow {
  readonly init: SwapInitResult;
  /** No confirmation is attempted after this (the provider's window less a safety margin). */
  readonly deadlineMs: number;
  /** When the provider expires the auth token (confirm retries stop here). */
  readonly providerExpiryMs: number;
}

export class SwapSession extends FlowSession<SwapState> {
  readonly maxAttempts: number;
  private win: SwapWindow | undefined;
  private used = 0;
  private providerMsg: string | undefined;
  /** The one PIN waiting to be used (sealed). Cleared as soon as it has been sent. */
  private waiting: PinSubmission | undefined;
  /** While a confirmation is in doubt: the provider's word on it, from a notification. */
  settledBy: 'confirmed' | 'failed' | undefined;
  private readonly outcomes = new Map<string, PinOutcome>();

  constructor(readonly input: SwapWorkflowInput) {
    super('initializing', 'swap', input.request.txn_ref, SWAP_TERMINAL_STATES, ['initializing', 'awaiting_pin'], input.webhook_url);
    this.maxAttempts = Math.max(1, input.pin_max_attempts);
    this.refreshDetails();
  }

  get init(): SwapInitResult | undefined {
    return this.win?.init;
  }

  get attemptsUsed(): number {
    return this.used;
  }

  /** A PIN is waiting to be used, or being confirmed. */
  get hasPendingPin(): boolean {
    return this.waiting !== undefined;
  }

  /**
   * The provider answered the initialisation: the window runs from its answer, less a safety
   * margin, so we never confirm with a token the provider has already expired.
   */
  startWindow(init: SwapInitResult): SwapWindow {
    const windowMs = init.expires_in_seconds * 1000;
    this.win = {
      init,
      deadlineMs: init.initialized_at_ms + windowMs - expirySafetyMarginMs(windowMs),
      providerExpiryMs: init.initialized_at_ms + windowMs,
    };
    return this.win;
  }

  /** Takes the waiting PIN for a confirmation and counts the attempt (before the state moves, so Temporal Web's details show it). */
  beginAttempt(): PinSubmission | undefined {
    if (this.waiting === undefined) return undefined;
    this.used += 1;
    return this.waiting;
  }

  /** The PIN is dropped as soon as it has been used. */
  dropPin(): void {
    this.waiting = undefined;
  }

  /** A PIN accepted in the same instant as a cancel or the deadline gets the final state as its answer. */
  answerWaitingPin(): void {
    if (this.waiting === undefined) return;
    this.recordOutcome(this.waiting.submission_id, outcomeOf(this.state, this.status.reason));
    this.waiting = undefined;
  }

  noteProviderMessage(message: string | undefined): void {
    this.providerMsg = message;
  }

  protected currentDetails(): string {
    const { request } = this.input;
    const init = this.init;
    return swapCurrentDetails({
      state: this.state,
      from_currency: init?.from_currency ?? request.from_currency,
      to_currency: init?.to_currency ?? request.to_currency,
      amount: init?.amount ?? request.amount,
      converted_amount: init?.converted_amount,
      rate_used: init?.rate_used,
      deadline_ms: this.win?.deadlineMs,
      attempts_used: this.used,
      attempts_left: Math.max(0, this.maxAttempts - this.used),
      reason: this.status.reason,
      notifications: this.notifications.size(),
      updated_at: this.status.updatedAt,
    });
  }

  get settleWaitMs(): number {
    return Math.max(0, this.input.settle_wait_seconds ?? DEFAULT_SETTLE_WAIT_SECONDS) * 1000;
  }

  view(): SwapView {
    const { request } = this.input;
    const init = this.init;
    return {
      swap_id: workflowInfo().workflowId,
      state: this.state,
      txn_ref: request.txn_ref,
      user_ref: request.user_ref,
      payment_ref: init?.payment_ref,
      from_currency: init?.from_currency ?? request.from_currency,
      to_currency: init?.to_currency ?? request.to_currency,
      amount: init?.amount ?? request.amount,
      converted_amount: init?.converted_amount,
      rate_used: init?.rate_used,
      expires_in_seconds: init?.expires_in_seconds,
      expires_at: this.win === undefined ? undefined : new Date(this.win.deadlineMs).toISOString(),
      pin_attempts_used: this.used,
      pin_attempts_left: Math.max(0, this.maxAttempts - this.used),
      reason: this.status.reason,
      provider_message: this.providerMsg,
      notifications: this.notifications.list(),
      ...(this.reconciliation ? { reconciliation: this.reconciliation } : {}),
      events: this.events.list(),
      updated_at: this.status.updatedAt,
    };
  }

  // ---- PINs ------------------------------------------------------------------------------------

  /** Shape check of a submission: what is wrong with it, or undefined. */
  static checkSubmission(sub: PinSubmission): string | undefined {
    if (!sub || typeof sub.sealed_pin !== 'string' || !sub.sealed_pin.startsWith(SEALED_PREFIX)) return 'sealed_pin: must be a sealed PIN';
    if (typeof sub.submission_id !== 'string' || sub.submission_id.length === 0 || sub.submission_id.length > 100) {
      return 'submission_id: must be a non-empty string of at most 100 characters';
    }
    return undefined;
  }

  accept(sub: PinSubmission): boolean {
    if (this.state !== 'awaiting_pin' || this.waiting !== undefined || this.cancelRequested !== undefined) return false;
    this.waiting = { sealed_pin: sub.sealed_pin, submission_id: sub.submission_id };
    return true;
  }

  /** The update's validator (synchronous): throws what is wrong, or accepts a replay. */
  validatePin(sub: PinSubmission): void {
    const problem = SwapSession.checkSubmission(sub);
    if (problem) throw new Error(problem);
    if (this.outcomes.has(sub.submission_id)) return; // idempotent replay of a finished submission
    if (this.state !== 'awaiting_pin') throw new Error(`swap is not awaiting a PIN (state: ${this.state})`);
    if (this.waiting !== undefined) throw new Error('a PIN for this swap is already being confirmed');
  }

  /** The update's body after validation: the outcome now, or undefined to wait for `outcomeOfPin`. */
  admitPin(sub: PinSubmission): PinOutcome | undefined {
    const known = this.outcomes.get(sub.submission_id);
    if (known) return known;
    if (this.accept(sub)) return undefined;
    // Raced with another PIN or a state change after validation: a terminal swap answers with its
    // outcome; otherwise this update fails (the swap does not) and the caller may retry.
    if (this.isTerminal()) return outcomeOf(this.state, this.status.reason);
    throw ApplicationFailure.create({ type: 'PinNotAccepted', message: `a PIN for this swap is already being confirmed (state: ${this.state})` });
  }

  /** Waits until the submission's confirmation has an outcome, and answers it. */
  async outcomeOfPin(submissionId: string): Promise<PinOutcome> {
    for (;;) {
      const outcome = this.outcomes.get(submissionId);
      if (outcome) return outcome;
      await condition(() => this.outcomes.has(submissionId));
    }
  }

  recordOutcome(submissionId: string, outcome: PinOutcome): void {
    this.outcomes.set(submissionId, outcome);
  }

  // ---- cancel ----------------------------------------------------------------------------------

  /** The cancel update's validator: refuses what cannot be cancelled (synchronous). */
  validateCancel(): void {
    if (!this.isCancellable() || this.waiting !== undefined) {
      throw new Error(`swap cannot be cancelled in state ${this.state}${this.waiting ? ' (a PIN is being confirmed)' : ''}`);
    }
  }

  // ---- notifications ---------------------------------------------------------------------------

  /**
   * Records a notification. A success or failure for this swap settles a confirmation in doubt; a
   * success after the swap ended failed or expired is money that moved: needs_reconciliation.
   */
  notify(n: NotificationInput): void {
    this.events.refreshTypes(n?.registered_types);
    const record = this.notifications.add(n);
    this.refreshDetails();
    if (!record || (record.outcome !== 'paid' && record.outcome !== 'failed')) return;
    if (!this.matchesSwap(n.payload)) return;
    if (this.state === 'confirming' && this.settledBy === undefined) {
      this.settledBy = record.outcome === 'paid' ? 'confirmed' : 'failed';
      record.applied = true;
    } else if (record.outcome === 'paid' && (this.state === 'failed' || this.state === 'expired')) {
      record.applied = true;
      this.set('needs_reconciliation', `the provider notified a successful swap after it ended ${this.state}: reconcile with the user`);
    }
  }

  /** A notification names this swap when its payment_ref (if any) is the initialization's. */
  private matchesSwap(payload: unknown): boolean {
    const ref = notificationFacts(payload).payment_ref;
    return ref === undefined || this.init?.payment_ref === undefined || ref === this.init.payment_ref;
  }
}
