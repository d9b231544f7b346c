/**
 * The payment-link workflow (`paylink-<txn_merchant_ref>`): create the hosted bank-transfer link
 * (activity), hand pay_link back through the `created` update, then await the provider's
 * notifications (signals from our webhook receiver) until paid or failed, until the link's
 * lifetime ends (expired), or until cancelled.
 *
 * Every notification is kept (deduplicated); a status-like field is mapped tolerantly (contract
 * module); unknown payloads are recorded without moving the status.state; a notification after a
 * terminal state changes nothing. An ambiguous creation is never repeated: needs_reconciliation.
 */
import {
  allHandlersFinished,
  condition,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { ProviderActivities } from '../activities/types';
import {
  PROVIDER_ACTIVITY_START_TO_CLOSE,
  PROVIDER_FAILURE_TYPES,
  providerRetryPolicy,
} from '../activities/retry-policies';
import type { HostedLinkData } from '../contract/provider';
import {
  cancelLinkSignal,
  LINK_TERMINAL_STATES,
  linkCreatedUpdate,
  type LinkState,
  linkStateQuery,
  type LinkView,
  type LinkWorkflowInput,
  notificationSignal,
  type NotificationRecord,
} from './messages';
import { describeFailure, failureType } from './failures';
import { NotificationBook } from './notifications';
import { FlowStatus } from './flow-status';

const { createPaymentLink } = proxyActivities<ProviderActivities>({
  startToCloseTimeout: PROVIDER_ACTIVITY_START_TO_CLOSE,
  scheduleToCloseTimeout: '2 minutes',
  retry: providerRetryPolicy,
});

export async function paymentLinkWorkflow(input: LinkWorkflowInput): Promise<LinkView> {
  const { request } = input;
  const notifications = new NotificationBook();
  const status = new FlowStatus<LinkState>('creating', 'payment_link', request.txn_merchant_ref);
  let link: HostedLinkData | undefined;
  let expiresAtMs: number | undefined;
  let cancelRequested: string | undefined;

  const view = (): LinkView => ({
    link_id: workflowInfo().workflowId,
    state: status.state,
    txn_merchant_ref: request.txn_merchant_ref,
    user_ref: request.user_ref,
    amount: link?.amount ?? request.amount,
    currency: link?.currency ?? request.currency,
    payment_ref: link?.payment_ref,
    pay_link: link?.pay_link,
    redirect_url: link?.redirect_url ?? request.redirect_url,
    expires_at: expiresAtMs === undefined ? undefined : new Date(expiresAtMs).toISOString(),
    reason: status.reason,
    notifications: notifications.list(),
    updated_at: status.updatedAt,
  });

  const setState = (next: LinkState, why?: string): void => status.set(next, why);

  setHandler(linkStateQuery, view);
  setHandler(linkCreatedUpdate, async () => {
    await condition(() => status.state !== 'creating');
    return view();
  });
  setHandler(cancelLinkSignal, (arg) => {
    if (!LINK_TERMINAL_STATES.includes(status.state)) cancelRequested = arg?.reason?.slice(0, 200) || 'cancelled by request';
  });
  /** Moves an awaiting link by a notification's outcome; pending/unknown change nothing. */
  const apply = (record: NotificationRecord): void => {
    record.applied = record.outcome === 'paid' || record.outcome === 'failed';
    if (record.outcome === 'paid') setState('paid');
    else if (record.outcome === 'failed') setState('failed', 'the provider reported the payment failed');
  };
  /** Notifications that arrived while the link was still being created (applied right after). */
  const early: NotificationRecord[] = [];
  setHandler(notificationSignal, (n) => {
    const record = notifications.add(n);
    if (!record) return; // a duplicate delivery: counted, nothing else
    if (status.state === 'awaiting_payment') apply(record);
    else if (status.state === 'creating') early.push(record);
    else if (record.outcome === 'paid' && (status.state === 'expired' || status.state === 'cancelled')) {
      // Money arrived for a link we had given up on: never silently ignored.
      record.applied = true;
      setState('needs_reconciliation', `payment notified after the link was ${status.state}: reconcile (fulfil or refund)`);
    }
    // any other notification after a terminal state: recorded, changes nothing
  });

  // --- 1. Create the link ---------------------------------------------------------------------
  try {
    link = await createPaymentLink(request);
  } catch (err) {
    if (failureType(err) === PROVIDER_FAILURE_TYPES.ambiguous) {
      setState('needs_reconciliation', `link creation may have reached the provider without an answer (${describeFailure(err)})`);
    } else {
      setState('failed', `link creation failed (${describeFailure(err)})`);
    }
    await condition(allHandlersFinished);
    return view();
  }
  expiresAtMs = Date.now() + input.lifetime_seconds * 1000;
  setState('awaiting_payment');
  for (const record of early) if (status.state === 'awaiting_payment') apply(record);

  // --- 2. Await the outcome -------------------------------------------------------------------
  const settled = await condition(
    () => status.state !== 'awaiting_payment' || cancelRequested !== undefined,
    Math.max(1, expiresAtMs - Date.now()),
  );
  if (status.state === 'awaiting_payment') {
    if (settled && cancelRequested !== undefined) setState('cancelled', cancelRequested);
    else setState('expired', 'no payment notification before the link lifetime ended');
  }
  // --- 3. Keep late notifications for a while (retries, duplicates, money after expiry) --------
  const graceMs = Math.max(0, input.late_notification_grace_seconds ?? 0) * 1000;
  if (graceMs > 0) await condition(() => false, graceMs);
  await condition(allHandlersFinished);
  return view();
}
