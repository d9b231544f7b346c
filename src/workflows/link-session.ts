/**
 * A payment link's state and decisions, workflow-safe: what a provider notification means for the
 * link (`decideNotification`, pure), what may be cancelled, and the view. Money that arrived is
 * never silently ignored: a payment the link cannot simply accept (after it failed, expired or was
 * cancelled; or for another amount, currency or payment_ref) ends in needs_reconciliation.
 */
import { workflowInfo } from '@temporalio/workflow';
import { notificationFacts } from '../contract/notifications';
import type { HostedLinkData } from '../contract/provider';
import { FlowSession } from './flow-session';
import { linkCurrentDetails } from './flow-summary';
import {
  LINK_TERMINAL_STATES,
  type LinkState,
  type LinkView,
  type LinkWorkflowInput,
  type NotificationInput,
  type NotificationRecord,
} from './messages';

export type NotificationDecision =
  | { kind: 'none' }
  | { kind: 'move'; state: LinkState; reason?: string };

/**
 * What one new notification does to a link in `state`. Pure. A payment for the link is checked
 * against its payment_ref, amount and currency (when the notification names them).
 */
export function decideNotification(
  record: Pick<NotificationRecord, 'outcome' | 'payload'>,
  state: LinkState,
  link: Pick<HostedLinkData, 'payment_ref' | 'amount' | 'currency'> | undefined,
): NotificationDecision {
  if (record.outcome !== 'paid' && record.outcome !== 'failed') return { kind: 'none' };
  if (record.outcome === 'paid') {
    const f = notificationFacts(record.payload);
    const mismatch: string[] = [];
    if (link && f.payment_ref !== undefined && f.payment_ref !== link.payment_ref) mismatch.push(`payment_ref ${f.payment_ref} (link: ${link.payment_ref})`);
    if (link && f.amount !== undefined && f.amount !== link.amount) mismatch.push(`amount ${f.amount} (link: ${link.amount})`);
    if (link && f.currency !== undefined && f.currency !== link.currency) mismatch.push(`currency ${f.currency} (link: ${link.currency})`);
    if (mismatch.length && state !== 'needs_reconciliation') {
      return { kind: 'move', state: 'needs_reconciliation', reason: `a payment was notified with ${mismatch.join(', ')}: reconcile before fulfilling` };
    }
    switch (state) {
      case 'awaiting_payment':
        return { kind: 'move', state: 'paid' };
      case 'failed':
      case 'expired':
      case 'cancelled':
        return { kind: 'move', state: 'needs_reconciliation', reason: `payment notified after the link was ${state}: reconcile (fulfil or refund)` };
      default:
        return { kind: 'none' }; // paid already (a second success is recorded), or already flagged
    }
  }
  return state === 'awaiting_payment' ? { kind: 'move', state: 'failed', reason: 'the provider reported the payment failed' } : { kind: 'none' };
}

export class LinkSession extends FlowSession<LinkState> {
  link: HostedLinkData | undefined;
  expiresAtMs: number | undefined;
  /** Notifications that arrived while the link was still being created (applied right after). */
  private readonly early: NotificationRecord[] = [];

  constructor(readonly input: LinkWorkflowInput) {
    super('creating', 'payment_link', input.request.txn_merchant_ref, LINK_TERMINAL_STATES, ['creating', 'awaiting_payment'], input.webhook_url);
    this.refreshDetails();
  }

  protected currentDetails(): string {
    return linkCurrentDetails({
      state: this.state,
      currency: this.link?.currency ?? this.input.request.currency,
      amount: this.link?.amount ?? this.input.request.amount,
      expires_at_ms: this.expiresAtMs,
      reason: this.status.reason,
      notifications: this.notifications.size(),
      updated_at: this.status.updatedAt,
    });
  }

  view(): LinkView {
    const { request } = this.input;
    const link = this.link;
    return {
      link_id: workflowInfo().workflowId,
      state: this.state,
      txn_merchant_ref: request.txn_merchant_ref,
      user_ref: request.user_ref,
      amount: link?.amount ?? request.amount,
      currency: link?.currency ?? request.currency,
      payment_ref: link?.payment_ref,
      pay_link: link?.pay_link,
      redirect_url: link?.redirect_url ?? request.redirect_url,
      expires_at: this.expiresAtMs === undefined ? undefined : new Date(this.expiresAtMs).toISOString(),
      reason: this.status.reason,
      notifications: this.notifications.list(),
      ...(this.reconciliation ? { reconciliation: this.reconciliation } : {}),
      events: this.events.list(),
      updated_at: this.status.updatedAt,
    };
  }

  validateCancel(): void {
    if (!this.isCancellable()) throw new Error(`payment link cannot be cancelled in state ${this.state}`);
  }

  notify(n: NotificationInput): void {
    this.events.refreshTypes(n?.registered_types);
    const record = this.notifications.add(n);
    this.refreshDetails();
    if (!record) return; // a duplicate delivery: counted, nothing else
    if (this.state === 'creating') this.early.push(record);
    else this.apply(record);
  }

  /** Applies the notifications that arrived during creation, in order. */
  applyEarly(): void {
    for (const record of this.early.splice(0)) this.apply(record);
  }

  private apply(record: NotificationRecord): void {
    const d = decideNotification(record, this.state, this.link);
    if (d.kind === 'none') return;
    record.applied = true;
    this.set(d.state, d.reason);
  }
}
