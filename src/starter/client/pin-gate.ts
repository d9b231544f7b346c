/**
 * The PIN gate: the one unit every face (the gateway's PIN route, the CLI, a merchant's own
 * service) puts in front of a PIN before it goes to a swap. It holds the policy of the wrong-PIN
 * budget per user (pin-budget.ts, shared by every gateway through Temporal):
 *
 *  - the swap's user_ref (it never changes), remembered for the last USER_REF_CACHE swaps: those
 *    this process started are known without a lookup; others cost one state query;
 *  - a slot of the user's budget is taken before the PIN goes on, kept when the provider said the
 *    PIN was wrong, otherwise given back (not awaited: until it lands, the slot only makes the next
 *    take stricter; one that never lands is given back after its hold time);
 *  - with `slotAhead: 'reserve'` (the gateway's default) the slot is reserved as the swap starts
 *    (`ahead`, beside the start, not awaited by it) and kept in this process's memory: the swap's
 *    PIN through this process uses it instead of a take of its own, and settles it as a take's.
 *    A reservation is used only while the budget surely still holds it (RESERVED_SLOT_HOLD_MS less
 *    RESERVED_SLOT_MARGIN_MS from before it was sent); a PIN with none — another process started
 *    the swap, the reservation was refused (it must leave half the budget free), failed, or is too
 *    old — takes as before, with the same fail-closed answers;
 *  - it fails closed: when the budget cannot say yes within its bound the PIN is not passed on —
 *    no worker answered for it, a budget too busy to answer, the swap's user not known:
 *    PinBudgetUnavailableError; Temporal or its persistence down: their own
 *    TemporalUnavailableError / TemporalPersistenceUnavailableError; a spent budget:
 *    PinBudgetExhaustedError. Either way
 *    nothing reached the swap and no attempt of it was spent. Failing open would buy nothing: a
 *    PIN reaches the provider only through a worker, so when the budget cannot answer the PIN
 *    could not be confirmed either.
 */
import { PinBudgetExhaustedError, PinBudgetUnavailableError, WorkerUnavailableError } from './errors';
import { type PinSlot, RESERVED_SLOT_HOLD_MS, RESERVED_SLOT_MARGIN_MS, type SharedPinBudget } from './pin-budget';

export const USER_REF_CACHE = 10_000;
/** Reservations kept at once (the oldest is given back past it). */
export const RESERVATIONS_KEPT = 10_000;
/** Retry-After of a PIN refused because the budget could not answer (default). */
export const PIN_BUDGET_UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

/**
 * What is done about the user's budget as a swap starts: `reserve` a slot for its PIN (default),
 * `start` the budget's workflow only (the take then updates it running), or nothing (`off`: the
 * PIN's take starts it).
 */
export type SlotAhead = 'reserve' | 'start' | 'off';

export interface PinGateOptions {
  budget: SharedPinBudget;
  /** The swap's user_ref (a state query); undefined when it cannot be learned. */
  userRefOf: (swapId: string) => Promise<string | undefined>;
  /** What `ahead` does as a swap starts (default 'off': a face that starts no swap, such as the CLI's PIN). */
  slotAhead?: SlotAhead;
  /** Told when a budget could not be started or a slot reserved ahead of its PIN (the PIN's take does it then). */
  onAheadFailed?: (err: unknown) => void;
  /** Told when a slot could not be settled (it is given back after its hold time). */
  onSettleFailed?: (swapId: string, err: unknown) => void;
  retryAfterSeconds?: number;
  /** Wait for the settle before answering (a short-lived process such as the CLI); default: the answer does not wait. */
  awaitSettle?: boolean;
}

/** What the submission reports back to the gate: whether the provider said the PIN was wrong. */
export interface PinVerdict {
  wrong: boolean;
  /** Set with `wrong` when the swap still awaits a PIN (attempts and time left): its next slot is reserved. */
  awaitsPin?: boolean;
}

/** A slot reserved for one swap's PIN, in this process's memory. */
export interface Reservation {
  readonly swapId: string;
  readonly userRef: string;
  /** Date.now() before its take was sent: it is used until sentAt + hold - margin. */
  readonly sentAt: number;
  /** The slot, once the budget granted it; undefined when it was refused or failed. */
  readonly slot: Promise<PinSlot | undefined>;
  /** When the swap's PIN window closes (epoch ms), once known. */
  expiresAt?: number;
  timer?: ReturnType<typeof setTimeout>;
}

export class PinGate {
  private readonly userRefs = new Map<string, string>();
  private readonly reservations = new Map<string, Reservation>();
  /** Calls to the budget this process sent without awaiting them (reservations, give-backs, settles). */
  private readonly background = new Set<Promise<unknown>>();

  constructor(private readonly opts: PinGateOptions) {}

  /**
   * Before the process lets go of its Temporal connection (the gateway's close): the slots it
   * holds for PINs that did not come are given back, and every call it sent in the background is
   * waited for (each is bounded: KeyedRecords). A call cut off by the connection closing under it
   * would never settle, and a slot not given back counts until its hold time.
   */
  async close(): Promise<void> {
    for (const r of [...this.reservations.values()]) this.drop(r);
    while (this.background.size > 0) await Promise.allSettled([...this.background]);
  }

  /** `p`, counted among the background calls until it settles. */
  private inBackground<T>(p: Promise<T>): Promise<T> {
    this.background.add(p);
    void p.finally(() => this.background.delete(p)).catch(() => undefined);
    return p;
  }

  /** Remembers a swap's user_ref (a swap this process started or looked up). */
  remember(swap: { swap_id: string; user_ref: string }): void {
    this.userRefs.set(swap.swap_id, swap.user_ref);
    while (this.userRefs.size > USER_REF_CACHE) this.userRefs.delete(this.userRefs.keys().next().value as string);
  }

  /**
   * Starts the user's budget ahead of a PIN (a swap of theirs is starting), not awaited: their
   * PIN's take then updates a running budget. Never fails; a budget not prepared is started by the take.
   */
  prepare(userRef: string): void {
    void this.inBackground(this.opts.budget.prepare(userRef)).catch((err: unknown) => this.opts.onAheadFailed?.(err));
  }

  /**
   * What is done as the swap `swapId` of `userRef` starts (slotAhead): its slot reserved, its
   * budget started, or nothing. Not awaited by anyone, never fails. Answers the reservation made
   * (hand it to `started` or `giveBack` once the start answered), or undefined.
   */
  ahead(swapId: string, userRef: string): Reservation | undefined {
    const mode = this.opts.slotAhead ?? 'off';
    if (mode === 'start') this.prepare(userRef);
    return mode === 'reserve' ? this.reserve(swapId, userRef) : undefined;
  }

  /**
   * The swap started and awaits its PIN: its user_ref is remembered, and its reservation (if any)
   * is given back when its PIN window closes (a local unref'd timer; best effort).
   */
  started(swap: { swap_id: string; user_ref: string; expires_at?: string }): void {
    this.remember(swap);
    const r = this.reservations.get(swap.swap_id);
    const expiresAt = swap.expires_at ? Date.parse(swap.expires_at) : NaN;
    if (r && Number.isFinite(expiresAt)) this.arm(r, expiresAt);
  }

  /** Gives back a reservation made by `ahead` whose start did not answer 201 (not awaited). */
  giveBack(r: Reservation | undefined): void {
    if (r && this.reservations.get(r.swapId) === r) this.drop(r);
  }

  /**
   * Runs `submit` (which sends the PIN and sets verdict.wrong when the provider rejected it) once
   * the user's budget gave a slot: the swap's reservation when this process holds a usable one,
   * otherwise a take. Throws PinBudgetExhaustedError or PinBudgetUnavailableError, without calling
   * `submit`, otherwise.
   */
  async around<T>(swapId: string, submit: (verdict: PinVerdict) => Promise<T>): Promise<T> {
    const userRef = await this.userRefOf(swapId).catch((err: unknown) => {
      throw this.unavailable(swapId, err);
    });
    if (userRef === undefined) throw new PinBudgetUnavailableError(swapId, this.retryAfter, "the swap's user could not be looked up");
    const reservation = this.reservations.get(swapId);
    const slot = (await this.reservedAndAnswering(swapId, reservation, userRef)) ?? (await this.take(swapId, userRef));
    const verdict: PinVerdict = { wrong: false };
    try {
      return await submit(verdict);
    } finally {
      const settled = this.inBackground(slot.settle(verdict.wrong)).catch((err: unknown) => this.opts.onSettleFailed?.(swapId, err));
      if (verdict.wrong) this.afterWrongPin(swapId, userRef, verdict, reservation?.expiresAt);
      if (this.opts.awaitSettle) await settled;
    }
  }

  private async take(swapId: string, userRef: string): Promise<PinSlot> {
    const answer = await this.opts.budget.take(userRef).catch((err: unknown) => {
      throw this.unavailable(swapId, err);
    });
    if ('retryAfterSeconds' in answer) throw new PinBudgetExhaustedError(swapId, answer.retryAfterSeconds);
    return answer.slot;
  }

  /**
   * The reservation's slot for this PIN (awaited if its take is still in flight: it is bounded as
   * a take is), taken out of memory; undefined when there is none to use: refused, failed, of
   * another user, or too old to be sure the budget still holds it (then given back).
   */
  private async reserved(r: Reservation | undefined, userRef: string): Promise<PinSlot | undefined> {
    if (!r) return undefined;
    this.forget(r);
    const slot = await r.slot;
    if (!slot) return undefined;
    if (r.userRef === userRef && Date.now() < r.sentAt + RESERVED_SLOT_HOLD_MS - RESERVED_SLOT_MARGIN_MS) return slot;
    this.release(r);
    return undefined;
  }

  /**
   * The reservation's slot, once the swap has answered a query now. A reservation proves a worker
   * answered as the swap started, not that one runs now; a take proved it for every PIN. So the
   * swap is asked (a query: no history, no workflow task) before the PIN goes on: with no worker it
   * is not answered within its bound, the slot is given back and the PIN refused
   * (PinBudgetUnavailableError, 503) before anything reaches the swap, as a take would refuse it.
   */
  private async reservedAndAnswering(swapId: string, r: Reservation | undefined, userRef: string): Promise<PinSlot | undefined> {
    const slot = await this.reserved(r, userRef);
    if (!slot) return undefined;
    const giveBack = (): void => void this.inBackground(slot.settle(false)).catch((err: unknown) => this.opts.onSettleFailed?.(swapId, err));
    const answered = await this.opts.userRefOf(swapId).catch((err: unknown) => {
      giveBack();
      throw this.unavailable(swapId, err);
    });
    if (answered !== undefined) return slot;
    giveBack();
    throw new PinBudgetUnavailableError(swapId, this.retryAfter, 'no worker answered for the swap in time');
  }

  /**
   * After a wrong PIN: the swap's next slot is reserved when it still awaits a PIN, so the retry
   * is fast too; the reservations of the user's other swaps are given back, for a user who enters
   * wrong PINs is what the budget is for, and a slot held here for a PIN that may come through
   * another gateway would refuse a PIN they are entitled to. Their PINs take as before.
   */
  private afterWrongPin(swapId: string, userRef: string, verdict: PinVerdict, expiresAt: number | undefined): void {
    for (const r of [...this.reservations.values()]) if (r.userRef === userRef && r.swapId !== swapId) this.drop(r);
    if (!verdict.awaitsPin || this.opts.slotAhead !== 'reserve' || this.reservations.has(swapId)) return;
    const r = this.reserve(swapId, userRef);
    if (r && expiresAt !== undefined) this.arm(r, expiresAt);
  }

  /** Reserves a slot for the swap's PIN (not awaited); undefined when the swap has one already. */
  private reserve(swapId: string, userRef: string): Reservation | undefined {
    if (this.reservations.has(swapId)) return undefined;
    const sentAt = Date.now();
    const { budget } = this.opts;
    const slot = this.inBackground(budget.take(userRef, budget.reservation)).then(
      (answer) => ('slot' in answer ? answer.slot : undefined), // refused (it would leave less than half free): the PIN takes
      (err: unknown) => {
        this.opts.onAheadFailed?.(err);
        return undefined;
      },
    );
    const r: Reservation = { swapId, userRef, sentAt, slot };
    this.reservations.set(swapId, r);
    this.arm(r, Infinity);
    while (this.reservations.size > RESERVATIONS_KEPT) this.drop(this.reservations.values().next().value as Reservation);
    return r;
  }

  /** Gives the reservation back when the swap's window closes or it grows too old to use, whichever comes first. */
  private arm(r: Reservation, expiresAt: number): void {
    if (r.timer) clearTimeout(r.timer);
    r.expiresAt = Number.isFinite(expiresAt) ? expiresAt : r.expiresAt;
    const at = Math.min(r.expiresAt ?? Infinity, r.sentAt + RESERVED_SLOT_HOLD_MS - RESERVED_SLOT_MARGIN_MS);
    r.timer = setTimeout(() => this.giveBack(r), Math.max(0, at - Date.now()));
    r.timer.unref();
  }

  private forget(r: Reservation): void {
    if (r.timer) clearTimeout(r.timer);
    if (this.reservations.get(r.swapId) === r) this.reservations.delete(r.swapId);
  }

  private drop(r: Reservation): void {
    this.forget(r);
    this.release(r);
  }

  /** Gives a reservation's slot back once its take answered (not awaited). */
  private release(r: Reservation): void {
    void this.inBackground(r.slot.then((slot) => slot?.settle(false))).catch((err: unknown) => this.opts.onSettleFailed?.(r.swapId, err));
  }

  private async userRefOf(swapId: string): Promise<string | undefined> {
    const known = this.userRefs.get(swapId);
    if (known !== undefined) return known;
    const userRef = await this.opts.userRefOf(swapId);
    if (userRef !== undefined) this.remember({ swap_id: swapId, user_ref: userRef });
    return userRef;
  }

  /**
   * No worker answering for the budget as PinBudgetUnavailableError; anything else as it is —
   * Temporal or its persistence down keeps its own error (503 temporal_unavailable or
   * temporal_persistence_unavailable with Retry-After, as on every route). The PIN is not sent either way.
   */
  private unavailable(swapId: string, err: unknown): unknown {
    if (!(err instanceof WorkerUnavailableError)) return err;
    return new PinBudgetUnavailableError(swapId, this.retryAfter, 'no worker answered for it in time', { cause: err });
  }

  private get retryAfter(): number {
    return this.opts.retryAfterSeconds ?? PIN_BUDGET_UNAVAILABLE_RETRY_AFTER_SECONDS;
  }
}
