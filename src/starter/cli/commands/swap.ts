/** `mpf swap start|pin|status|cancel`: the swap flow through the typed client. */
import { Command } from 'commander';
import type * as Library from '../../client/mpf-client';
import type { PinOutcome, SwapView } from '../../../workflows/messages';
import type * as Face from '../face';
import { DEFAULT_WAIT_SECONDS, JSON_HELP, parseAmount, parsePositive, readOptionFile, WAIT_HELP } from '../options';
import { formatAmount, printJson, printLines, rows, withTimeLeft } from '../output';
import { readPin } from '../pin-input';
import { addListCommand } from './lists';

interface SwapStartOptions {
  userRef: string;
  from: string;
  to: string;
  amount: number;
  txnRef: string;
  wait?: number;
  json?: boolean;
  webhookUrl?: string;
}

interface SwapPinOptions {
  pinTokenFile?: string;
  wait?: number;
  json?: boolean;
}

interface SwapStatusOptions {
  json?: boolean;
}

interface SwapCancelOptions {
  reason?: string;
  json?: boolean;
}

export function swapCommand(): Command {
  const swap = new Command('swap').description('wallet currency swaps');
  swap
    .command('start')
    .description('start a swap: initialise it at the provider and print the rate, amounts, expiry and PIN URL')
    .requiredOption('--user-ref <ref>', "merchant's reference of the user")
    .requiredOption('--from <currency>', 'source currency, e.g. USD')
    .requiredOption('--to <currency>', 'destination currency, e.g. NGN')
    .requiredOption('--amount <amount>', 'amount in the source currency', parseAmount)
    .requiredOption('--txn-ref <ref>', 'unique transaction reference (the swap id is swap-<txn-ref>)')
    .option('--webhook-url <url>', "this swap's own endpoint for its signed merchant events (besides the worker's MERCHANT_WEBHOOK_URL)")
    .option('--wait <seconds>', WAIT_HELP, parsePositive)
    .option('--json', JSON_HELP)
    .action(swapStart);
  swap
    .command('pin')
    .description('submit the wallet PIN (typed at a hidden prompt, or piped on stdin; never an argument)')
    .argument('<swap_id>', 'the swap id, swap-<txn-ref>')
    .option('--pin-token-file <path>', "through a gateway (MPF_GATEWAY_URL): a file holding the swap's pin_token, which authorises the PIN")
    .option('--wait <seconds>', WAIT_HELP, parsePositive)
    .option('--json', JSON_HELP)
    .action(swapPin);
  swap
    .command('status')
    .description("show a swap's state")
    .argument('<swap_id>', 'the swap id, swap-<txn-ref>')
    .option('--json', JSON_HELP)
    .action(swapStatus);
  swap
    .command('cancel')
    .description('cancel a swap still awaiting its PIN')
    .argument('<swap_id>', 'the swap id, swap-<txn-ref>')
    .option('--reason <text>', 'why (recorded on the swap)')
    .option('--json', JSON_HELP)
    .action(swapCancel);
  addListCommand(swap, 'swap');
  return swap;
}

// The client library loads when a swap command runs, not when the program is built.
/* eslint-disable @typescript-eslint/no-require-imports */
const library = (): typeof Library => require('../../client/mpf-client') as typeof Library;
const face = (): typeof Face => require('../face') as typeof Face;
/* eslint-enable @typescript-eslint/no-require-imports */

class NotCancellableError extends Error {
  override name = 'NotCancellableError';
}

function swapLines(s: SwapView & { execution?: string }, extra: Array<[string, string | undefined]> = []): string[] {
  return [
    // A flow closed in Temporal (terminated, …) says so: its state is the one it truthfully ended in (closed-flows.ts).
    s.execution ? `swap ${s.swap_id}: ${s.state} (execution ${s.execution})` : `swap ${s.swap_id}: ${s.state}`,
    ...rows([
      ['amount', formatAmount(s.amount, s.from_currency)],
      ['converted', formatAmount(s.converted_amount, s.to_currency)],
      ['rate', s.rate_used === undefined ? undefined : `1 ${s.from_currency} = ${s.rate_used} ${s.to_currency}`],
      ['expires_at', s.state === 'awaiting_pin' && !s.execution ? withTimeLeft(s.expires_at) : s.expires_at],
      ['payment_ref', s.payment_ref],
      ['txn_ref', s.txn_ref],
      ['user_ref', s.user_ref],
      ['pin attempts', s.pin_attempts_used > 0 || s.state === 'awaiting_pin' ? `${s.pin_attempts_used} used, ${s.pin_attempts_left} left` : undefined],
      ['reason', s.reason],
      ['provider', s.provider_message],
      ['notifications', s.notifications.length > 0 ? s.notifications.map((n) => `${n.outcome} at ${n.received_at}`).join('; ') : undefined],
      ...extra,
    ]),
  ];
}

async function swapStart(opts: SwapStartOptions): Promise<void> {
  const { parseOrThrow, SwapStartBody } = library();
  // Validated before anything connects: a bad field starts nothing.
  const body = parseOrThrow(SwapStartBody, {
    user_ref: opts.userRef,
    from_currency: opts.from,
    to_currency: opts.to,
    amount: opts.amount,
    txn_ref: opts.txnRef,
    ...(opts.webhookUrl !== undefined ? { webhook_url: opts.webhookUrl } : {}),
  });
  await face().withFace(opts.wait ?? DEFAULT_WAIT_SECONDS, async (f) => {
    const started = await f.startSwap(body);
    if (opts.json) return printJson(started);
    printLines(swapLines(started.swap, [['pin_url', started.pin_url]]));
    if (started.swap.state !== 'awaiting_pin') process.exitCode = 1;
  });
}

function pinOutcomeLine(o: PinOutcome): string {
  switch (o.outcome) {
    case 'confirmed':
      return 'confirmed';
    case 'pin_rejected':
      return `PIN rejected: ${o.attempts_left} attempt${o.attempts_left === 1 ? '' : 's'} left (state ${o.state})`;
    case 'failed':
    case 'needs_reconciliation':
      return `${o.outcome}${o.reason ? `: ${o.reason}` : ''} (state ${o.state})`;
    default:
      return `${o.outcome} (state ${o.state})`;
  }
}

async function swapPin(swapId: string, opts: SwapPinOptions): Promise<void> {
  const walletPin = await readPin();
  const pinToken = opts.pinTokenFile ? readOptionFile('--pin-token-file', opts.pinTokenFile) : undefined;
  await face().withFace(opts.wait ?? DEFAULT_WAIT_SECONDS, async (f) => {
    const outcome = await f.submitPin(swapId, walletPin, pinToken);
    if (opts.json) printJson(outcome);
    else printLines([pinOutcomeLine(outcome)]);
    if (outcome.outcome !== 'confirmed') process.exitCode = 1;
  });
}

async function swapStatus(swapId: string, opts: SwapStatusOptions): Promise<void> {
  await face().withFace(DEFAULT_WAIT_SECONDS, async (f) => {
    const s = await f.getSwap(swapId);
    if (opts.json) printJson(s);
    else printLines(swapLines(s));
  });
}

async function swapCancel(swapId: string, opts: SwapCancelOptions): Promise<void> {
  const { NotCancellableFace } = face();
  await face().withFace(DEFAULT_WAIT_SECONDS, async (f) => {
    let s: SwapView;
    try {
      s = await f.cancelSwap(swapId, opts.reason ?? 'cancelled from the command line'); // the cancel answers the final view
    } catch (err) {
      if (err instanceof NotCancellableFace) throw new NotCancellableError(`swap ${swapId} is ${err.view.state}: only a swap awaiting its PIN can be cancelled`);
      throw err;
    }
    if (opts.json) printJson(s);
    else printLines(swapLines(s));
    if (s.state !== 'cancelled') process.exitCode = 1;
  });
}
