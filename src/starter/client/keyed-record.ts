/**
 * "A keyed record kept in Temporal": one small workflow per subject (an Idempotency-Key, a
 * user's wrong-PIN budget) that every gateway meets by id, so processes that share nothing but
 * Temporal agree on it. The one place that knows how to reach such a record:
 *
 *  - its id, from a purpose prefix and the subject, which never appears in Temporal itself
 *    (recordId.hashed for subjects unguessable on their own, recordId.keyed under a derived key
 *    for guessable ones such as a user_ref);
 *  - update-with-start (the first caller starts it, every later one meets the same run; once a
 *    run ended the id may start again);
 *  - a record's refusal, by its failure type and details (refusalOf);
 *  - one bounded wait per call, and one classification of what did not answer: the Temporal
 *    frontend (TemporalUnavailableError), its persistence (TemporalPersistenceUnavailableError)
 *    or no worker within the wait (WorkerUnavailableError naming the record).
 */
import { createHash, createHmac } from 'node:crypto';
import { type Client, WithStartWorkflowOperation, WorkflowUpdateFailedError } from '@temporalio/client';
import type { SearchAttributePair, UpdateDefinition } from '@temporalio/common';
import { type RecordFailureDetails, type RecordFailureType, refusalDetails } from '../../workflows/record-failures';
import { TemporalPersistenceUnavailableError, TemporalUnavailableError, WorkerUnavailableError } from './errors';
import { type TemporalAvailability, within } from './health';
import { isDeadlineExceeded, isPersistenceUnavailable, isTemporalUnavailable } from './temporal-errors';

/** A record's workflow id: `<prefix>-<digest of the subject>`. */
export const recordId = {
  /** SHA-256 of the parts (one per line): for a subject that is a secret of its caller (an Idempotency-Key). */
  hashed: (prefix: string, ...parts: string[]): string => `${prefix}-${createHash('sha256').update(parts.join('\n')).digest('hex')}`,
  /** HMAC-SHA256 under a derived key (160 bits of it): for a guessable subject, such as a user_ref. */
  keyed: (prefix: string, key: Buffer, subject: string): string => `${prefix}-${createHmac('sha256', key).update(subject).digest('hex').slice(0, 40)}`,
};

/**
 * The details of a record's refusal of `type` (workflows/record-failures.ts): an update its
 * validator or handler refused with that failure type. undefined for anything else (another
 * refusal, a record that did not answer). Read from the failure's type and details, never its text.
 */
export function refusalOf<T extends RecordFailureType>(err: unknown, type: T): RecordFailureDetails[T] | undefined {
  return err instanceof WorkflowUpdateFailedError ? refusalDetails(err.cause, type) : undefined;
}

export interface KeyedRecordsOptions {
  client: Client;
  taskQueue: string;
  /** What the records are, in errors: 'PIN budget', 'idempotency record'. */
  what: string;
  /** How long a call waits for a worker's answer. */
  answerTimeoutMs: number;
  /**
   * Runs each call bounded by the client's TemporalGate (health.ts): Temporal or its persistence
   * down is TemporalUnavailableError within seconds, not a WorkerUnavailableError at the deadline.
   */
  guard?: <T>(fn: () => Promise<T>, flowId?: string) => Promise<T>;
  /** Whether Temporal and its database answer (health.ts): a call cut by its deadline is then their outage, not a missing worker. */
  availability?: () => Promise<TemporalAvailability>;
}

/** How long past its deadline a record's call is still waited for (the SDK ends it at the deadline). */
export const OVERDUE_MARGIN_MS = 3_000;

/** A record's call still unsettled OVERDUE_MARGIN_MS after its deadline. */
class CallOverdue extends Error {}
const OVERDUE = Symbol('overdue');

/** `p`, or CallOverdue once `ms` passed (health.ts's `within`: the timer never holds the process). */
async function settledWithin<T>(p: Promise<T>, ms: number): Promise<T> {
  const answer = await within<T | typeof OVERDUE>(p, ms, OVERDUE);
  if (answer === OVERDUE) throw new CallOverdue(`no answer ${ms} ms after the call was sent`);
  return answer;
}

/** How a record's workflow is started when the update finds none running. */
export interface RecordStart {
  workflowType: string;
  args: unknown[];
  typedSearchAttributes?: SearchAttributePair[];
}

export class KeyedRecords {
  constructor(private readonly opts: KeyedRecordsOptions) {}

  get client(): Client {
    return this.opts.client;
  }

  /** Runs `update` on the record, starting its workflow first when none runs under `workflowId`. */
  updateWithStart<Ret, Args extends [unknown, ...unknown[]]>(workflowId: string, update: UpdateDefinition<Ret, Args>, args: Args, start: RecordStart): Promise<Ret> {
    const startWorkflowOperation = new WithStartWorkflowOperation(start.workflowType, {
      workflowId,
      taskQueue: this.opts.taskQueue,
      args: start.args,
      ...(start.typedSearchAttributes ? { typedSearchAttributes: start.typedSearchAttributes } : {}),
      // The first caller starts the record; every later one (any gateway) meets the same run.
      workflowIdConflictPolicy: 'USE_EXISTING',
      // Once a record's run ended, its id may start a new one.
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
    });
    return this.within(workflowId, () => this.opts.client.workflow.executeUpdateWithStart(update, { args, startWorkflowOperation }));
  }

  /** Runs `update` on the running record. */
  update<Ret, Args extends [unknown, ...unknown[]]>(workflowId: string, update: UpdateDefinition<Ret, Args>, args: Args): Promise<Ret> {
    return this.within(workflowId, () => this.opts.client.workflow.getHandle(workflowId).executeUpdate(update, { args }));
  }

  /**
   * Any other call about a record (a describe, a count), with the same bound and classification.
   * The bound is the client's deadline, and a timer OVERDUE_MARGIN_MS past it: a call that has
   * not settled by then (seen once, a take sent as a gateway stopped) is not waited for any more.
   */
  async within<T>(workflowId: string, fn: () => Promise<T>): Promise<T> {
    const waitMs = this.opts.answerTimeoutMs;
    const guard = this.opts.guard ?? (<R>(f: () => Promise<R>) => f());
    try {
      return await guard(() => settledWithin(this.opts.client.withDeadline(Date.now() + waitMs, fn), waitMs + OVERDUE_MARGIN_MS));
    } catch (err) {
      throw await this.classify(err, workflowId, waitMs);
    }
  }

  /** What did not answer, as one of our errors; other errors as they are. */
  private async classify(err: unknown, workflowId: string, waitMs: number): Promise<unknown> {
    if (err instanceof TemporalUnavailableError) return err;
    if (isPersistenceUnavailable(err)) return new TemporalPersistenceUnavailableError();
    if (isTemporalUnavailable(err)) return new TemporalUnavailableError();
    if (!isDeadlineExceeded(err) && !(err instanceof CallOverdue)) return err;
    const availability = this.opts.availability ? await this.opts.availability() : 'ok';
    if (availability === 'frontend_unavailable') return new TemporalUnavailableError();
    if (availability === 'persistence_unavailable') return new TemporalPersistenceUnavailableError();
    return new WorkerUnavailableError(this.opts.what, workflowId, waitMs, undefined);
  }
}
