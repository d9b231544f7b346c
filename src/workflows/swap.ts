/**
 * The swap workflow (`swap-<txn_ref>`), as a table of contents: initialise (activity) → await the
 * wallet PIN by signal or update, no longer than the provider's window less a safety margin →
 * confirm (activity) → settle a confirmation in doubt from the provider's notification. State and
 * decisions live in SwapSession (swap-session.ts).
 *
 * - The auth_token and PIN exist here only sealed; the sealed PIN is dropped once used.
 * - An initialization whose answer was lost is retried (the provider's duplicate check makes that
 *   safe); proof that a lost one was applied ends the swap `failed`: no money moved.
 * - A confirmation whose answer was lost is retried inside the window (the auth_token is
 *   single-use); when the retry says the token was used, or the window runs out, the swap waits
 *   for the provider's notification and settles from it; only with none it is needs_reconciliation.
 * - A cancel (update, signal, or a workflow cancellation from Temporal Web) ends a swap awaiting
 *   its PIN; a confirmation under way is never abandoned.
 */
import {
  ActivityFailure,
  allHandlersFinished,
  CancellationScope,
  condition,
  log,
  patched,
  proxyActivities,
  setHandler,
} from '@temporalio/workflow';
import type { ProviderActivities } from '../activities/types';
import { confirmRetryPolicy, PROVIDER_ACTIVITY_HEARTBEAT_TIMEOUT, PROVIDER_ACTIVITY_START_TO_CLOSE, providerRetryPolicy } from '../activities/retry-policies';
import { creationFailureReason, describeFailure, heldThroughout, heldUntilTimeout } from './failures';
import { HELD_TIMEOUT_PATCH, PROVIDER_GUARD_PATCH } from './patches';
import {
  cancelSwapSignal,
  cancelSwapUpdate,
  notificationSignal,
  type PinOutcome,
  resolveSwapUpdate,
  submitPinSignal,
  submitPinUpdate,
  swapInitializedUpdate,
  swapStateQuery,
  type SwapView,
  type SwapWorkflowInput,
} from './messages';
import { awaitResolution, lateDoubt } from './reconciliation';
import { flowMetrics } from './flow-metrics';
import { decideConfirm, outcomeOf, SwapSession, type SwapWindow } from './swap-session';

const MIN_CONFIRM_BUDGET_MS = 1_000;

const { initSwap } = proxyActivities<ProviderActivities>({
  startToCloseTimeout: PROVIDER_ACTIVITY_START_TO_CLOSE,
  heartbeatTimeout: PROVIDER_ACTIVITY_HEARTBEAT_TIMEOUT,
  scheduleToCloseTimeout: '2 minutes',
  retry: providerRetryPolicy,
});

export async function swapWorkflow(input: SwapWorkflowInput): Promise<SwapView> {
  const s = new SwapSession(input);
  // A cancellation from Temporal (Temporal Web's button, `temporal workflow cancel`) is a cancel
  // request like ours: it ends a swap awaiting its PIN and never abandons a confirmation.
  CancellationScope.current().cancelRequested.catch(() => s.requestCancel('cancelled through Temporal (workflow cancellation request)'));

  setHandler(swapStateQuery, () => s.view());
  setHandler(swapInitializedUpdate, async () => {
    await condition(() => s.state !== 'initializing');
    return s.view();
  });
  setHandler(submitPinSignal, (sub) => {
    const problem = SwapSession.checkSubmission(sub);
    if (problem) log.warn('PIN signal ignored: malformed', { problem });
    else if (!s.accept(sub)) log.warn('PIN signal ignored: swap not awaiting a PIN', { state: s.state });
  });
  setHandler(
    submitPinUpdate,
    async (sub) => {
      return s.admitPin(sub) ?? (await s.outcomeOfPin(sub.submission_id));
    },
    { validator: (sub) => s.validatePin(sub) },
  );
  setHandler(cancelSwapSignal, (arg) => s.requestCancel(arg?.reason));
  setHandler(
    cancelSwapUpdate,
    async (arg) => {
      s.requestCancel(arg?.reason);
      await condition(() => s.isTerminal());
      return s.view();
    },
    { validator: (_arg) => s.validateCancel() },
  );
  setHandler(notificationSignal, (n) => s.notify(n));
  setHandler(resolveSwapUpdate, (input) => (s.resolve(input, new Date().toISOString()), s.view()), { validator: (input) => s.validateResolve(input) });

  return CancellationScope.nonCancellable(async () => {
    const window = await initialise(s);
    if (window) await awaitPinsAndConfirm(s, window);
    await afterwards(s);
    do {
      if (s.state === 'needs_reconciliation') await awaitResolution(s); // stays open until an operator resolves it
      const handing = s.events.finish(); // hands the last events over; deliveries go on without the flow
      if (handing) await handing;
    } while (lateDoubt(s)); // a payment that came meanwhile: resolve it too
    return s.view();
  });
}

/** Step 1. Returns the confirmation window, or undefined when the swap already ended (failed or cancelled). */
async function initialise(s: SwapSession): Promise<SwapWindow | undefined> {
  let window: SwapWindow;
  try {
    const { event_settings, ...init } = await initSwap(s.input.request, s.events.settingsRequest());
    window = s.startWindow(init);
    s.events.offer(event_settings);
  } catch (err) {
    s.set('failed', creationFailureReason('initialization', err, 'the user never received an auth token'));
    return undefined;
  }
  if (s.cancelRequested !== undefined) {
    s.set('cancelled', s.cancelRequested);
    return undefined;
  }
  s.set('awaiting_pin');
  return window;
}

/** Step 2: PINs until one confirms, the attempts or the window run out, or a cancel. */
async function awaitPinsAndConfirm(s: SwapSession, w: SwapWindow): Promise<void> {
  for (;;) {
    const remaining = w.deadlineMs - Date.now();
    const got = remaining > 0 && (await condition(() => s.hasPendingPin || s.cancelRequested !== undefined, remaining));
    if (!got) {
      s.set('expired', 'no valid PIN before the confirmation window closed');
      return;
    }
    if (s.cancelRequested !== undefined) {
      s.set('cancelled', s.cancelRequested);
      return;
    }
    const sub = s.beginAttempt();
    if (sub === undefined) continue;
    s.set('confirming');
    let outcome: PinOutcome;
    try {
      outcome = await confirm(s, w, sub.sealed_pin);
    } finally {
      s.dropPin();
    }
    s.recordOutcome(sub.submission_id, outcome);
    flowMetrics.pinAttempt(s.attemptsUsed, outcome.outcome);
    if (s.state !== 'awaiting_pin') return;
  }
}

/** One confirmation and what it came to (settling a doubt from the provider's notification). */
async function confirm(s: SwapSession, w: SwapWindow, sealedPin: string): Promise<PinOutcome> {
  const budgetMs = Math.max(MIN_CONFIRM_BUDGET_MS, w.providerExpiryMs - Date.now());
  const { confirmSwap } = proxyActivities<ProviderActivities>({
    startToCloseTimeout: PROVIDER_ACTIVITY_START_TO_CLOSE,
    heartbeatTimeout: PROVIDER_ACTIVITY_HEARTBEAT_TIMEOUT,
    // Retried (transient, rate-limited, ambiguous) only inside the provider's window.
    scheduleToCloseTimeout: budgetMs,
    retry: confirmRetryPolicy,
  });
  let evidence: string;
  try {
    const input = { user_ref: s.input.request.user_ref, sealed_auth_token: w.init.sealed_auth_token, sealed_pin: sealedPin };
    // Since FRESH_TARGETS_PATCH the answer carries the event settings too (scheduled with the same
    // arguments as before for a swap recorded without it).
    const events = s.events.answerRequest();
    const { event_settings, ...res } = await (events ? confirmSwap(input, events) : confirmSwap(input));
    s.events.refresh(event_settings);
    s.noteProviderMessage(res.message);
    const left = s.maxAttempts - s.attemptsUsed;
    const decision = decideConfirm(res, left, Date.now() >= w.deadlineMs);
    if (decision.kind === 'final') {
      s.set(decision.state, decision.reason);
      if (decision.outcome === 'pin_rejected') return { outcome: 'pin_rejected', state: s.state, attempts_left: decision.attemptsLeft ?? left };
      return outcomeOf(s.state, s.status.reason);
    }
    evidence = decision.evidence;
  } catch (err) {
    if (!(err instanceof ActivityFailure)) throw err;
    // Never sent (held on every attempt); since mpf-held-timeout-expires-v1 also when the window
    // closed while the next held retry still waited for a worker.
    const held = heldThroughout(err) ?? (heldUntilTimeout(err) && patched(HELD_TIMEOUT_PATCH) ? heldUntilTimeout(err) : undefined);
    if (held && patched(PROVIDER_GUARD_PATCH)) {
      // Never sent: the window closed while the provider guard held it. No doubt to settle.
      s.set('expired', `the confirmation was held by the provider guard until the window closed, and never sent: no money moved (${held.reason})`);
      return outcomeOf(s.state, s.status.reason);
    }
    evidence = `confirmation may have reached the provider without an answer (${describeFailure(err)})`;
  }
  await settle(s, evidence);
  return outcomeOf(s.state, s.status.reason);
}

/**
 * A confirmation in doubt: the provider may have converted the user's money. Wait (bounded) for
 * its notification; only when none settles it does the swap need reconciliation.
 */
async function settle(s: SwapSession, evidence: string): Promise<void> {
  s.set('confirming', `${evidence}; waiting up to ${Math.round(s.settleWaitMs / 1000)} s for the provider's notification`);
  if (s.settleWaitMs > 0) await condition(() => s.settledBy !== undefined, s.settleWaitMs);
  if (s.settledBy === 'confirmed') s.set('confirmed', `${evidence}; the provider's notification confirmed it`);
  else if (s.settledBy === 'failed') s.set('failed', `${evidence}; the provider's notification reported it failed`);
  else s.set('needs_reconciliation', `${evidence}; no notification from the provider settled it: check the swap at the provider`);
}

/** Step 3: the optional wait for the confirmed swap's notification, and the last answers. */
async function afterwards(s: SwapSession): Promise<void> {
  if (s.state === 'confirmed' && s.input.notification_wait_seconds > 0) {
    await condition(() => s.notifications.size() > 0, s.input.notification_wait_seconds * 1000);
  }
  s.answerWaitingPin();
  // Let in-flight update handlers return their outcome before the run completes (no promise when none is).
  if (!allHandlersFinished()) await condition(allHandlersFinished);
}
