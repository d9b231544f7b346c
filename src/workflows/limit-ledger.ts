/**
 * The daily limit ledger of one subject for one UTC day: a user (`limits-<keyed hash of
 * user_ref>-<day>`; the user_ref itself is never in Temporal) or the whole deployment
 * (`limits-deployment-<task queue>-<day>`), shared by every gateway. Before a flow starts, each client
 * `reserve`s the flow in the ledgers its limits name; the update's validator refuses the
 * reservation when it would take a count or an amount past the limit the client sent (a refused
 * reservation leaves no trace in history). Updates are handled one at a time, so the check and the
 * count are one step: concurrent starts on several gateways cannot overrun a limit.
 *
 * A reservation is kept by flow id: a second reservation of the same flow (a retried start, an
 * Idempotency-Key replay, a duplicate txn_ref) counts nothing more; it only adds its holder. A
 * holder `release`s its reservation when its start did not start the flow, or when the provider
 * refused the flow at once; the flow stops counting when no holder is left. A reservation older
 * than FOLD_AFTER_MS is folded into the day's totals (no longer known by flow id, never given
 * back), so the ledger's state stays small however many flows a day starts.
 *
 * Amounts are counted exactly, in hundredths (bigint, carried as decimal text). The ledger accepts
 * reservations from CLOCK_SKEW_MS before its day to CLOCK_SKEW_MS after it, then ends; a run
 * started again for a day that is over refuses everything (`ledger_closed`), so it never counts a
 * day again from zero.
 */
import { condition, defineQuery, defineUpdate, setHandler } from '@temporalio/workflow';
import { runEntityLoop } from './entity-loop';
import { type LimitExceededDetails, RECORD_FAILURE, recordRefusal } from './record-failures';

export const LIMIT_LEDGER_WORKFLOW_TYPE = 'limitLedgerWorkflow';

/** How far apart the clocks of the clients and the worker may be around midnight (UTC). */
export const CLOCK_SKEW_MS = 15 * 60_000;
/** A reservation this old is folded into the totals: every start that could give it back has answered. */
export const FOLD_AFTER_MS = 15 * 60_000;
const DAY_MS = 86_400_000;

export type LedgerKind = 'swap' | 'payment_link';

export interface LedgerEntry {
  flow_id: string;
  kind: LedgerKind;
  currency: string;
  /** Hundredths, as decimal text. */
  amount: string;
  at: number;
  /** The reservations that hold it (one per start that reserved it). */
  holders: string[];
}

export interface LimitLedgerInput {
  /** The UTC day it counts, YYYY-MM-DD. */
  day: string;
  /** Carried over by continue-as-new. */
  entries?: LedgerEntry[];
  /** Counter -> total of the folded reservations, as decimal text. */
  folded?: Record<string, string>;
}

/** A limit the reservation must stay within: its name and its maximum (a count, or hundredths), as decimal text. */
export interface LedgerLimit {
  name: string;
  max: string;
}

export interface LedgerReservation {
  flow_id: string;
  holder: string;
  kind: LedgerKind;
  currency: string;
  /** Hundredths, as decimal text. */
  amount: string;
  count_limit?: LedgerLimit;
  amount_limit?: LedgerLimit;
}

export const limitReserveUpdate = defineUpdate<void, [LedgerReservation]>('reserve');
export const limitReleaseUpdate = defineUpdate<void, [{ flow_id: string; holder: string }]>('release');
/** Counter (`count:<kind>`, `amount:<kind>:<currency>`) -> the day's total, as decimal text. */
export const limitTotalsQuery = defineQuery<Record<string, string>>('totals');

/**
 * A refused reservation is an ApplicationFailure (record-failures.ts): RECORD_FAILURE.limitExceeded
 * with the limit, its day and what is left of it; RECORD_FAILURE.ledgerClosed for a reservation
 * outside the ledger's day (give or take CLOCK_SKEW_MS). Their messages keep the text of the
 * releases before (`limit_exceeded:<limit name>`, `ledger_closed:<day>`), which their clients read
 * while a deployment is upgraded.
 */

const countKey = (kind: LedgerKind): string => `count:${kind}`;
const amountKey = (kind: LedgerKind, currency: string): string => `amount:${kind}:${currency}`;

/** The day's totals: the folded ones plus every reservation still known. Pure. */
export function ledgerTotals(entries: readonly LedgerEntry[], folded: Readonly<Record<string, string>>): Map<string, bigint> {
  const totals = new Map<string, bigint>(Object.entries(folded).map(([k, v]) => [k, BigInt(v)]));
  const add = (key: string, n: bigint): void => void totals.set(key, (totals.get(key) ?? 0n) + n);
  for (const e of entries) {
    add(countKey(e.kind), 1n);
    add(amountKey(e.kind, e.currency), BigInt(e.amount));
  }
  return totals;
}

/** The limit the reservation would pass (its name, what it limits, the day's use and what is left), or undefined. Pure. */
export function passedLimit(totals: ReadonlyMap<string, bigint>, r: LedgerReservation): Omit<LimitExceededDetails, 'day'> | undefined {
  const check = (limit: LedgerLimit | undefined, measure: 'count' | 'amount', used: bigint, requested: bigint): Omit<LimitExceededDetails, 'day'> | undefined => {
    if (!limit || used + requested <= BigInt(limit.max)) return undefined;
    const left = BigInt(limit.max) - used;
    return { limit: limit.name, measure, max: limit.max, used: used.toString(), requested: requested.toString(), remaining: (left > 0n ? left : 0n).toString() };
  };
  return check(r.count_limit, 'count', totals.get(countKey(r.kind)) ?? 0n, 1n) ?? check(r.amount_limit, 'amount', totals.get(amountKey(r.kind, r.currency)) ?? 0n, BigInt(r.amount));
}

/** Folds the reservations older than FOLD_AFTER_MS into the totals. Pure. */
export function foldOld(entries: readonly LedgerEntry[], folded: Readonly<Record<string, string>>, now: number): { entries: LedgerEntry[]; folded: Record<string, string> } {
  const old = entries.filter((e) => now - e.at >= FOLD_AFTER_MS);
  if (old.length === 0) return { entries: [...entries], folded: { ...folded } };
  const totals = ledgerTotals(old, folded);
  return { entries: entries.filter((e) => now - e.at < FOLD_AFTER_MS), folded: Object.fromEntries([...totals].map(([k, v]) => [k, v.toString()])) };
}

/** The first and the last instant (ms) the ledger of `day` takes reservations. */
export function ledgerWindow(day: string): { opens: number; closes: number } {
  const start = Date.parse(`${day}T00:00:00.000Z`);
  return { opens: start - CLOCK_SKEW_MS, closes: start + DAY_MS + CLOCK_SKEW_MS };
}

export async function limitLedgerWorkflow(input: LimitLedgerInput): Promise<void> {
  const { opens, closes } = ledgerWindow(input.day);
  let entries: LedgerEntry[] = input.entries ?? [];
  let folded: Record<string, string> = input.folded ?? {};

  setHandler(
    limitReserveUpdate,
    (r) => {
      const known = entries.find((e) => e.flow_id === r.flow_id);
      if (known) {
        if (!known.holders.includes(r.holder)) entries = entries.map((e) => (e === known ? { ...e, holders: [...e.holders, r.holder] } : e));
        return;
      }
      ({ entries, folded } = foldOld(entries, folded, Date.now()));
      entries = [...entries, { flow_id: r.flow_id, kind: r.kind, currency: r.currency, amount: r.amount, at: Date.now(), holders: [r.holder] }];
    },
    {
      validator: (r: LedgerReservation) => {
        const now = Date.now();
        if (now < opens || now > closes) {
          const window = { day: input.day, opens_at: new Date(opens).toISOString(), closes_at: new Date(closes).toISOString() };
          throw recordRefusal(RECORD_FAILURE.ledgerClosed, `ledger_closed:${input.day}`, window);
        }
        if (entries.some((e) => e.flow_id === r.flow_id)) return; // counted once
        const passed = passedLimit(ledgerTotals(entries, folded), r);
        if (passed !== undefined) throw recordRefusal(RECORD_FAILURE.limitExceeded, `limit_exceeded:${passed.limit}`, { ...passed, day: input.day });
      },
    },
  );
  setHandler(limitReleaseUpdate, ({ flow_id, holder }) => {
    entries = entries.flatMap((e) => {
      if (e.flow_id !== flow_id) return [e];
      const holders = e.holders.filter((h) => h !== holder);
      return holders.length > 0 ? [{ ...e, holders }] : [];
    });
  });
  setHandler(limitTotalsQuery, () => Object.fromEntries([...ledgerTotals(entries, folded)].map(([k, v]) => [k, v.toString()])));

  await runEntityLoop<typeof limitLedgerWorkflow>({
    // One timer for the rest of the day; woken early only when history grows long.
    round: async (long) => {
      if (Date.now() >= closes) return 'end';
      await condition(long, Math.max(1, closes - Date.now()));
    },
    carryOver: () => {
      ({ entries, folded } = foldOld(entries, folded, Date.now()));
      return [{ day: input.day, entries, folded }];
    },
  });
}
