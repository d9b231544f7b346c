/**
 * The wrong-PIN budget of one user (`pin-budget-<keyed hash of user_ref>`; the user_ref itself is
 * never in Temporal), shared by every gateway: before a PIN goes to the provider a gateway
 * `take`s a slot (refused, by the update's validator, when the user's wrong PINs in the window
 * plus the PINs in flight reach `max`: a refused take leaves no trace in history); once the
 * provider answered it `settle`s the slot: kept as a wrong PIN, or given back. A slot never
 * settled (its gateway died) is given back after `hold_ms`. Updates are handled one at a time,
 * so the check and the count are one step: concurrent PINs on several gateways cannot overrun it.
 * The workflow ends once it holds nothing; the next take starts it again.
 *
 * A gateway may start a user's budget ahead of the PIN (as it starts the swap), with `idle_ms`: a
 * take then meets a running workflow, a plain update, instead of starting one while the user waits.
 * Such a run that no PIN reaches ends after `idle_ms`.
 *
 * A gateway may also reserve a swap's slot as the swap starts: a take with its own `hold_ms` (the
 * entry keeps it, so it counts for a PIN window rather than the default hold) and `keep_free`
 * (refused unless that many slots stay free after it, so reservations never take the slots a
 * PIN's own take needs). A reserved slot is an entry held like any other: it counts until settled
 * or past its hold, so the budget is exactly as strict with reservations as without.
 */
import { condition, defineQuery, defineUpdate, setHandler } from '@temporalio/workflow';
import { runEntityLoop } from './entity-loop';
import { RECORD_FAILURE, recordRefusal } from './record-failures';

export const PIN_BUDGET_WORKFLOW_TYPE = 'pinBudgetWorkflow';

export interface PinBudgetInput {
  max: number;
  window_ms: number;
  /** How long a slot taken and not settled counts (default 120 s). */
  hold_ms?: number;
  /** Carried over by continue-as-new. */
  entries?: PinBudgetEntry[];
  /** How long a run that holds nothing waits for its first take before it ends (default window_ms). */
  idle_ms?: number;
}

export interface PinBudgetEntry {
  id: string;
  at: number;
  /** True while the PIN is with the provider (or its slot is reserved); false: a wrong PIN. */
  held: boolean;
  /** How long this entry counts while held, when the take gave its own (a reservation). */
  hold_ms?: number;
}

export interface PinBudgetTake {
  attempt_id: string;
  /** How long this slot counts while not settled (default: the budget's hold_ms). At most MAX_TAKE_HOLD_MS. */
  hold_ms?: number;
  /** Refused unless at least this many slots stay free after it (a reservation ahead of its PIN). */
  keep_free?: number;
}

/** The longest hold a take may ask for. */
export const MAX_TAKE_HOLD_MS = 30 * 60_000;

export const pinBudgetTakeUpdate = defineUpdate<void, [PinBudgetTake]>('take');
export const pinBudgetSettleUpdate = defineUpdate<void, [{ attempt_id: string; wrong: boolean }]>('settle');
/** How many entries count now: slots held (PINs in flight, reservations) and wrong PINs. */
export const pinBudgetCountsQuery = defineQuery<{ held: number; wrong: number }>('counts');
/**
 * A refused take is an ApplicationFailure (record-failures.ts), RECORD_FAILURE.pinBudgetExhausted,
 * with the seconds until a slot frees. Its message keeps the text of the releases before
 * (`budget_exhausted:<seconds>`), which their clients read while a deployment is upgraded.
 */

/** The entries still counting at `now`. Pure. */
export function liveEntries(entries: readonly PinBudgetEntry[], now: number, windowMs: number, holdMs: number): PinBudgetEntry[] {
  return entries.filter((e) => now < endOf(e, windowMs, holdMs));
}

/** When an entry stops counting: a held one after its own hold (or the budget's), a wrong PIN after the window. Pure. */
export function endOf(e: PinBudgetEntry, windowMs: number, holdMs: number): number {
  return e.at + (e.held ? (e.hold_ms ?? holdMs) : windowMs);
}

/** What is wrong with a take's argument (the field), or undefined. Pure. */
export function takeProblem(arg: PinBudgetTake): string | undefined {
  if (typeof arg?.attempt_id !== 'string' || arg.attempt_id.length === 0) return 'attempt_id';
  if (arg.hold_ms !== undefined && !(Number.isInteger(arg.hold_ms) && arg.hold_ms > 0 && arg.hold_ms <= MAX_TAKE_HOLD_MS)) return 'hold_ms';
  if (arg.keep_free !== undefined && !(Number.isInteger(arg.keep_free) && arg.keep_free >= 0)) return 'keep_free';
  return undefined;
}

/** Seconds until the oldest counting entry stops counting (at least 1). Pure. */
export function secondsUntilFree(entries: readonly PinBudgetEntry[], now: number, windowMs: number, holdMs: number): number {
  const ends = entries.map((e) => endOf(e, windowMs, holdMs));
  return Math.max(1, Math.ceil((Math.min(...ends) - now) / 1000));
}

export async function pinBudgetWorkflow(input: PinBudgetInput): Promise<void> {
  const holdMs = input.hold_ms ?? 120_000;
  let entries: PinBudgetEntry[] = input.entries ?? [];
  let changes = 0;
  const live = (): PinBudgetEntry[] => liveEntries(entries, Date.now(), input.window_ms, holdMs);

  setHandler(
    pinBudgetTakeUpdate,
    ({ attempt_id, hold_ms }) => {
      // An entry of a take that gave no hold is the same object as before hold_ms existed.
      const entry: PinBudgetEntry = hold_ms === undefined ? { id: attempt_id, at: Date.now(), held: true } : { id: attempt_id, at: Date.now(), held: true, hold_ms };
      entries = [...live().filter((e) => e.id !== attempt_id), entry];
      changes++;
    },
    {
      validator: (arg: PinBudgetTake) => {
        const problem = takeProblem(arg);
        if (problem) throw recordRefusal(RECORD_FAILURE.invalidInput, `take: ${problem} is not valid`, { field: problem });
        const now = live();
        if (now.length + 1 + (arg.keep_free ?? 0) <= input.max) return;
        const seconds = secondsUntilFree(now, Date.now(), input.window_ms, holdMs);
        throw recordRefusal(RECORD_FAILURE.pinBudgetExhausted, `budget_exhausted:${seconds}`, { retry_after_seconds: seconds, max: input.max });
      },
    },
  );
  setHandler(pinBudgetCountsQuery, () => {
    const now = live();
    return { held: now.filter((e) => e.held).length, wrong: now.filter((e) => !e.held).length };
  });
  setHandler(pinBudgetSettleUpdate, ({ attempt_id, wrong }) => {
    entries = live().flatMap((e) => (e.id !== attempt_id ? [e] : wrong ? [{ id: e.id, at: Date.now(), held: false }] : []));
    changes++;
  });

  await runEntityLoop<typeof pinBudgetWorkflow>({
    round: async () => {
      const seen = changes;
      const current = live();
      if (current.length === 0 && seen > 0) return 'end';
      // Wake when something changes, or when the oldest entry stops counting.
      const wait = current.length === 0 ? (input.idle_ms ?? input.window_ms) : Math.min(...current.map((e) => endOf(e, input.window_ms, holdMs))) - Date.now() + 1;
      const moved = await condition(() => changes !== seen, Math.max(1, wait));
      if (!moved && live().length === 0) return 'end';
    },
    carryOver: () => [{ ...input, entries: live() }],
  });
}
