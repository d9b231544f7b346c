/**
 * The payment-link workflow (`paylink-<txn_merchant_ref>`), as a table of contents: create the
 * hosted bank-transfer link (activity), hand pay_link back through the `created` update, await the
 * provider's notifications (signals from our webhook receiver) until paid or failed, until the
 * link's lifetime ends (expired), or until cancelled; then keep recording late notifications for a
 * grace period. State and decisions live in LinkSession (link-session.ts).
 *
 * A creation whose answer was lost is retried (the provider's duplicate check makes it safe); when
 * it cannot be had, the link ends `failed`: no money moved, the customer never got pay_link.
 */
import { allHandlersFinished, CancellationScope, condition, proxyActivities, setHandler, sleep } from '@temporalio/workflow';
import type { ProviderActivities } from '../activities/types';
import { PROVIDER_ACTIVITY_HEARTBEAT_TIMEOUT, PROVIDER_ACTIVITY_START_TO_CLOSE, providerRetryPolicy } from '../activities/retry-policies';
import { creationFailureReason } from './failures';
import { LinkSession } from './link-session';
import {
  cancelLinkSignal,
  cancelLinkUpdate,
  linkCreatedUpdate,
  linkStateQuery,
  type LinkView,
  type LinkWorkflowInput,
  notificationSignal,
  resolveLinkUpdate,
} from './messages';
import { awaitResolution, lateDoubt } from './reconciliation';

const { createPaymentLink } = proxyActivities<ProviderActivities>({
  startToCloseTimeout: PROVIDER_ACTIVITY_START_TO_CLOSE,
  heartbeatTimeout: PROVIDER_ACTIVITY_HEARTBEAT_TIMEOUT,
  scheduleToCloseTimeout: '2 minutes',
  retry: providerRetryPolicy,
});

export async function paymentLinkWorkflow(input: LinkWorkflowInput): Promise<LinkView> {
  const s = new LinkSession(input);
  // A cancellation from Temporal (Temporal Web's button) is a cancel request like ours.
  CancellationScope.current().cancelRequested.catch(() => s.requestCancel('cancelled through Temporal (workflow cancellation request)'));

  setHandler(linkStateQuery, () => s.view());
  setHandler(linkCreatedUpdate, async () => {
    await condition(() => s.state !== 'creating');
    return s.view();
  });
  setHandler(cancelLinkSignal, (arg) => s.requestCancel(arg?.reason));
  setHandler(
    cancelLinkUpdate,
    async (arg) => {
      s.requestCancel(arg?.reason);
      await condition(() => s.state !== 'creating' && (s.isTerminal() || s.cancelRequested === undefined));
      return s.view();
    },
    { validator: (_arg) => s.validateCancel() },
  );
  setHandler(notificationSignal, (n) => s.notify(n));
  setHandler(resolveLinkUpdate, (input) => (s.resolve(input, new Date().toISOString()), s.view()), { validator: (input) => s.validateResolve(input) });

  return CancellationScope.nonCancellable(async () => {
    if (await create(s)) await awaitOutcome(s);
    await keepLateNotifications(s);
    do {
      if (s.state === 'needs_reconciliation') await awaitResolution(s); // stays open until an operator resolves it
      const handing = s.events.finish(); // hands the last events over; deliveries go on without the flow
      if (handing) await handing;
    } while (lateDoubt(s)); // a payment that came meanwhile: resolve it too
    return s.view();
  });
}

/** Step 1. Returns false when the link already ended. */
async function create(s: LinkSession): Promise<boolean> {
  try {
    const { event_settings, ...link } = await createPaymentLink(s.input.request, s.events.settingsRequest());
    s.link = link;
    s.events.offer(event_settings);
  } catch (err) {
    s.set('failed', creationFailureReason('link creation', err, 'the customer never received pay_link'));
    if (!allHandlersFinished()) await condition(allHandlersFinished);
    return false;
  }
  s.expiresAtMs = Date.now() + s.input.lifetime_seconds * 1000;
  s.set('awaiting_payment');
  s.applyEarly();
  return true;
}

/** Step 2: paid or failed by a notification, cancelled, or expired. */
async function awaitOutcome(s: LinkSession): Promise<void> {
  const settled = await condition(() => s.state !== 'awaiting_payment' || s.cancelRequested !== undefined, Math.max(1, s.expiresAtMs! - Date.now()));
  if (s.state === 'awaiting_payment') {
    if (settled && s.cancelRequested !== undefined) s.set('cancelled', s.cancelRequested);
    else s.set('expired', 'no payment notification before the link lifetime ended');
  }
}

/** Step 3: keep late notifications for a while (retries, duplicates, money after expiry). */
async function keepLateNotifications(s: LinkSession): Promise<void> {
  if (s.link) {
    const graceMs = Math.max(0, s.input.late_notification_grace_seconds ?? 0) * 1000;
    // A timer alone: the same command as a condition that never holds with this timeout, without its scope and race.
    if (graceMs > 0) await sleep(graceMs);
  }
  if (!allHandlersFinished()) await condition(allHandlersFinished);
}
