/**
 * The swap workflow (`swap-<txn_ref>`): initialise (activity) → await the wallet PIN by signal or
 * update, no longer than the provider's window less a safety margin → confirm (activity).
 *
 * - The auth_token and PIN exist here only sealed; the sealed PIN is dropped once used.
 * - A rejected PIN returns to awaiting_pin while attempts and time remain; past the cap the swap
 *   fails closed; past the window it ends expired; `cancel` ends one awaiting its PIN.
 * - A confirmation that may have reached the provider without an answer is never repeated: the
 *   swap ends needs_reconciliation.
 */
import {
  ActivityFailure,
  allHandlersFinished,
  ApplicationFailure,
  condition,
  log,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { ProviderActivities, SwapInitResult } from '../activities/types';
import {
  PROVIDER_ACTIVITY_START_TO_CLOSE,
  PROVIDER_FAILURE_TYPES,
  providerRetryPolicy,
} from '../activities/retry-policies';
import { expirySafetyMarginMs } from '../contract/provider';
import {
  cancelSwapSignal,
  notificationSignal,
  type PinOutcome,
  type PinSubmission,
  submitPinSignal,
  submitPinUpdate,
  SWAP_TERMINAL_STATES,
  swapInitializedUpdate,
  swapStateQuery,
  type SwapState,
  type SwapView,
  type SwapWorkflowInput,
} from './messages';
import { SEALED_PREFIX } from '../codec/sealed-prefix';
import { describeFailure, failureType } from './failures';
import { NotificationBook } from './notifications';
import { FlowStatus } from './flow-status';

const MIN_CONFIRM_BUDGET_MS = 1_000;

const { initSwap } = proxyActivities<ProviderActivities>({
  startToCloseTimeout: PROVIDER_ACTIVITY_START_TO_CLOSE,
  scheduleToCloseTimeout: '2 minutes',
  retry: providerRetryPolicy,
});

export async function swapWorkflow(input: SwapWorkflowInput): Promise<SwapView> {
  const { request } = input;
  const maxAttempts = Math.max(1, input.pin_max_attempts);
  const notifications = new NotificationBook();

  const status = new FlowStatus<SwapState>('initializing', 'swap', request.txn_ref);
  let init: SwapInitResult | undefined;
  let deadlineMs: number | undefined;
  let attemptsUsed = 0;
  let providerMessage: string | undefined;
  let cancelRequested: string | undefined;
  /** The one PIN waiting to be used (sealed). Cleared as soon as it has been sent. */
  let pending: PinSubmission | undefined;
  const outcomes = new Map<string, PinOutcome>();

  const view = (): SwapView => ({
    swap_id: workflowInfo().workflowId,
    state: status.state,
    txn_ref: request.txn_ref,
    user_ref: request.user_ref,
    payment_ref: init?.payment_ref,
    from_currency: init?.from_currency ?? request.from_currency,
    to_currency: init?.to_currency ?? request.to_currency,
    amount: init?.amount ?? request.amount,
    converted_amount: init?.converted_amount,
    rate_used: init?.rate_used,
    expires_in_seconds: init?.expires_in_seconds,
    expires_at: deadlineMs === undefined ? undefined : new Date(deadlineMs).toISOString(),
    pin_attempts_used: attemptsUsed,
    pin_attempts_left: Math.max(0, maxAttempts - attemptsUsed),
    reason: status.reason,
    provider_message: providerMessage,
    notifications: notifications.list(),
    updated_at: status.updatedAt,
  });

  const setState = (next: SwapState, why?: string): void => status.set(next, why);

  const outcomeOf = (s: SwapState): PinOutcome => {
    switch (s) {
      case 'confirmed':
        return { outcome: 'confirmed', state: s };
      case 'expired':
        return { outcome: 'expired', state: s };
      case 'cancelled':
        return { outcome: 'cancelled', state: s };
      case 'needs_reconciliation':
        return { outcome: 'needs_reconciliation', state: s, reason: status.reason };
      default:
        return { outcome: 'failed', state: s, reason: status.reason };
    }
  };

  /** Shape check of a submission: what is wrong with it, or undefined (the validator throws it, the signal logs it). */
  const checkSubmission = (sub: PinSubmission): string | undefined => {
    if (!sub || typeof sub.sealed_pin !== 'string' || !sub.sealed_pin.startsWith(SEALED_PREFIX)) {
      return 'sealed_pin: must be a sealed PIN';
    }
    if (typeof sub.submission_id !== 'string' || sub.submission_id.length === 0 || sub.submission_id.length > 100) {
      return 'submission_id: must be a non-empty string of at most 100 characters';
    }
    return undefined;
  };

  const accept = (sub: PinSubmission): boolean => {
    if (status.state !== 'awaiting_pin' || pending !== undefined || cancelRequested !== undefined) return false;
    pending = { sealed_pin: sub.sealed_pin, submission_id: sub.submission_id };
    return true;
  };

  setHandler(swapStateQuery, view);
  setHandler(swapInitializedUpdate, async () => {
    await condition(() => status.state !== 'initializing');
    return view();
  });
  setHandler(submitPinSignal, (sub) => {
    const problem = checkSubmission(sub);
    if (problem) {
      log.warn('PIN signal ignored: malformed', { problem });
      return;
    }
    if (!accept(sub)) log.warn('PIN signal ignored: swap not awaiting a PIN', { state: status.state });
  });
  setHandler(
    submitPinUpdate,
    async (sub) => {
      if (outcomes.has(sub.submission_id)) return outcomes.get(sub.submission_id)!;
      if (!accept(sub)) {
        // Raced with another PIN or a state change after validation: a terminal swap answers with
        // its outcome; otherwise this update fails (the swap does not) and the caller may retry.
        if (SWAP_TERMINAL_STATES.includes(status.state)) return outcomeOf(status.state);
        throw ApplicationFailure.create({ type: 'PinNotAccepted', message: `a PIN for this swap is already being confirmed (state: ${status.state})` });
      }
      await condition(() => outcomes.has(sub.submission_id));
      return outcomes.get(sub.submission_id)!;
    },
    {
      validator: (sub) => {
        const problem = checkSubmission(sub);
        if (problem) throw new Error(problem);
        if (outcomes.has(sub.submission_id)) return; // idempotent replay of a finished submission
        if (status.state !== 'awaiting_pin') throw new Error(`swap is not awaiting a PIN (state: ${status.state})`);
        if (pending !== undefined) throw new Error('a PIN for this swap is already being confirmed');
      },
    },
  );
  setHandler(cancelSwapSignal, (arg) => {
    if (status.state === 'initializing' || status.state === 'awaiting_pin') cancelRequested = arg?.reason?.slice(0, 200) || 'cancelled by request';
  });
  setHandler(notificationSignal, (n) => {
    notifications.add(n);
  });

  // --- 1. Initialise --------------------------------------------------------------------------
  try {
    init = await initSwap(request);
  } catch (err) {
    const type = failureType(err);
    if (type === PROVIDER_FAILURE_TYPES.ambiguous) {
      setState('needs_reconciliation', `initialization may have reached the provider without an answer (${describeFailure(err)})`);
    } else {
      setState('failed', `initialization failed (${describeFailure(err)})`);
    }
    return view();
  }
  // The window is measured from the provider's answer, less a safety margin, so we never confirm
  // with a token the provider has already expired.
  const windowMs = init.expires_in_seconds * 1000;
  deadlineMs = init.initialized_at_ms + windowMs - expirySafetyMarginMs(windowMs);
  const providerExpiryMs = init.initialized_at_ms + windowMs;
  if (cancelRequested !== undefined) {
    setState('cancelled', cancelRequested);
    return view();
  }
  setState('awaiting_pin');

  // --- 2. Await PINs and confirm ----------------------------------------------------------------
  for (;;) {
    const remaining = deadlineMs - Date.now();
    const got = remaining > 0 && (await condition(() => pending !== undefined || cancelRequested !== undefined, remaining));
    if (!got) {
      setState('expired', 'no valid PIN before the confirmation window closed');
      break;
    }
    if (cancelRequested !== undefined) {
      setState('cancelled', cancelRequested);
      break;
    }
    const sub = pending!;
    setState('confirming');
    attemptsUsed += 1;
    const budgetMs = Math.max(MIN_CONFIRM_BUDGET_MS, providerExpiryMs - Date.now());
    const { confirmSwap } = proxyActivities<ProviderActivities>({
      startToCloseTimeout: PROVIDER_ACTIVITY_START_TO_CLOSE,
      // Transient and rate-limited failures are retried only inside the provider's window.
      scheduleToCloseTimeout: budgetMs,
      retry: providerRetryPolicy,
    });
    let outcome: PinOutcome;
    try {
      const res = await confirmSwap({ user_ref: request.user_ref, sealed_auth_token: init.sealed_auth_token, sealed_pin: sub.sealed_pin });
      providerMessage = res.message;
      if (res.outcome === 'confirmed') {
        setState('confirmed');
        outcome = outcomeOf(status.state);
      } else if (res.outcome === 'wrong_pin') {
        const left = maxAttempts - attemptsUsed;
        if (left <= 0) {
          setState('failed', `PIN rejected ${attemptsUsed} times: attempts exhausted`);
          outcome = { outcome: 'pin_rejected', state: status.state, attempts_left: 0 };
        } else if (Date.now() >= deadlineMs) {
          setState('expired', 'PIN rejected and the confirmation window closed');
          outcome = { outcome: 'pin_rejected', state: status.state, attempts_left: left };
        } else {
          setState('awaiting_pin');
          outcome = { outcome: 'pin_rejected', state: status.state, attempts_left: left };
        }
      } else if (res.outcome === 'token_invalid') {
        setState(Date.now() >= deadlineMs ? 'expired' : 'failed', `the provider refused the swap's auth_token: ${res.message}`);
        outcome = outcomeOf(status.state);
      } else {
        setState('failed', `the provider rejected the confirmation: ${res.message}`);
        outcome = outcomeOf(status.state);
      }
    } catch (err) {
      const type = failureType(err);
      if (type === PROVIDER_FAILURE_TYPES.ambiguous) {
        setState('needs_reconciliation', `confirmation may have reached the provider without an answer (${describeFailure(err)})`);
      } else if (type === undefined && err instanceof ActivityFailure) {
        // Timed out inside the window after transient retries: the last attempt may have been sent.
        setState('needs_reconciliation', `confirmation did not finish inside the window (${describeFailure(err)})`);
      } else {
        setState('failed', `confirmation failed (${describeFailure(err)})`);
      }
      outcome = outcomeOf(status.state);
    } finally {
      pending = undefined; // the PIN is dropped as soon as it has been used
    }
    outcomes.set(sub.submission_id, outcome);
    if (status.state !== 'awaiting_pin') break;
  }

  // --- 3. Optionally wait (bounded) for the provider's notification of the confirmed swap -------
  if (status.state === 'confirmed' && input.notification_wait_seconds > 0) {
    await condition(() => notifications.size() > 0, input.notification_wait_seconds * 1000);
  }
  // A PIN accepted in the same instant as a cancel or the deadline gets the final state as answer.
  if (pending !== undefined) {
    outcomes.set(pending.submission_id, outcomeOf(status.state));
    pending = undefined;
  }
  // Let in-flight update handlers return their outcome before the run completes.
  await condition(allHandlersFinished);
  return view();
}
