/**
 * A deployment's daily count, leased in blocks (workflows/limit-ledger.ts, `lease`): so that a
 * start under a deployment count limit does not take its turn in the deployment's one ledger,
 * each client (a gateway process) leases units of the day's count in blocks and spends them
 * locally; it asks the ledger again only when its block is spent.
 *
 *  - Never past the limit: a unit counts in the ledger from the moment it is leased, used or
 *    not, and the ledger grants at most what is left (a quarter of it, at least one), so the last
 *    units of a day go out one at a time.
 *  - A unit whose start did not start the flow (its id taken, the provider's refusal at once) goes
 *    back to the local block, as the ledger gives back such a reservation.
 *  - The units not used are returned to the ledger once no start asked for one for
 *    `returnAfterMs`, and when the day or the limit changes. A gateway that dies holding a block
 *    leaves at most its unused units counted for the rest of the day (at most `block` per kind):
 *    fewer starts that day, never more.
 *  - It fails closed: a lease that does not answer refuses the starts waiting for it (the caller's
 *    LimitUnavailableError), and one lease is asked at a time, the other starts waiting for it.
 */
import { randomUUID } from 'node:crypto';
import { LIMIT_LEDGER_WORKFLOW_TYPE, type LedgerKind, type LedgerLimit, limitLeaseReturnUpdate, limitLeaseUpdate } from '../../workflows/limit-ledger';
import { type LimitExceededDetails, RECORD_FAILURE } from '../../workflows/record-failures';
import { type KeyedRecords, refusalOf } from './keyed-record';

/** Units a gateway asks for per lease; the ledger may grant fewer near the limit. */
export const DEFAULT_LEASE_BLOCK = 16;
/** How long unused units are kept without a start asking for one (default). */
export const DEFAULT_LEASE_RETURN_AFTER_MS = 2_000;

/** One unit of a lease, held by one start: give it back when the start did not start its flow. */
export interface LeasedUnit {
  giveBack(): void;
}

/** A lease refused: the limit is spent (the ledger's refusal), or the ledger's day is over. */
export type LeaseAnswer = { unit: LeasedUnit } | { refused: LimitExceededDetails };

/** The ledger does not know `lease` (a worker of a release before leases): the caller reserves per start instead. */
export class LeaseUnsupportedError extends Error {
  override name = 'LeaseUnsupportedError';
}

interface Pool {
  ledgerId: string;
  day: string;
  kind: LedgerKind;
  limit: LedgerLimit;
  /** Leased units not yet used. */
  free: number;
  /** The lease being asked for, when one is. */
  asking?: Promise<LimitExceededDetails | undefined>;
  lastUse: number;
  timer?: NodeJS.Timeout;
}

export class DeploymentQuota {
  /** This process's name in the ledgers (a lease is the holder's). */
  readonly holder = randomUUID();
  private readonly pools = new Map<LedgerKind, Pool>();

  constructor(
    private readonly records: KeyedRecords,
    private readonly opts: { block: number; returnAfterMs?: number },
  ) {}

  /**
   * A unit of the deployment's count of `kind` in the ledger `ledgerId` of `day`, or the ledger's
   * refusal when none is left. Throws when the ledger did not answer (LedgerClosed as the caller
   * reads it, LeaseUnsupportedError, WorkerUnavailableError, …).
   */
  async take(ledgerId: string, day: string, kind: LedgerKind, limit: LedgerLimit, leaseError: (err: unknown) => unknown): Promise<LeaseAnswer> {
    const pool = this.poolFor(ledgerId, day, kind, limit);
    for (;;) {
      pool.lastUse = Date.now();
      if (pool.free > 0) {
        pool.free--;
        return { unit: this.unitOf(pool) };
      }
      pool.asking ??= this.lease(pool, leaseError).finally(() => {
        pool.asking = undefined;
      });
      const refused = await pool.asking;
      if (refused) return { refused };
    }
  }

  /** Returns every unused unit (a gateway closing). */
  async returnAll(): Promise<void> {
    await Promise.all([...this.pools.values()].map((p) => this.giveBackUnused(p)));
  }

  /** The pool of `kind`; a pool of another day, ledger or limit returns its unused units first. */
  private poolFor(ledgerId: string, day: string, kind: LedgerKind, limit: LedgerLimit): Pool {
    const known = this.pools.get(kind);
    if (known && known.ledgerId === ledgerId && known.limit.max === limit.max && known.limit.name === limit.name) return known;
    if (known) void this.giveBackUnused(known).catch(() => undefined);
    const pool: Pool = { ledgerId, day, kind, limit, free: 0, lastUse: Date.now() };
    this.pools.set(kind, pool);
    return pool;
  }

  private unitOf(pool: Pool): LeasedUnit {
    let given = false;
    return {
      giveBack: () => {
        if (given) return;
        given = true;
        if (this.pools.get(pool.kind) === pool) pool.free++;
        else void this.returnUnits(pool, 1).catch(() => undefined);
      },
    };
  }

  /** Asks the ledger for a block; undefined when units were granted, the refusal when none is left. */
  private async lease(pool: Pool, leaseError: (err: unknown) => unknown): Promise<LimitExceededDetails | undefined> {
    try {
      const { granted } = await this.records.updateWithStart(pool.ledgerId, limitLeaseUpdate, [{ holder: this.holder, kind: pool.kind, count: this.opts.block, count_limit: pool.limit }], {
        workflowType: LIMIT_LEDGER_WORKFLOW_TYPE,
        args: [{ day: pool.day }],
      });
      pool.free += granted;
      this.scheduleReturn(pool);
      return undefined;
    } catch (err) {
      const exceeded = refusalOf(err, RECORD_FAILURE.limitExceeded);
      if (exceeded) return exceeded;
      if (isUnknownUpdate(err)) throw new LeaseUnsupportedError('the deployment ledger does not take leases');
      throw leaseError(err);
    }
  }

  /** Returns the unused units once no start asked for one for returnAfterMs. */
  private scheduleReturn(pool: Pool): void {
    if (pool.timer) return;
    const every = this.opts.returnAfterMs ?? DEFAULT_LEASE_RETURN_AFTER_MS;
    const tick = (): void => {
      pool.timer = undefined;
      if (pool.free === 0) return;
      if (Date.now() - pool.lastUse >= every && !pool.asking) {
        void this.giveBackUnused(pool).catch(() => undefined);
        return;
      }
      pool.timer = setTimeout(tick, every);
      pool.timer.unref();
    };
    pool.timer = setTimeout(tick, every);
    pool.timer.unref();
  }

  /** Gives the pool's unused units back to the ledger (they leave the pool first: a start never spends one being returned). */
  private async giveBackUnused(pool: Pool): Promise<void> {
    const n = pool.free;
    pool.free = 0;
    if (pool.timer) clearTimeout(pool.timer);
    pool.timer = undefined;
    if (n > 0) await this.returnUnits(pool, n);
  }

  private async returnUnits(pool: Pool, count: number): Promise<void> {
    await this.records.update(pool.ledgerId, limitLeaseReturnUpdate, [{ holder: this.holder, kind: pool.kind, count }]);
  }
}

/** The workflow has no handler for the update (its worker runs a release before it). */
function isUnknownUpdate(err: unknown): boolean {
  const cause = (err as { cause?: { message?: unknown } } | undefined)?.cause;
  return typeof cause?.message === 'string' && cause.message.startsWith('No registered handler for update');
}
