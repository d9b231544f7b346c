/**
 * Why a keyed record (the daily limit ledger, the wrong-PIN budget, the idempotency record, the
 * provider guard) refused an update, as Temporal carries it: an ApplicationFailure whose `type` says what
 * happened and whose `details[0]` holds the data the client needs (the limit, its day, what is
 * left; the seconds to wait). Thrown by an update's validator, it reaches the client as the
 * `cause` of a WorkflowUpdateFailedError with its type and details intact; the client reads
 * them with `refusalOf` (starter/client/keyed-record.ts), never from the message.
 *
 * Workflow-safe (only @temporalio/common): shared by the workflows and the client.
 */
import { ApplicationFailure } from '@temporalio/common';

/** The failure types of the keyed records. */
export const RECORD_FAILURE = {
  /** A reservation would take a count or an amount past a daily limit: LimitExceededDetails. */
  limitExceeded: 'LimitExceeded',
  /** A reservation outside the ledger's day (give or take the clock skew it allows): LedgerClosedDetails. */
  ledgerClosed: 'LedgerClosed',
  /** The user's wrong-PIN budget is spent: PinBudgetExhaustedDetails. */
  pinBudgetExhausted: 'PinBudgetExhausted',
  /** An update's argument is not what the record (or the provider guard) takes: InvalidRecordInputDetails. */
  invalidInput: 'InvalidRecordInput',
  /** An update names an entry the record does not hold (a webhook endpoint's id): EntryNotFoundDetails. */
  entryNotFound: 'RecordEntryNotFound',
  /** An update the record's state forbids (one API key too many, a revoked key rotated): RecordConflictDetails. */
  conflict: 'RecordConflict',
} as const;

export type RecordFailureType = (typeof RECORD_FAILURE)[keyof typeof RECORD_FAILURE];

export interface LimitExceededDetails {
  /** The limit's name (LIMIT_* in the configuration): `swap_amount_per_user_day`… */
  limit: string;
  /** The UTC day the ledger counts, YYYY-MM-DD. */
  day: string;
  /** What it limits: the number of flows, or their amount (hundredths, in the reservation's currency). */
  measure: 'count' | 'amount';
  /** The limit, as decimal text (a count, or hundredths). */
  max: string;
  /** What the day has counted so far, as decimal text. */
  used: string;
  /** What the reservation asked for (1, or its amount in hundredths), as decimal text. */
  requested: string;
  /** What is left of the limit today (max - used, never below 0), as decimal text. */
  remaining: string;
}

export interface LedgerClosedDetails {
  /** The UTC day the ledger counts, YYYY-MM-DD. */
  day: string;
  /** The first and the last instant it takes reservations, ISO 8601. */
  opens_at: string;
  closes_at: string;
}

export interface PinBudgetExhaustedDetails {
  /** Seconds until a slot frees (at least 1). */
  retry_after_seconds: number;
  /** The budget: wrong PINs (and PINs in flight) allowed in its window. */
  max: number;
}

export interface InvalidRecordInputDetails {
  /** The argument's field at fault. */
  field: string;
}

export interface EntryNotFoundDetails {
  /** The id asked for. */
  id: string;
}

export interface RecordConflictDetails {
  /** The entry it is about, when there is one. */
  id?: string;
}

export interface RecordFailureDetails {
  LimitExceeded: LimitExceededDetails;
  LedgerClosed: LedgerClosedDetails;
  PinBudgetExhausted: PinBudgetExhaustedDetails;
  InvalidRecordInput: InvalidRecordInputDetails;
  RecordEntryNotFound: EntryNotFoundDetails;
  RecordConflict: RecordConflictDetails;
}

/**
 * The failure a record throws to refuse an update. `message` is for people (and, for the ledger
 * and the budget, the text older clients read during a rolling upgrade); the client reads `type`
 * and `details`.
 */
export function recordRefusal<T extends RecordFailureType>(type: T, message: string, details: RecordFailureDetails[T]): ApplicationFailure {
  return ApplicationFailure.create({ type, message, details: [details], nonRetryable: true });
}

/** The details of `failure` when it is a record's refusal of `type`; undefined otherwise. */
export function refusalDetails<T extends RecordFailureType>(failure: unknown, type: T): RecordFailureDetails[T] | undefined {
  if (!(failure instanceof ApplicationFailure) || failure.type !== type) return undefined;
  return failure.details?.[0] as RecordFailureDetails[T] | undefined;
}
