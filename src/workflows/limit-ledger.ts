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
 * A deployment's count may also be leased in blocks (`lease`): a gateway takes up to `count` units at
 * once and starts that many flows without asking again; the units count as used from the moment
 * they are leased, and the holder `return_lease`s the ones it did not use. A lease's grant never
 * takes the count past the limit the client sent, and it shrinks as the day's remainder does (a
 * quarter of what is left, at least one), so the last units of a day go to the gateways one at a
 * time. A lease not touched for FOLD_AFTER_MS is folded into the totals like a reservation (a
 * later return of it gives nothing back: a lease lost with its gateway stays counted).
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

/** The units of a deployment's count leased to one holder (a gateway process), used or not. */
export interface LedgerLease {
  holder: string;
  kind: LedgerKind;
  /** Units leased and not returned. */
  granted: number;
  /** When it was last leased from or returned to. */
  at: number;
}

export interface LimitLedgerInput {
  /** The UTC day it counts, YYYY-MM-DD. */
  day: string;
  /** Carried over by continue-as-new. */
  entries?: LedgerEntry[];
  /** Carried over by continue-as-new (absent when there is none). */
  leases?: LedgerLease[];
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

/** A block of a deployment's count asked for: up to `count` units of `kind`, within `count_limit`. */
export interface LeaseRequest {
  holder: string;
  kind: LedgerKind;
  count: number;
  count_limit: LedgerLimit;
}

export const limitReserveUpdate = defineUpdate<void, [LedgerReservation]>('reserve');
/** Answers the units granted (at least 1); refused (limitExceeded) when none is left. */
export const limitLeaseUpdate = defineUpdate<{ granted: number }, [LeaseRequest]>('lease');
/** Gives back `count` unused units of the holder's lease (never more than it holds). */
export const limitLeaseReturnUpdate = defineUpdate<void, [{ holder: string; kind: LedgerKind; count: number }]>('return_lease');
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
export function ledgerTotals(entries: readonly LedgerEntry[], folded: Readonly<Record<string, string>>, leases: readonly LedgerLease[] = []): Map<string, bigint> {
  const totals = new Map<string, bigint>(Object.entries(folded).map(([k, v]) => [k, BigInt(v)]));
  const add = (key: string, n: bigint): void => void totals.set(key, (totals.get(key) ?? 0n) + n);
  for (const e of entries) {
    add(countKey(e.kind), 1n);
    add(amountKey(e.kind, e.currency), BigInt(e.amount));
  }
  for (const l of leases) add(countKey(l.kind), BigInt(l.granted));
  return totals;
}

/** The units a lease may grant now: what was asked, at most a quarter of what is left (at least one); 0 when nothing is left. Pure. */
export function leaseGrant(totals: ReadonlyMap<string, bigint>, req: LeaseRequest): number {
  const left = BigInt(req.count_limit.max) - (totals.get(countKey(req.kind)) ?? 0n);
  if (left <= 0n) return 0;
  const quarter = (left + 3n) / 4n;
  return Number([BigInt(Math.max(1, Math.floor(req.count))), quarter].reduce((a, b) => (a < b ? a : b)));
}

/** The leases with `count` more units for the holder's lease of `kind` (negative: given back, never below 0). Pure. */
export function withLease(leases: readonly LedgerLease[], holder: string, kind: LedgerKind, count: number, now: number): LedgerLease[] {
  const known = leases.find((l) => l.holder === holder && l.kind === kind);
  if (!known) return count > 0 ? [...leases, { holder, kind, granted: count, at: now }] : [...leases];
  const granted = Math.max(0, known.granted + count);
  return leases.flatMap((l) => (l !== known ? [l] : granted > 0 ? [{ ...l, granted, at: now }] : []));
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
export function foldOld(
  entries: readonly LedgerEntry[],
  folded: Readonly<Record<string, string>>,
  now: number,
  leases: readonly LedgerLease[] = [],
): { entries: LedgerEntry[]; folded: Record<string, string>; leases: LedgerLease[] } {
  const old = entries.filter((e) => now - e.at >= FOLD_AFTER_MS);
  const oldLeases = leases.filter((l) => now - l.at >= FOLD_AFTER_MS);
  if (old.length === 0 && oldLeases.length === 0) return { entries: [...entries], folded: { ...folded }, leases: [...leases] };
  const totals = ledgerTotals(old, folded, oldLeases);
  return {
    entries: entries.filter((e) => now - e.at < FOLD_AFTER_MS),
    folded: Object.fromEntries([...totals].map(([k, v]) => [k, v.toString()])),
    leases: leases.filter((l) => now - l.at < FOLD_AFTER_MS),
  };
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
  let leases: LedgerLease[] = input.leases ?? [];
  const fold = (): void => void ({ entries, folded, leases } = foldOld(entries, folded, Date.now(), leases));
  const totals = (): Map<string, bigint> => ledgerTotals(entries, folded, leases);
  /** Refuses anything outside the ledger's day (give or take CLOCK_SKEW_MS). */
  const refuseOutsideDay = (): void => {
    const now = Date.now();
    if (now >= opens && now <= closes) return;
    const window = { day: input.day, opens_at: new Date(opens).toISOString(), closes_at: new Date(closes).toISOString() };
    throw recordRefusal(RECORD_FAILURE.ledgerClosed, `ledger_closed:${input.day}`, window);
  };

  setHandler(
    limitReserveUpdate,
    (r) => {
      const known = entries.find((e) => e.flow_id === r.flow_id);
      if (known) {
        if (!known.holders.includes(r.holder)) entries = entries.map((e) => (e === known ? { ...e, holders: [...e.holders, r.holder] } : e));
        return;
      }
      fold();
      entries = [...entries, { flow_id: r.flow_id, kind: r.kind, currency: r.currency, amount: r.amount, at: Date.now(), holders: [r.holder] }];
    },
    {
      validator: (r: LedgerReservation) => {
        refuseOutsideDay();
        if (entries.some((e) => e.flow_id === r.flow_id)) return; // counted once
        const passed = passedLimit(totals(), r);
        if (passed !== undefined) throw recordRefusal(RECORD_FAILURE.limitExceeded, `limit_exceeded:${passed.limit}`, { ...passed, day: input.day });
      },
    },
  );
  setHandler(
    limitLeaseUpdate,
    (req) => {
      fold();
      const granted = leaseGrant(totals(), req);
      leases = withLease(leases, req.holder, req.kind, granted, Date.now());
      return { granted };
    },
    {
      validator: (req: LeaseRequest) => {
        refuseOutsideDay();
        if (leaseGrant(totals(), req) > 0) return;
        const passed = passedLimit(totals(), { flow_id: '', holder: req.holder, kind: req.kind, currency: '', amount: '0', count_limit: req.count_limit })!;
        throw recordRefusal(RECORD_FAILURE.limitExceeded, `limit_exceeded:${passed.limit}`, { ...passed, day: input.day });
      },
    },
  );
  setHandler(limitLeaseReturnUpdate, ({ holder, kind, count }) => {
    leases = withLease(leases, holder, kind, -Math.max(0, Math.floor(count)), Date.now());
  });
  setHandler(limitReleaseUpdate, ({ flow_id, holder }) => {
    entries = entries.flatMap((e) => {
      if (e.flow_id !== flow_id) return [e];
      const holders = e.holders.filter((h) => h !== holder);
      return holders.length > 0 ? [{ ...e, holders }] : [];
    });
  });
  setHandler(limitTotalsQuery, () => Object.fromEntries([...totals()].map(([k, v]) => [k, v.toString()])));

  await runEntityLoop<typeof limitLedgerWorkflow>({
    // One timer for the rest of the day; woken early only when history grows long.
    round: async (long) => {
      if (Date.now() >= closes) return 'end';
      await condition(long, Math.max(1, closes - Date.now()));
    },
    carryOver: () => {
      fold();
      return [{ day: input.day, entries, folded, ...(leases.length > 0 ? { leases } : {}) }];
    },
  });
}
