/** `mpf link create|status|cancel|list`: the payment-link flow through the typed client. */
import { Command } from 'commander';
import type * as Library from '../../client/mpf-client';
import type { LinkView } from '../../../workflows/messages';
import type * as Face from '../face';
import { DEFAULT_WAIT_SECONDS, JSON_HELP, parseAmount, parsePositive, WAIT_HELP } from '../options';
import { formatAmount, printJson, printLines, rows } from '../output';
import { addListCommand } from './lists';

interface LinkCreateOptions {
  userRef: string;
  txnMerchantRef: string;
  amount: number;
  fullName: string;
  email: string;
  phone: string;
  redirectUrl: string;
  successMessage?: string;
  wait?: number;
  json?: boolean;
  webhookUrl?: string;
}

interface LinkStatusOptions {
  json?: boolean;
}

export function linkCommand(): Command {
  const link = new Command('link').description('hosted bank-transfer payment links (NGN)');
  link
    .command('create')
    .description('create a payment link and print its pay_link')
    .requiredOption('--user-ref <ref>', "merchant's reference of the user")
    .requiredOption('--txn-merchant-ref <ref>', 'unique merchant transaction reference (the link id is paylink-<ref>)')
    .requiredOption('--amount <amount>', 'amount to collect, NGN', parseAmount)
    .requiredOption('--full-name <name>', "customer's full name")
    .requiredOption('--email <email>', "customer's e-mail address")
    .requiredOption('--phone <phone>', "customer's phone number")
    .requiredOption('--redirect-url <url>', 'where the customer is sent after paying')
    .option('--success-message <text>', 'message shown after a successful payment')
    .option('--webhook-url <url>', "this link's own endpoint for its signed merchant events (besides the worker's MERCHANT_WEBHOOK_URL)")
    .option('--wait <seconds>', WAIT_HELP, parsePositive)
    .option('--json', JSON_HELP)
    .action(linkCreate);
  link
    .command('status')
    .description("show a payment link's state and the notifications received")
    .argument('<link_id>', 'the link id, paylink-<txn-merchant-ref>')
    .option('--json', JSON_HELP)
    .action(linkStatus);
  link
    .command('cancel')
    .description('cancel a payment link not yet paid')
    .argument('<link_id>', 'the link id, paylink-<txn-merchant-ref>')
    .option('--reason <text>', 'why (recorded on the link)')
    .option('--json', JSON_HELP)
    .action(linkCancel);
  addListCommand(link, 'payment_link');
  return link;
}

// The client library loads when a link command runs, not when the program is built.
/* eslint-disable @typescript-eslint/no-require-imports */
const library = (): typeof Library => require('../../client/mpf-client') as typeof Library;
const face = (): typeof Face => require('../face') as typeof Face;
/* eslint-enable @typescript-eslint/no-require-imports */

function linkLines(l: LinkView & { execution?: string }): string[] {
  return [
    // A flow closed in Temporal (terminated, …) says so: its state is the one it truthfully ended in (closed-flows.ts).
    l.execution ? `payment link ${l.link_id}: ${l.state} (execution ${l.execution})` : `payment link ${l.link_id}: ${l.state}`,
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

async function linkCreate(opts: LinkCreateOptions): Promise<void> {
  const { parseOrThrow, LinkCreateBody } = library();
  // Validated before anything connects: a bad field starts nothing.
  const body = parseOrThrow(LinkCreateBody, {
    user_ref: opts.userRef,
    txn_merchant_ref: opts.txnMerchantRef,
    amount: opts.amount,
    full_name: opts.fullName,
    email: opts.email,
    phone: opts.phone,
    redirect_url: opts.redirectUrl,
    ...(opts.successMessage !== undefined ? { success_message: opts.successMessage } : {}),
    ...(opts.webhookUrl !== undefined ? { webhook_url: opts.webhookUrl } : {}),
  });
  await face().withFace(opts.wait ?? DEFAULT_WAIT_SECONDS, async (f) => {
    const link = await f.createLink(body);
    if (opts.json) printJson(link);
    else printLines(linkLines(link));
    if (link.state !== 'awaiting_payment') process.exitCode = 1;
  });
}

async function linkStatus(linkId: string, opts: LinkStatusOptions): Promise<void> {
  await face().withFace(DEFAULT_WAIT_SECONDS, async (f) => {
    const l = await f.getLink(linkId);
    if (opts.json) printJson(l);
    else printLines(linkLines(l));
  });
}

class NotCancellableError extends Error {
  override name = 'NotCancellableError';
}

async function linkCancel(linkId: string, opts: { reason?: string; json?: boolean }): Promise<void> {
  const { NotCancellableFace } = face();
  await face().withFace(DEFAULT_WAIT_SECONDS, async (f) => {
    let l: LinkView;
    try {
      l = await f.cancelLink(linkId, opts.reason ?? 'cancelled from the command line'); // the cancel answers the view
    } catch (err) {
      if (err instanceof NotCancellableFace) {
        throw new NotCancellableError(`payment link ${linkId} is ${err.view.state}: only a link awaiting payment can be cancelled`);
      }
      throw err;
    }
    if (opts.json) printJson(l);
    else printLines(linkLines(l));
    if (l.state !== 'cancelled') process.exitCode = 1;
  });
}
