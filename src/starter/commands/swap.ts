/** `mpf swap start|pin|status|cancel`: the swap flow through the typed client. */
import type { PinOutcome, SwapView } from '../../workflows/messages';
import { type SwapState, SWAP_TERMINAL_STATES } from '../../workflows/messages';
import { FlowNotFoundError } from '../errors';
import type { SwapStartOptions } from '../cli';
import { parseOrThrow, SwapStartBody } from '../client';
import { answerWithin, DEFAULT_WAIT_SECONDS, formatAmount, printJson, printLines, rows, withClient, withTimeLeft } from './context';
import { readPin } from './pin-input';

const CANCELLABLE: readonly SwapState[] = ['initializing', 'awaiting_pin'];

export class NotCancellableError extends Error {
  override name = 'NotCancellableError';
}

export function swapLines(s: SwapView, extra: Array<[string, string | undefined]> = []): string[] {
  return [
    `swap ${s.swap_id}: ${s.state}`,
    ...rows([
      ['amount', formatAmount(s.amount, s.from_currency)],
      ['converted', formatAmount(s.converted_amount, s.to_currency)],
      ['rate', s.rate_used === undefined ? undefined : `1 ${s.from_currency} = ${s.rate_used} ${s.to_currency}`],
      ['expires_at', s.state === 'awaiting_pin' ? withTimeLeft(s.expires_at) : s.expires_at],
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

export async function swapStart(opts: SwapStartOptions): Promise<void> {
  // Validated before anything connects: a bad field starts nothing.
  const body = parseOrThrow(SwapStartBody, {
    user_ref: opts.userRef,
    from_currency: opts.from,
    to_currency: opts.to,
    amount: opts.amount,
    txn_ref: opts.txnRef,
  });
  const wait = opts.wait ?? DEFAULT_WAIT_SECONDS;
  await withClient(async (c) => {
    const started = await answerWithin(
      c.mpf.startSwap(body),
      wait,
      c,
      `(the swap swap-${body.txn_ref} may have been started: see \`mpf swap status swap-${body.txn_ref}\`)`,
    );
    if (opts.json) return printJson(started);
    printLines(swapLines(started.swap, [['pin_url', started.pin_url]]));
    if (started.swap.state !== 'awaiting_pin') process.exitCode = 1;
  }, wait);
}

export function pinOutcomeLine(o: PinOutcome): string {
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

export async function swapPin(swapId: string, opts: { json?: boolean; wait?: number }): Promise<void> {
  const walletPin = await readPin();
  const wait = opts.wait ?? DEFAULT_WAIT_SECONDS;
  await withClient(async (c) => {
    const outcome = await answerWithin(
      c.mpf.submitPin(swapId, { wallet_pin: walletPin }),
      wait,
      c,
      `(the PIN may still be confirmed: see \`mpf swap status ${swapId}\`)`,
    );
    if (!outcome) throw new Error('the swap gave no outcome for the PIN');
    if (opts.json) printJson(outcome);
    else printLines([pinOutcomeLine(outcome)]);
    if (outcome.outcome !== 'confirmed') process.exitCode = 1;
  }, wait);
}

export async function swapStatus(swapId: string, opts: { json?: boolean }): Promise<void> {
  await withClient(async (c) => {
    const s = await answerWithin(c.mpf.getSwap(swapId), DEFAULT_WAIT_SECONDS, c);
    if (opts.json) printJson(s);
    else printLines(swapLines(s));
  });
}

export async function swapCancel(swapId: string, opts: { json?: boolean; reason?: string }): Promise<void> {
  await withClient(async ({ mpf }) => {
    const before = await mpf.getSwap(swapId);
    if (!CANCELLABLE.includes(before.state)) {
      throw new NotCancellableError(`swap ${swapId} is ${before.state}: only a swap awaiting its PIN can be cancelled`);
    }
    let s: SwapView;
    try {
      s = await mpf.cancelSwap(swapId, opts.reason ?? 'cancelled from the command line');
    } catch (err) {
      if (!(err instanceof FlowNotFoundError)) throw err;
      s = await mpf.getSwap(swapId); // it closed meanwhile
    }
    // The signal is handled asynchronously: wait briefly for the swap to leave awaiting_pin.
    const deadline = Date.now() + 5_000;
    while (!SWAP_TERMINAL_STATES.includes(s.state) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      s = await mpf.getSwap(swapId);
    }
    if (opts.json) printJson(s);
    else printLines(swapLines(s));
    if (s.state !== 'cancelled') process.exitCode = 1;
  });
}
