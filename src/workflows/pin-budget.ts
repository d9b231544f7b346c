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
 */
import { condition, defineUpdate, setHandler } from '@temporalio/workflow';
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
  /** True while the PIN is with the provider; false: a wrong PIN. */
  held: boolean;
}

export const pinBudgetTakeUpdate = defineUpdate<void, [{ attempt_id: string }]>('take');
export const pinBudgetSettleUpdate = defineUpdate<void, [{ attempt_id: string; wrong: boolean }]>('settle');
/**
 * A refused take is an ApplicationFailure (record-failures.ts), RECORD_FAILURE.pinBudgetExhausted,
 * with the seconds until a slot frees. Its message keeps the text of the releases before
 * (`budget_exhausted:<seconds>`), which their clients read while a deployment is upgraded.
 */

/** The entries still counting at `now`. Pure. */
export function liveEntries(entries: readonly PinBudgetEntry[], now: number, windowMs: number, holdMs: number): PinBudgetEntry[] {
  return entries.filter((e) => now - e.at < (e.held ? holdMs : windowMs));
}

/** Seconds until the oldest counting entry stops counting (at least 1). Pure. */
export function secondsUntilFree(entries: readonly PinBudgetEntry[], now: number, windowMs: number, holdMs: number): number {
  const ends = entries.map((e) => e.at + (e.held ? holdMs : windowMs));
  return Math.max(1, Math.ceil((Math.min(...ends) - now) / 1000));
}

export async function pinBudgetWorkflow(input: PinBudgetInput): Promise<void> {
  const holdMs = input.hold_ms ?? 120_000;
  let entries: PinBudgetEntry[] = input.entries ?? [];
  let changes = 0;
  const live = (): PinBudgetEntry[] => liveEntries(entries, Date.now(), input.window_ms, holdMs);

  setHandler(
    pinBudgetTakeUpdate,
    ({ attempt_id }) => {
      entries = [...live().filter((e) => e.id !== attempt_id), { id: attempt_id, at: Date.now(), held: true }];
      changes++;
    },
    {
      validator: (_arg: { attempt_id: string }) => {
        const now = live();
        if (now.length < input.max) return;
        const seconds = secondsUntilFree(now, Date.now(), input.window_ms, holdMs);
        throw recordRefusal(RECORD_FAILURE.pinBudgetExhausted, `budget_exhausted:${seconds}`, { retry_after_seconds: seconds, max: input.max });
      },
    },
  );
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
      const wait = current.length === 0 ? (input.idle_ms ?? input.window_ms) : Math.min(...current.map((e) => e.at + (e.held ? holdMs : input.window_ms))) - Date.now() + 1;
      const moved = await condition(() => changes !== seen, Math.max(1, wait));
      if (!moved && live().length === 0) return 'end';
    },
    carryOver: () => [{ ...input, entries: live() }],
  });
}
