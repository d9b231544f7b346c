/**
 * The wrong-PIN budget per user, kept in Temporal (workflows/pin-budget.ts) so that every gateway
 * counts against the same budget. A budget's workflow id is `pin-budget-<HMAC(user_ref)>` under a
 * key derived from a payload key (codec/derive.ts, purpose pin_budget): no user_ref in Temporal,
 * in plaintext or as a plain hash anyone could compute from a guessed user_ref.
 *
 * Key rotation: a user has one budget per payload key of the ring, and a PIN takes a slot in every
 * one of them (in parallel; refused when any refuses). Rotating the keys (a new key put first, the
 * old ones kept for the history that needs them) thus neither resets a budget nor splits it: a
 * gateway with the old ring and one with the new still share the old key's budget, and once the
 * old key leaves the ring the new key's budget has counted everything since the new key came in.
 * A ring of one key (the usual case) costs one update per PIN, as before.
 *
 * `prepare` starts the budgets ahead of the PIN, so the take is a plain update of a running
 * workflow rather than an update-with-start while the user waits. `take(userRef, RESERVATION)`
 * reserves a slot ahead of the PIN (the gateway does as a swap starts: pin-gate.ts): a take with a
 * hold long enough for the swap's PIN window, refused unless it leaves half the budget free.
 */
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { deriveKeys } from '../../codec/derive';
import type { KeyRing } from '../../codec/keys';
import { PIN_BUDGET_WORKFLOW_TYPE, type PinBudgetTake, pinBudgetSettleUpdate, pinBudgetTakeUpdate } from '../../workflows/pin-budget';
import type { TemporalAvailability } from './health';
import { RECORD_FAILURE } from '../../workflows/record-failures';
import { KeyedRecords, recordId, refusalOf } from './keyed-record';

export interface PinBudgetOptions {
  client: Client;
  taskQueue: string;
  keys: string | KeyRing;
  /** Wrong PINs per user in `timeWindowMs` (PINs in flight count until answered). */
  max: number;
  timeWindowMs: number;
  /**
   * Runs each call bounded by the client's TemporalGate (health.ts): Temporal or its persistence
   * down is TemporalUnavailableError within seconds, not a WorkerUnavailableError at the deadline.
   */
  guard?: <T>(fn: () => Promise<T>, flowId?: string) => Promise<T>;
  /** How long a call waits for a worker (default 2 s: the PIN waits behind it). */
  answerTimeoutMs?: number;
  /** Whether Temporal and its database answer (health.ts): a call cut by its deadline is then their outage, not a missing worker. */
  availability?: () => Promise<TemporalAvailability>;
}

/** A slot taken: settle it once the provider answered (wrong: kept; otherwise given back). */
export interface PinSlot {
  settle(wrong: boolean): Promise<void>;
}

/** How long a budget started ahead of its PIN (prepare) waits for one: a swap's PIN window is minutes. */
export const PREPARED_BUDGET_IDLE_MS = 5 * 60_000;

/**
 * How long a slot reserved ahead of its PIN counts in the budget while not settled: the swap's PIN
 * window (the provider's 5 minutes) plus RESERVED_SLOT_MARGIN_MS.
 */
export const RESERVED_SLOT_HOLD_MS = 7 * 60_000;
/**
 * How long before its hold ends a reservation stops being used, measured from before its take was
 * sent: a PIN sent on it then still has the cover a fresh take's slot has (its default hold, 120 s)
 * to come back from the provider and be settled.
 */
export const RESERVED_SLOT_MARGIN_MS = 120_000;

/** The slots a reservation must leave free after it: half the budget, rounded up (5 of 10). */
export const reservationKeepsFree = (max: number): number => Math.ceil(max / 2);

/** What a take may ask beyond a slot: its own hold, and the slots it must leave free. */
export interface TakeOptions {
  holdMs?: number;
  keepFree?: number;
}

/** The budget every face uses unless told otherwise: 10 wrong PINs per user in 15 minutes. */
export const DEFAULT_PIN_BUDGET = { max: 10, timeWindowMs: 15 * 60_000 } as const;

export type PinBudgetAnswer = { slot: PinSlot } | { retryAfterSeconds: number };

export class SharedPinBudget {
  /** The id key of each payload key, the active one first. */
  private readonly idKeys: Buffer[];
  private readonly records: KeyedRecords;

  constructor(private readonly opts: PinBudgetOptions) {
    this.idKeys = [...deriveKeys(opts.keys, 'pin_budget').keys.values()];
    const { client, taskQueue, guard, availability } = opts;
    this.records = new KeyedRecords({ client, taskQueue, guard, availability, what: 'PIN budget', answerTimeoutMs: opts.answerTimeoutMs ?? 2_000 });
  }

  /** Wrong PINs (and slots held) per user in the window. */
  get max(): number {
    return this.opts.max;
  }

  /** The options of a reservation ahead of a PIN: its hold, and half the budget left free. */
  get reservation(): TakeOptions {
    return { holdMs: RESERVED_SLOT_HOLD_MS, keepFree: reservationKeepsFree(this.opts.max) };
  }

  /** The user's budget under the active payload key. */
  workflowId(userRef: string): string {
    return this.workflowIds(userRef)[0]!;
  }

  /** The user's budget under every payload key of the ring, the active key's first. */
  workflowIds(userRef: string): string[] {
    return this.idKeys.map((key) => recordId.keyed('pin-budget', key, userRef));
  }

  /**
   * A slot for one PIN of the user in every one of its budgets, or the seconds to wait when one is
   * spent. Throws (TemporalUnavailableError, WorkerUnavailableError…) when a budget did not answer:
   * the caller must then not pass the PIN on. Slots taken before a refusal or a failure are given back.
   * `options`: a reservation's own hold and the slots it must leave free (this.reservation).
   */
  async take(userRef: string, options: TakeOptions = {}): Promise<PinBudgetAnswer> {
    const attemptId = randomUUID();
    const ids = this.workflowIds(userRef);
    const answers = await Promise.allSettled(ids.map((id) => this.takeOne(id, attemptId, options)));
    const taken = ids.filter((_, i) => answers[i]!.status === 'fulfilled' && (answers[i] as PromiseFulfilledResult<number | true>).value === true);
    const settle = async (wrong: boolean): Promise<void> => {
      await Promise.all(taken.map((id) => this.records.update(id, pinBudgetSettleUpdate, [{ attempt_id: attemptId, wrong }])));
    };
    const waits = answers.flatMap((a) => (a.status === 'fulfilled' && a.value !== true ? [a.value] : []));
    const failed = answers.find((a): a is PromiseRejectedResult => a.status === 'rejected');
    if (waits.length === 0 && !failed) return { slot: { settle } };
    // Not awaited: a slot not given back counts until its hold time, which only makes the budget stricter.
    if (taken.length > 0) void settle(false).catch(() => undefined);
    if (waits.length > 0) return { retryAfterSeconds: Math.max(...waits) };
    throw failed!.reason;
  }

  /**
   * Starts the user's budget ahead of their PIN (when it is not running), so that the PIN's take is
   * an update of a running workflow, not a start while the user waits. Best effort: it takes no
   * slot and changes no count; a budget not prepared is started by the take as before.
   */
  async prepare(userRef: string): Promise<void> {
    const { client } = this.records;
    await Promise.all(
      this.workflowIds(userRef).map((workflowId) =>
        this.records.within(workflowId, () =>
          client.workflow.start(PIN_BUDGET_WORKFLOW_TYPE, {
            workflowId,
            taskQueue: this.opts.taskQueue,
            args: [{ max: this.opts.max, window_ms: this.opts.timeWindowMs, idle_ms: PREPARED_BUDGET_IDLE_MS }],
            // A budget running (a PIN of another swap in flight, counting wrong PINs) is left as it is.
            workflowIdConflictPolicy: 'USE_EXISTING',
            workflowIdReusePolicy: 'ALLOW_DUPLICATE',
          }),
        ),
      ),
    );
  }

  /** true: a slot taken; a number: the budget is spent, seconds until a slot frees. */
  private async takeOne(workflowId: string, attemptId: string, options: TakeOptions): Promise<true | number> {
    const take: PinBudgetTake = { attempt_id: attemptId };
    if (options.holdMs !== undefined) take.hold_ms = options.holdMs;
    if (options.keepFree !== undefined) take.keep_free = options.keepFree;
    try {
      await this.records.updateWithStart(workflowId, pinBudgetTakeUpdate, [take], {
        workflowType: PIN_BUDGET_WORKFLOW_TYPE,
        args: [{ max: this.opts.max, window_ms: this.opts.timeWindowMs }],
      });
      return true;
    } catch (err) {
      const spent = refusalOf(err, RECORD_FAILURE.pinBudgetExhausted);
      if (spent) return spent.retry_after_seconds;
      throw err;
    }
  }
}
