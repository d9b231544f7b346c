/**
 * Daily limits on starts, kept in Temporal (workflows/limit-ledger.ts) so that every gateway and
 * every client counts against the same ones: per user and per deployment, per UTC day, on the
 * count and on the amount (per currency) of swaps and of payment links (config/limits-env.ts).
 *
 *  - Before a flow starts, it is reserved in the ledger of each limited subject: the user's,
 *    `limits-<HMAC(user_ref)>-<day>` under a key derived from a payload key (codec/derive.ts,
 *    purpose limit_ledger: no user_ref in Temporal, in plaintext or as a plain hash), and the
 *    deployment's (every client of the task queue), `limits-deployment-<task queue>-<day>`. The reservations go out in parallel; one refused is
 *    LimitExceededError naming the limit, and the others are given back: nothing is started.
 *  - The day is the UTC day of this process's clock when the start is asked for.
 *  - What counts: every flow that was started, whatever becomes of it (expired, cancelled, failed
 *    at the PIN, in doubt), until the day ends. Given back: a reservation whose start did not
 *    start the flow (its id was taken: the flow counted when it was started), and a flow the
 *    provider refused at once (the start's own answer is `failed`: no auth token, no pay_link, so
 *    no money can move). Nothing else is given back, so the flows themselves tell the ledger
 *    nothing and need no change.
 *  - A reservation is kept by flow id, so a retried start, an Idempotency-Key replay and a
 *    duplicate txn_ref count once.
 *  - It fails closed: when a ledger cannot answer within its bound (no worker, a ledger too busy,
 *    a ledger closed for the day this clock names), LimitUnavailableError; Temporal or its
 *    persistence down keeps its own TemporalUnavailableError. Either way nothing is started.
 *  - Unset limits cost nothing: a start under no limit makes no call to a ledger.
 *  - A long-lived client (the gateway: `deploymentLeaseBlock`) leases a deployment's count (with no
 *    deployment amount limit for the start's currency) in blocks (deployment-quota.ts): a start
 *    spends a unit of this process's block and asks the deployment's one ledger only when the
 *    block is spent, instead of a turn in it per start. A short-lived one (the CLI) reserves per start.
 *
 * Key rotation: as the PIN budget (pin-budget.ts), a user has one ledger per payload key of the
 * ring and a start reserves in each; a ring of one key costs one update per limited subject.
 */
import { randomUUID } from 'node:crypto';
import { type Client, WorkflowNotFoundError } from '@temporalio/client';
import { deriveKeys } from '../../codec/derive';
import type { DailyLimits, LimitName } from '../../config/limits-env';
import {
  LIMIT_LEDGER_WORKFLOW_TYPE,
  type LedgerKind,
  type LedgerReservation,
  limitReleaseUpdate,
  limitReserveUpdate,
  limitTotalsQuery,
} from '../../workflows/limit-ledger';
import { type LimitExceededDetails, RECORD_FAILURE } from '../../workflows/record-failures';
import { LimitExceededError, LimitUnavailableError, TemporalUnavailableError, WorkerUnavailableError } from './errors';
import type { TemporalGate } from './health';
import { DeploymentQuota, type LeasedUnit, LeaseUnsupportedError } from './deployment-quota';
import { KeyedRecords, recordId, refusalOf } from './keyed-record';
import { isAlreadyStarted } from './temporal-errors';

/** Retry-After of a start refused because the limits could not be checked. */
export const LIMIT_UNAVAILABLE_RETRY_AFTER_SECONDS = 5;
/** How long a start waits for the ledgers' answer (default). */
export const DEFAULT_LIMIT_ANSWER_TIMEOUT_MS = 5_000;

/** What of a start the limits read (a swap's or a link's provider request). */
export interface LimitedStart {
  user_ref: string;
  amount: number;
  /** A swap's: its amount is in this currency. */
  from_currency?: string;
  /** A link's. */
  currency?: string;
}

export interface DailyLimitsOptions {
  client: Client;
  taskQueue: string;
  keys: string;
  limits: DailyLimits;
  /** Bounds each call (health.ts) and tells whether a flow exists. */
  gate: Pick<TemporalGate, 'guard' | 'availability' | 'flowStatus'>;
  answerTimeoutMs?: number;
  retryAfterSeconds?: number;
  /** Units of a deployment's count leased at once (deployment-quota.ts); unset or 0: a turn in the deployment's ledger per start. */
  deploymentLeaseBlock?: number;
  /** How long unused leased units are kept without a start asking for one (default 2 s). */
  deploymentLeaseReturnAfterMs?: number;
}

/** The amount in hundredths, exactly (amounts have at most 2 decimal places; no float arithmetic). */
export function hundredths(amount: number | string): bigint {
  const m = /^(\d+)(?:\.(\d{1,2}))?$/.exec(String(amount).trim());
  if (!m) throw new RangeError(`not an amount of at most 2 decimal places: ${String(amount)}`);
  return BigInt(m[1]!) * 100n + BigInt((m[2] ?? '').padEnd(2, '0'));
}

/** Hundredths (decimal text) as an amount with 2 decimal places, exactly. */
export function fromHundredths(h: string): string {
  const n = BigInt(h);
  const abs = n < 0n ? -n : n;
  return `${n < 0n ? '-' : ''}${abs / 100n}.${(abs % 100n).toString().padStart(2, '0')}`;
}

/** The UTC day of an instant, YYYY-MM-DD. */
export const utcDay = (at: number): string => new Date(at).toISOString().slice(0, 10);
/** When the UTC day of `day` ends, ISO 8601. */
const endOfDay = (day: string): string => new Date(Date.parse(`${day}T00:00:00.000Z`) + 86_400_000).toISOString();

/**
 * A user's ledgers of `day`, one per key of the ring (the active key's first):
 * `limits-<HMAC(user_ref)>-<day>`. `keys`: PAYLOAD_ENCRYPTION_KEYS, or their derived limit_ledger keys.
 */
export function userLedgerIds(keys: string | Buffer[], userRef: string, day: string): string[] {
  const idKeys = typeof keys === 'string' ? [...deriveKeys(keys, 'limit_ledger').keys.values()] : keys;
  return idKeys.map((key) => `${recordId.keyed('limits', key, userRef)}-${day}`);
}

/** The deployment's ledger of `day`: every client that starts flows on this task queue counts into it. */
export function deploymentLedgerId(taskQueue: string, day: string): string {
  return `limits-deployment-${taskQueue}-${day}`;
}

/** The limits of one subject that a start must stay within, and the ledgers that count them. */
interface Check {
  scope: 'user' | 'deployment';
  ledgers: string[];
  count?: { name: LimitName; max: number };
  amount?: { name: LimitName; max: string };
}

/** A ledger refused a reservation for a day it does not take (the clocks of this host and the worker disagree). */
class LedgerClosedError extends Error {
  override name = 'LedgerClosedError';
  constructor(day: string) {
    super(`the ledger of ${day} takes no reservation now: is this host's clock right?`);
  }
}

/** A ledger's failure as the start reads it: a ledger closed for the day as LedgerClosedError, anything else as it is. */
function ledgerError(err: unknown): unknown {
  const closed = refusalOf(err, RECORD_FAILURE.ledgerClosed);
  return closed ? new LedgerClosedError(closed.day) : err;
}

type Refused = { check: Check; details: LimitExceededDetails };

/** Today's use of one configured limit (an amount limit: one per currency it names). */
export interface LimitUsage {
  limit: LimitName;
  scope: 'user' | 'deployment';
  /** The user_ref asked about (scope user). */
  user_ref?: string;
  /** A count, or an amount in `unit`. */
  used: number;
  max: number;
  /** `count`, or the currency of an amount limit. */
  unit: string;
  /** The UTC day counted, YYYY-MM-DD. */
  day: string;
  /** When the day's count starts afresh (00:00 UTC), ISO 8601. */
  resets_at: string;
}

/** The day's totals of a ledger as its `totals` query answers them (counter -> decimal text); none yet: {}. */
type Totals = Record<string, string>;
type Reserved = { taken: string[]; units: LeasedUnit[]; refused?: Refused; failed?: unknown };
/** How long a client reserves per start after a ledger said it takes no lease (a worker of an older release). */
const LEASE_RETRY_AFTER_MS = 60_000;

export class DailyLimitLedgers {
  private readonly userKeys: Buffer[];
  private readonly records: KeyedRecords;
  private readonly quota: DeploymentQuota | undefined;
  private leasesRefusedAt = -Infinity;

  constructor(private readonly opts: DailyLimitsOptions) {
    this.userKeys = [...deriveKeys(opts.keys, 'limit_ledger').keys.values()];
    this.records = new KeyedRecords({
      client: opts.client,
      taskQueue: opts.taskQueue,
      guard: (fn, flowId) => opts.gate.guard(fn, flowId),
      availability: () => opts.gate.availability(),
      what: 'daily limit ledger',
      answerTimeoutMs: opts.answerTimeoutMs ?? DEFAULT_LIMIT_ANSWER_TIMEOUT_MS,
    });
    const block = opts.deploymentLeaseBlock;
    this.quota = block ? new DeploymentQuota(this.records, { block, ...(opts.deploymentLeaseReturnAfterMs !== undefined ? { returnAfterMs: opts.deploymentLeaseReturnAfterMs } : {}) }) : undefined;
  }

  /** Returns this process's unused leased units to the deployment's ledgers (a gateway closing). */
  async close(): Promise<void> {
    await this.quota?.returnAll().catch(() => undefined);
  }

  /** The ledgers, or undefined when no limit is set (a start then costs no call). */
  static of(opts: Omit<DailyLimitsOptions, 'limits'> & { limits?: DailyLimits }): DailyLimitLedgers | undefined {
    const { limits } = opts;
    return limits && Object.values(limits).some((v) => v !== undefined) ? new DailyLimitLedgers({ ...opts, limits }) : undefined;
  }

  /**
   * Runs `start` (which starts the flow `flowId` and answers its first view) once the flow is
   * reserved under every limit that applies; LimitExceededError or LimitUnavailableError, without
   * calling `start`, otherwise. A refused start whose flow exists already runs `start`, so that it
   * answers as the duplicate it is.
   */
  async around<V extends { state: string }>(kind: LedgerKind, flowId: string, req: LimitedStart, start: () => Promise<V>): Promise<V> {
    const day = utcDay(Date.now());
    const currency = (kind === 'swap' ? req.from_currency : req.currency) ?? '';
    const checks = this.checksFor(kind, req.user_ref, currency, day);
    if (checks.length === 0) return start();
    const holder = randomUUID();
    const base = { flow_id: flowId, holder, kind, currency, amount: hundredths(req.amount).toString() };
    const reserved = await this.reserve(checks, day, base);
    const giveBack = async (): Promise<void> => {
      for (const unit of reserved.units) unit.giveBack();
      await this.release(reserved.taken, flowId, holder);
    };
    if (reserved.refused) {
      await giveBack();
      if (await this.opts.gate.flowStatus(flowId)) return start();
      throw this.exceeded(kind, flowId, req, currency, reserved.refused);
    }
    if (reserved.failed !== undefined) {
      await giveBack();
      throw this.unavailable(flowId, reserved.failed);
    }
    let answer: V;
    try {
      answer = await start();
    } catch (err) {
      if (isAlreadyStarted(err)) await giveBack(); // not ours: it counted when it was started
      throw err;
    }
    if (answer.state === 'failed') await giveBack(); // refused at once by the provider: no money can move
    return answer;
  }

  /**
   * Today's use of each configured limit: the deployment's, and a user's when `userRef` is given
   * (the most any of the user's ledgers counts: through a key rotation a start counts in each).
   * Read by each ledger's `totals` query (a worker answers it: a ledger is a running workflow),
   * bounded as a reservation is; a ledger not started today counts nothing yet.
   */
  async usage(userRef?: string): Promise<LimitUsage[]> {
    const day = utcDay(Date.now());
    const limits = this.opts.limits as Partial<Record<LimitName, number | Readonly<Record<string, string>>>>;
    const read = async (id: string): Promise<Totals> => {
      try {
        return await this.records.within(id, () => this.opts.client.workflow.getHandle(id).query(limitTotalsQuery));
      } catch (err) {
        if (err instanceof WorkflowNotFoundError) return {};
        throw err;
      }
    };
    const scopes: Array<{ scope: 'user' | 'deployment'; ledgers: string[] }> = [{ scope: 'deployment', ledgers: [deploymentLedgerId(this.opts.taskQueue, day)] }];
    if (userRef !== undefined) scopes.push({ scope: 'user', ledgers: userLedgerIds(this.userKeys, userRef, day) });
    const out: LimitUsage[] = [];
    for (const { scope, ledgers } of scopes) {
      const names = (Object.keys(limits) as LimitName[]).filter((n) => limits[n] !== undefined && n.endsWith(`_per_${scope}_day`));
      if (names.length === 0) continue;
      const totals = await Promise.all(ledgers.map(read));
      const most = (key: string): bigint => totals.reduce((m, t) => (BigInt(t[key] ?? '0') > m ? BigInt(t[key] ?? '0') : m), 0n);
      const who = scope === 'user' ? { user_ref: userRef! } : {};
      for (const name of names) {
        const kind: LedgerKind = name.startsWith('swap_') ? 'swap' : 'payment_link';
        const base = { limit: name, scope, ...who, day, resets_at: endOfDay(day) };
        const value = limits[name]!;
        if (typeof value === 'number') out.push({ ...base, used: Number(most(`count:${kind}`)), max: value, unit: 'count' });
        else for (const [currency, max] of Object.entries(value)) {
          out.push({ ...base, used: Number(fromHundredths(most(`amount:${kind}:${currency}`).toString())), max: Number(max), unit: currency });
        }
      }
    }
    return out;
  }

  /** The limits set for this kind, by subject (a subject with none set is not asked). */
  private checksFor(kind: LedgerKind, userRef: string, currency: string, day: string): Check[] {
    const prefix = kind === 'swap' ? 'swap' : 'link';
    const limits = this.opts.limits as Partial<Record<LimitName, number | Readonly<Record<string, string>>>>;
    const checks: Check[] = [];
    for (const scope of ['user', 'deployment'] as const) {
      const countName = `${prefix}_count_per_${scope}_day` as LimitName;
      const amountName = `${prefix}_amount_per_${scope}_day` as LimitName;
      const count = limits[countName] as number | undefined;
      const amount = (limits[amountName] as Readonly<Record<string, string>> | undefined)?.[currency];
      if (count === undefined && amount === undefined) continue;
      checks.push({
        scope,
        ledgers: scope === 'user' ? userLedgerIds(this.userKeys, userRef, day) : [deploymentLedgerId(this.opts.taskQueue, day)],
        ...(count !== undefined ? { count: { name: countName, max: count } } : {}),
        ...(amount !== undefined ? { amount: { name: amountName, max: amount } } : {}),
      });
    }
    return checks;
  }

  /** Reserves in every ledger at once: those taken, the first refusal (the user's before the deployment's), a failure. */
  private async reserve(checks: Check[], day: string, base: Omit<LedgerReservation, 'count_limit' | 'amount_limit'>): Promise<Reserved> {
    const calls = checks.flatMap((check) => check.ledgers.map((id) => ({ id, check })));
    const answers = await Promise.allSettled(calls.map(({ id, check }) => this.reserveIn(id, check, day, base)));
    const out: Reserved = { taken: [], units: [] };
    answers.forEach((a, i) => {
      if (a.status === 'rejected') out.failed ??= a.reason ?? new Error('a limit ledger failed');
      else if (a.value === undefined) out.taken.push(calls[i]!.id);
      else if ('giveBack' in a.value) out.units.push(a.value);
      else out.refused ??= { check: calls[i]!.check, details: a.value };
    });
    return out;
  }

  /** A unit of a leased block (a deployment's count alone), or a reservation of the flow in the ledger. */
  private async reserveIn(id: string, check: Check, day: string, base: Omit<LedgerReservation, 'count_limit' | 'amount_limit'>): Promise<LimitExceededDetails | LeasedUnit | undefined> {
    const count = check.count ? { name: check.count.name, max: String(check.count.max) } : undefined;
    if (this.quota && check.scope === 'deployment' && count && !check.amount && Date.now() - this.leasesRefusedAt > LEASE_RETRY_AFTER_MS) {
      try {
        const a = await this.quota.take(id, day, base.kind, count, ledgerError);
        return 'unit' in a ? a.unit : a.refused;
      } catch (err) {
        if (!(err instanceof LeaseUnsupportedError)) throw err;
        this.leasesRefusedAt = Date.now();
      }
    }
    return this.reserveOne(id, day, {
      ...base,
      ...(count ? { count_limit: count } : {}),
      ...(check.amount ? { amount_limit: { name: check.amount.name, max: hundredths(check.amount.max).toString() } } : {}),
    });
  }

  /** undefined: reserved in the ledger of `day`; the refusal's details: refused. Throws when the ledger did not answer. */
  private async reserveOne(workflowId: string, day: string, r: LedgerReservation): Promise<LimitExceededDetails | undefined> {
    try {
      await this.records.updateWithStart(workflowId, limitReserveUpdate, [r], { workflowType: LIMIT_LEDGER_WORKFLOW_TYPE, args: [{ day }] });
      return undefined;
    } catch (err) {
      const exceeded = refusalOf(err, RECORD_FAILURE.limitExceeded);
      if (exceeded) return exceeded;
      throw ledgerError(err);
    }
  }

  /** Gives the reservation back in each ledger that took it. A give-back that fails leaves the flow counted (stricter, never looser). */
  private async release(ledgers: string[], flowId: string, holder: string): Promise<void> {
    await Promise.all(ledgers.map((id) => this.records.update(id, limitReleaseUpdate, [{ flow_id: flowId, holder }]).catch(() => undefined)));
  }

  /** The refusal as the start's error, from what the ledger said (the limit, its day, what is left). */
  private exceeded(kind: LedgerKind, flowId: string, req: LimitedStart, currency: string, refused: Refused): LimitExceededError {
    const { check, details } = refused;
    const who = check.scope === 'user' ? 'this user_ref' : 'this deployment';
    const noun = kind === 'swap' ? 'swaps' : 'payment links';
    if (details.measure === 'amount') {
      const why = `${req.amount} ${currency} would take ${who} past ${details.limit} (${fromHundredths(details.max)} ${currency} a UTC day, ${fromHundredths(details.remaining)} ${currency} left)`;
      return new LimitExceededError(details.limit, flowId, 'amount', endOfDay(details.day), why, details);
    }
    const why = `${who} has started the ${details.max} ${noun} ${details.limit} allows in a UTC day`;
    return new LimitExceededError(details.limit, flowId, check.scope === 'user' ? 'user_ref' : undefined, endOfDay(details.day), why, details);
  }

  /** Temporal or its persistence down as they are; anything else as LimitUnavailableError (fail closed). */
  private unavailable(flowId: string, err: unknown): unknown {
    if (err instanceof TemporalUnavailableError) return err;
    // Never the cause's own message: the start's caller reads "deadline exceeded" as a flow started.
    const why =
      err instanceof WorkerUnavailableError ? 'no worker answered for a limit ledger in time' : err instanceof LedgerClosedError ? err.message : `a limit ledger failed (${(err as Error | undefined)?.name ?? 'error'})`;
    return new LimitUnavailableError(flowId, this.opts.retryAfterSeconds ?? LIMIT_UNAVAILABLE_RETRY_AFTER_SECONDS, why);
  }
}
