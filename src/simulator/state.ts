/**
 * The simulated provider's records and rules: swaps (init, one-time PIN confirmation with an
 * expiring auth_token bound to its user_ref) and hosted links (created, then paid, failed or
 * abandoned by the customer). HTTP-agnostic: the servers map these results to responses.
 *
 * Choices where provider-api.md is silent (ours, kept here):
 * - a reused txn_ref / txn_merchant_ref is refused (409 'Duplicate transaction reference') with
 *   no side effect;
 * - a wrong PIN is 'Incorrect wallet PIN'; after `providerPinAttempts` wrong PINs the token is
 *   burnt; an unknown, expired, used or burnt token, or a user_ref other than the one of the
 *   initialization, is 'auth_token is invalid, expired or already used';
 * - an abandoned link stays payable (the customer may come back); a paid or failed link is final.
 */
import { randomBytes } from 'node:crypto';
import type { HostedLinkRequest, SimulatorNotification, SwapConfirmRequest, SwapInitData, SwapInitRequest } from '../contract/provider';
import type { Ledger } from './ledger';
import type { Notifier } from './notifier';
import type { SimConfig } from './options';
import { Prng } from './prng';
import { convert, rateFor } from './rates';

export interface Swap {
  txn_ref: string;
  payment_ref: string;
  user_ref: string;
  from_currency: string;
  to_currency: string;
  amount: number;
  converted_amount: number;
  rate_used: number;
  notification_url: string;
  authToken: string;
  createdAt: Date;
  expiresAt: number;
  state: 'awaiting_confirmation' | 'confirmed' | 'burnt';
  wrongPins: number;
}

export interface Link {
  payment_ref: string;
  txn_merchant_ref: string;
  user_ref: string;
  amount: number;
  currency: string;
  full_name: string;
  email: string;
  redirect_url: string;
  notification_url: string;
  success_message: string;
  pay_link: string;
  createdAt: Date;
  state: 'open' | 'paid' | 'failed';
}

export type ConfirmResult =
  | { ok: true; swap: Swap }
  | { ok: false; error: 'invalid_token'; swap?: Swap }
  | { ok: false; error: 'wrong_pin'; swap: Swap; attemptsLeft: number };

export type SettleResult =
  | { ok: true; link: Link; redirectTo?: string }
  | { ok: false; error: 'unknown' }
  | { ok: false; error: 'final'; link: Link };

export const DEFAULT_SUCCESS_MESSAGE = 'Payment received. Thank you!';

export function redirectWith(url: string, paymentRef: string, status: 'successful' | 'failed'): string {
  const u = new URL(url);
  u.searchParams.set('payment_ref', paymentRef);
  u.searchParams.set('status', status);
  return u.toString();
}

/** What a state file keeps of the records (persistence.ts); dates as ISO strings. */
export interface StateSnapshot {
  counter: number;
  swaps: Array<Omit<Swap, 'createdAt'> & { createdAt: string }>;
  links: Array<Omit<Link, 'createdAt'> & { createdAt: string }>;
}

export class SimState {
  private swaps = new Map<string, Swap>();
  private tokens = new Map<string, Swap>();
  private links = new Map<string, Link>();
  private linkRefs = new Set<string>();
  private counter = 0;
  private readonly refs: Prng;

  constructor(
    private readonly config: SimConfig,
    private readonly ledger: Ledger,
    private readonly notifier: Notifier,
  ) {
    this.refs = new Prng(config.seed, 'refs');
  }

  /** A fresh reference: a never-reset counter (unique) and seeded hex (reproducible). */
  private newRef(prefix: string): string {
    return `${prefix}-${String(++this.counter).padStart(6, '0')}-${this.refs.hex(8)}`;
  }

  snapshot(): StateSnapshot {
    return {
      counter: this.counter,
      swaps: [...this.swaps.values()].map((w) => ({ ...w, createdAt: w.createdAt.toISOString() })),
      links: [...this.links.values()].map((l) => ({ ...l, createdAt: l.createdAt.toISOString() })),
    };
  }

  /** Replaces every record with a snapshot's (a provider that persists: a restart forgets nothing). */
  restore(s: StateSnapshot): void {
    this.reset();
    this.counter = s.counter;
    for (const w of s.swaps) {
      const swap: Swap = { ...w, createdAt: new Date(w.createdAt) };
      this.swaps.set(swap.txn_ref, swap);
      this.tokens.set(swap.authToken, swap);
    }
    for (const l of s.links) {
      const link: Link = { ...l, createdAt: new Date(l.createdAt) };
      this.links.set(link.payment_ref, link);
      this.linkRefs.add(link.txn_merchant_ref);
    }
  }

  reset(): void {
    this.swaps.clear();
    this.tokens.clear();
    this.links.clear();
    this.linkRefs.clear();
  }

  // -- swaps -------------------------------------------------------------------------------------

  initSwap(req: SwapInitRequest): { ok: true; data: SwapInitData } | { ok: false; error: 'duplicate' } {
    if (this.swaps.has(req.txn_ref)) return { ok: false, error: 'duplicate' };
    const rate = rateFor(req.from_currency, req.to_currency, this.config.seed);
    const expiresIn = this.config.swapExpiresInSecondsFor.get(req.txn_ref) ?? this.config.swapExpiresInSeconds;
    const now = new Date();
    const swap: Swap = {
      txn_ref: req.txn_ref,
      payment_ref: this.newRef('SIMSWP'),
      user_ref: req.user_ref,
      from_currency: req.from_currency,
      to_currency: req.to_currency,
      amount: req.amount,
      converted_amount: convert(req.amount, rate),
      rate_used: rate,
      notification_url: req.notification_url,
      authToken: randomBytes(32).toString('base64url'),
      createdAt: now,
      expiresAt: now.getTime() + expiresIn * 1000,
      state: 'awaiting_confirmation',
      wrongPins: 0,
    };
    this.swaps.set(swap.txn_ref, swap);
    this.tokens.set(swap.authToken, swap);
    this.ledger.recordEffect('swap.initialized', swap.txn_ref, swap.payment_ref, {
      user_ref: swap.user_ref,
      from_currency: swap.from_currency,
      to_currency: swap.to_currency,
      amount: swap.amount,
      converted_amount: swap.converted_amount,
      rate_used: swap.rate_used,
      expires_in_seconds: expiresIn,
    });
    return {
      ok: true,
      data: {
        payment_ref: swap.payment_ref,
        txn_ref: swap.txn_ref,
        from_currency: swap.from_currency,
        to_currency: swap.to_currency,
        amount: swap.amount,
        converted_amount: swap.converted_amount,
        rate_used: swap.rate_used,
        auth_token: swap.authToken,
        expires_in_seconds: expiresIn,
      },
    };
  }

  /** The swap a token belongs to (for attributing a request in the ledger), whatever its state. */
  swapOfToken(token: unknown): Swap | undefined {
    return typeof token === 'string' ? this.tokens.get(token) : undefined;
  }

  confirmSwap(req: SwapConfirmRequest): ConfirmResult {
    const swap = this.tokens.get(req.auth_token);
    if (!swap) return { ok: false, error: 'invalid_token' };
    if (swap.state !== 'awaiting_confirmation' || Date.now() >= swap.expiresAt || swap.user_ref !== req.user_ref) {
      return { ok: false, error: 'invalid_token', swap };
    }
    const expected = this.config.pins[swap.user_ref] ?? this.config.defaultPin;
    if (req.wallet_pin !== expected) {
      swap.wrongPins++;
      const burnt = swap.wrongPins >= this.config.providerPinAttempts;
      if (burnt) swap.state = 'burnt';
      this.ledger.recordEffect('swap.pin_rejected', swap.txn_ref, swap.payment_ref, { wrong_pins: swap.wrongPins, token_burnt: burnt });
      return { ok: false, error: 'wrong_pin', swap, attemptsLeft: Math.max(0, this.config.providerPinAttempts - swap.wrongPins) };
    }
    swap.state = 'confirmed';
    this.ledger.recordEffect('swap.confirmed', swap.txn_ref, swap.payment_ref, { user_ref: swap.user_ref });
    const common = { payment_ref: swap.payment_ref, txn_ref: swap.txn_ref, amount: swap.amount, currency: swap.from_currency };
    const extra = { to_currency: swap.to_currency, converted_amount: swap.converted_amount };
    this.notifier.notify({
      url: swap.notification_url,
      ref: swap.txn_ref,
      paymentRef: swap.payment_ref,
      final: this.notification('swap.completed', { ...common, status: 'successful' }, 2, new Date(), extra),
      stale: this.notification('swap.pending', { ...common, status: 'pending' }, 1, swap.createdAt, extra),
    });
    return { ok: true, swap };
  }

  // -- links -------------------------------------------------------------------------------------

  createLink(req: HostedLinkRequest, checkoutBase: string): { ok: true; link: Link } | { ok: false; error: 'duplicate' } {
    if (this.linkRefs.has(req.txn_merchant_ref)) return { ok: false, error: 'duplicate' };
    const paymentRef = this.newRef('SIMPL');
    const q = new URLSearchParams({
      payment_ref: paymentRef,
      currency: req.currency,
      amount: String(req.amount),
      txn_merchant_ref: req.txn_merchant_ref,
    });
    const link: Link = {
      payment_ref: paymentRef,
      txn_merchant_ref: req.txn_merchant_ref,
      user_ref: req.user_ref,
      amount: req.amount,
      currency: req.currency,
      full_name: req.full_name,
      email: req.email,
      redirect_url: req.redirect_url,
      notification_url: req.notification_url,
      success_message: req.success_message ?? DEFAULT_SUCCESS_MESSAGE,
      pay_link: `${checkoutBase}/pay?${q.toString()}`,
      createdAt: new Date(),
      state: 'open',
    };
    this.links.set(paymentRef, link);
    this.linkRefs.add(link.txn_merchant_ref);
    this.ledger.recordEffect('link.created', link.txn_merchant_ref, paymentRef, { amount: link.amount, currency: link.currency });
    return { ok: true, link };
  }

  getLink(paymentRef: string): Link | undefined {
    return this.links.get(paymentRef);
  }

  /** The customer's outcome: paid or failed (final, notified) — from the checkout page or /_sim. */
  settleLink(paymentRef: string, outcome: 'paid' | 'failed', via: 'checkout' | 'control'): SettleResult {
    const link = this.links.get(paymentRef);
    if (!link) return { ok: false, error: 'unknown' };
    if (link.state !== 'open') return { ok: false, error: 'final', link };
    link.state = outcome;
    this.ledger.recordEffect(outcome === 'paid' ? 'link.paid' : 'link.failed', link.txn_merchant_ref, link.payment_ref, { via });
    const status = outcome === 'paid' ? 'successful' : 'failed';
    const common = { payment_ref: link.payment_ref, txn_merchant_ref: link.txn_merchant_ref, amount: link.amount, currency: link.currency };
    this.notifier.notify({
      url: link.notification_url,
      ref: link.txn_merchant_ref,
      paymentRef: link.payment_ref,
      final: this.notification(outcome === 'paid' ? 'collection.completed' : 'collection.failed', { ...common, status }, 2, new Date()),
      stale: this.notification('collection.pending', { ...common, status: 'pending' }, 1, link.createdAt),
    });
    return { ok: true, link, redirectTo: redirectWith(link.redirect_url, link.payment_ref, status) };
  }

  abandonLink(paymentRef: string, via: 'checkout' | 'control'): SettleResult {
    const link = this.links.get(paymentRef);
    if (!link) return { ok: false, error: 'unknown' };
    if (link.state !== 'open') return { ok: false, error: 'final', link };
    this.ledger.recordEffect('link.abandoned', link.txn_merchant_ref, link.payment_ref, { via });
    return { ok: true, link };
  }

  /**
   * Sends the notification of a link or swap again (a fresh notification_id), with `status` or the
   * one its state implies, without changing its state: `mpf sim notify`, the provider's
   * re-delivery (or a late or forged one) on demand. Undefined for an unknown payment_ref.
   */
  renotify(paymentRef: string, status?: 'successful' | 'failed' | 'pending'): { ref: string; status: string; notification_id: string } | undefined {
    const link = this.links.get(paymentRef);
    const swap = link ? undefined : [...this.swaps.values()].find((w) => w.payment_ref === paymentRef);
    if (!link && !swap) return undefined;
    const implied = link ? (link.state === 'paid' ? 'successful' : link.state === 'failed' ? 'failed' : 'pending') : swap!.state === 'confirmed' ? 'successful' : 'pending';
    const st = status ?? implied;
    const kind = link ? 'collection' : 'swap';
    const event = `${kind}.${st === 'successful' ? 'completed' : st}`;
    const final = link
      ? this.notification(event, { payment_ref: link.payment_ref, txn_merchant_ref: link.txn_merchant_ref, amount: link.amount, currency: link.currency, status: st }, 3, new Date())
      : this.notification(event, { payment_ref: swap!.payment_ref, txn_ref: swap!.txn_ref, amount: swap!.amount, currency: swap!.from_currency, status: st }, 3, new Date(), {
          to_currency: swap!.to_currency,
          converted_amount: swap!.converted_amount,
        });
    const ref = link ? link.txn_merchant_ref : swap!.txn_ref;
    this.ledger.recordEffect('notification.triggered', ref, paymentRef, { status: st, event, notification_id: final.data.notification_id });
    this.notifier.notify({ url: link ? link.notification_url : swap!.notification_url, ref, paymentRef, final, stale: final });
    return { ref, status: st, notification_id: final.data.notification_id };
  }

  private notification(
    event: string,
    data: { payment_ref: string; txn_ref?: string; txn_merchant_ref?: string; status: string; amount: number; currency: string },
    sequence: number,
    occurredAt: Date,
    extra: Record<string, unknown> = {},
  ): SimulatorNotification {
    return {
      event,
      data: { ...data, ...extra, notification_id: this.newRef('SIMNTF'), sequence, occurred_at: occurredAt.toISOString() },
    };
  }
}
