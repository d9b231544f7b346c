/**
 * The workflow side of a keyed record (starter/client/keyed-record.ts is the client side): the
 * loop of a long-lived entity workflow that the client meets by id. Its handlers change the
 * entity's state; the loop waits, one round at a time, for what the entity waits for (a change, a
 * timer), and
 *
 *  - continues as new, carrying the entity's state over, once its history grows long: Temporal
 *    suggests it (`continueAsNewSuggested`), or the history passes `maxHistory` events, or the
 *    entity's own `alsoLong` says so; always after every handler has finished
 *    (`allHandlersFinished`), so no update in flight is lost or answered by a run that ended;
 *  - ends when a round says so, also after every handler has finished.
 *
 * A round answers what comes next:
 *  - nothing (undefined): continue as new if the history is long now, otherwise the next round;
 *  - 'again': the next round, without looking at the history (the round looks itself, where its
 *    commands need it: see `long` below);
 *  - 'continue-as-new': continue as new now;
 *  - 'end': end the run.
 *
 * `long` is handed to every round, so a round can wake on it (`condition(() => … || long(), ms)`)
 * or look at it at the point it chooses. The loop adds no command of its own beyond those the
 * entity wrote by hand before (the wait for its handlers and the continue-as-new), so moving an
 * entity onto it replays its recorded histories.
 */
import { allHandlersFinished, condition, continueAsNew, type Workflow, workflowInfo } from '@temporalio/workflow';

/** The history length (events) past which an entity continues as new, unless told otherwise. */
export const ENTITY_MAX_HISTORY = 2_000;

export type RoundEnd = undefined | 'again' | 'continue-as-new' | 'end';

export interface EntityLoop<F extends Workflow> {
  /** One round: waits for what the entity waits for, does what it does, and says what comes next. */
  round: (long: () => boolean) => Promise<RoundEnd | void>;
  /** The arguments of the next run (read after every handler has finished). */
  carryOver: () => Parameters<F>;
  /** History events past which the run continues as new (default ENTITY_MAX_HISTORY; Infinity: never by length). */
  maxHistory?: number;
  /** The entity's own reason to continue as new (e.g. a count of changes). */
  alsoLong?: () => boolean;
  /** Runs after every handler has finished, before the run continues as new or ends (e.g. hands over queued events). */
  beforeClose?: () => Promise<void>;
}

/** Runs the entity until a round ends it; continues as new in between as its history grows. */
export async function runEntityLoop<F extends Workflow>(loop: EntityLoop<F>): Promise<void> {
  const maxHistory = loop.maxHistory ?? ENTITY_MAX_HISTORY;
  const long = (): boolean => workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > maxHistory || (loop.alsoLong?.() ?? false);
  for (;;) {
    const next = (await loop.round(long)) ?? (long() ? 'continue-as-new' : 'again');
    if (next === 'again') continue;
    await condition(allHandlersFinished);
    await loop.beforeClose?.();
    if (next === 'end') return;
    await continueAsNew<F>(...loop.carryOver());
  }
}
