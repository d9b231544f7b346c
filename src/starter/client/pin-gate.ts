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
import type { SharedPinBudget } from './pin-budget';

export const USER_REF_CACHE = 10_000;
/** Retry-After of a PIN refused because the budget could not answer (default). */
export const PIN_BUDGET_UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

export interface PinGateOptions {
  budget: SharedPinBudget;
  /** The swap's user_ref (a state query); undefined when it cannot be learned. */
  userRefOf: (swapId: string) => Promise<string | undefined>;
  /** Whether prepare starts the budget ahead of its PIN (default true). */
  prepareAhead?: boolean;
  /** Told when a budget could not be started ahead of its PIN (the take starts it then). */
  onPrepareFailed?: (err: unknown) => void;
  /** Told when a slot could not be settled (it is given back after its hold time). */
  onSettleFailed?: (swapId: string, err: unknown) => void;
  retryAfterSeconds?: number;
  /** Wait for the settle before answering (a short-lived process such as the CLI); default: the answer does not wait. */
  awaitSettle?: boolean;
}

/** What the submission reports back to the gate: whether the provider said the PIN was wrong. */
export interface PinVerdict {
  wrong: boolean;
}

export class PinGate {
  private readonly userRefs = new Map<string, string>();

  constructor(private readonly opts: PinGateOptions) {}

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
    if (this.opts.prepareAhead === false) return;
    void this.opts.budget.prepare(userRef).catch((err: unknown) => this.opts.onPrepareFailed?.(err));
  }

  /**
   * Runs `submit` (which sends the PIN and sets verdict.wrong when the provider rejected it) once
   * the user's budget gave a slot. Throws PinBudgetExhaustedError or PinBudgetUnavailableError,
   * without calling `submit`, otherwise.
   */
  async around<T>(swapId: string, submit: (verdict: PinVerdict) => Promise<T>): Promise<T> {
    const userRef = await this.userRefOf(swapId).catch((err: unknown) => {
      throw this.unavailable(swapId, err);
    });
    if (userRef === undefined) throw new PinBudgetUnavailableError(swapId, this.retryAfter, "the swap's user could not be looked up");
    const answer = await this.opts.budget.take(userRef).catch((err: unknown) => {
      throw this.unavailable(swapId, err);
    });
    if ('retryAfterSeconds' in answer) throw new PinBudgetExhaustedError(swapId, answer.retryAfterSeconds);
    const verdict: PinVerdict = { wrong: false };
    try {
      return await submit(verdict);
    } finally {
      const settled = answer.slot.settle(verdict.wrong).catch((err: unknown) => this.opts.onSettleFailed?.(swapId, err));
      if (this.opts.awaitSettle) await settled;
    }
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
