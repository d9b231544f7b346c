/** `mpf link create|status`: the payment-link flow through the typed client. */
import type { LinkView } from '../../workflows/messages';
import type { LinkCreateOptions } from '../cli';
import { LinkCreateBody, parseOrThrow } from '../client';
import { answerWithin, DEFAULT_WAIT_SECONDS, formatAmount, printJson, printLines, rows, withClient } from './context';

export function linkLines(l: LinkView): string[] {
  return [
    `payment link ${l.link_id}: ${l.state}`,
    ...rows([
      ['amount', formatAmount(l.amount, l.currency)],
      ['pay_link', l.pay_link],
      ['payment_ref', l.payment_ref],
      ['txn_merchant_ref', l.txn_merchant_ref],
      ['user_ref', l.user_ref],
      ['redirect_url', l.redirect_url],
      ['expires_at', l.expires_at],
      ['reason', l.reason],
    ]),
    ...(l.notifications.length === 0
      ? []
      : [
          `  notifications (${l.notifications.length}):`,
          ...l.notifications.map(
            (n) => `    ${n.received_at}  ${n.outcome}${n.applied ? ' (applied)' : ''}${n.deliveries > 1 ? `, ${n.deliveries} deliveries` : ''}`,
          ),
        ]),
  ];
}

export async function linkCreate(opts: LinkCreateOptions): Promise<void> {
  const body = parseOrThrow(LinkCreateBody, {
    user_ref: opts.userRef,
    txn_merchant_ref: opts.txnMerchantRef,
    amount: opts.amount,
    full_name: opts.fullName,
    email: opts.email,
    phone: opts.phone,
    redirect_url: opts.redirectUrl,
    ...(opts.successMessage !== undefined ? { success_message: opts.successMessage } : {}),
  });
  const wait = opts.wait ?? DEFAULT_WAIT_SECONDS;
  await withClient(async (c) => {
    const { link } = await answerWithin(
      c.mpf.createLink(body),
      wait,
      c,
      `(the link paylink-${body.txn_merchant_ref} may have been started: see \`mpf link status paylink-${body.txn_merchant_ref}\`)`,
    );
    if (opts.json) printJson(link);
    else printLines(linkLines(link));
    if (link.state !== 'awaiting_payment') process.exitCode = 1;
  }, wait);
}

export async function linkStatus(linkId: string, opts: { json?: boolean }): Promise<void> {
  await withClient(async (c) => {
    const l = await answerWithin(c.mpf.getLink(linkId), DEFAULT_WAIT_SECONDS, c);
    if (opts.json) printJson(l);
    else printLines(linkLines(l));
  });
}
