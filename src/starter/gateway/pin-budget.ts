/**
 * A budget of wrong PINs per user_ref, across all the user's swaps, in one gateway process: an
 * API-key holder who starts swap after swap for one user cannot try more than `max` wrong PINs in
 * `timeWindowMs` (the per-swap cap of 3 and the per-swap rate limit alone allowed hundreds a
 * minute). Per process and in memory (bounded, LRU): N gateways allow N budgets.
 */

export interface PinBudgetOptions {
  max: number;
  timeWindowMs: number;
  /** user_refs remembered (default 50,000). */
  maxUsers?: number;
}

export class UserPinBudget {
  private readonly wrong = new Map<string, number[]>();
  private readonly maxUsers: number;

  constructor(private readonly opts: PinBudgetOptions) {
    this.maxUsers = opts.maxUsers ?? 50_000;
  }

  private recent(userRef: string, now: number): number[] {
    const times = (this.wrong.get(userRef) ?? []).filter((t) => now - t < this.opts.timeWindowMs);
    if (times.length === 0) this.wrong.delete(userRef);
    else this.wrong.set(userRef, times);
    return times;
  }

  /** Seconds until the user may try again, or 0 when the budget has room. */
  retryAfterSeconds(userRef: string, now = Date.now()): number {
    const times = this.recent(userRef, now);
    if (times.length < this.opts.max) return 0;
    return Math.max(1, Math.ceil((times[times.length - this.opts.max]! + this.opts.timeWindowMs - now) / 1000));
  }

  /** Records one wrong PIN for the user. */
  recordWrong(userRef: string, now = Date.now()): void {
    const times = this.recent(userRef, now);
    times.push(now);
    this.wrong.delete(userRef); // most recently used goes last
    this.wrong.set(userRef, times);
    while (this.wrong.size > this.maxUsers) this.wrong.delete(this.wrong.keys().next().value as string);
  }
}
