/**
 * The provider guard seen from the client (gateway, CLI): new swaps and links are refused before
 * anything starts while their class is held (ProviderUnavailableError -> 503 provider_unavailable
 * with Retry-After), and operators read, pause and resume it. The reading is the process's one
 * GuardReader (temporal/provider-guard-reading.ts), read every second and shared with a worker in
 * the same process; here it fails open: a guard that does not answer in time lets the start go on: the workers' own reading holds every
 * money-moving call anyway (fail closed there), so nothing is sent that the guard would refuse.
 */
import type { WorkflowUpdateFailedError } from '@temporalio/client';
import type { UpdateDefinition } from '@temporalio/common';
import { type GuardView, type MoneyClass, PROVIDER_GUARD_WORKFLOW_TYPE, providerGuardWorkflowId, retryAfterSeconds } from '../../contract/provider-guard';
import { guardPauseUpdate, guardResumeUpdate } from '../../workflows/provider-guard';
import { GUARD_POLL_MS, GuardReader, lastGuardView } from '../../temporal/provider-guard-reading';
import { RECORD_FAILURE } from '../../workflows/record-failures';
import { InputError, WorkerUnavailableError } from './errors';
import { KeyedRecords, refusalOf } from './keyed-record';
import type { TemporalGate } from './health';
import { isDeadlineExceeded, isNoPoller } from './temporal-errors';

/** The provider may not be sent this kind of call now (paused, or its breaker open). -> 503 */
export class ProviderUnavailableError extends Error {
  override name = 'ProviderUnavailableError';
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super(message);
  }
}

/** How long an unwatched client's start waits for its reading. */
const READ_WAIT_MS = 1_000;
const QUERY_WAIT_MS = 2_000;
const ACT_WAIT_MS = 10_000;
/**
 * How long a pause waits before it answers: every worker reads the guard each second, so once the
 * pause answered no worker that reads it sends a money-moving call (one that cannot read it holds
 * them all after GUARD_FRESH_MS of not reading: temporal/provider-guard-link.ts).
 */
export const PAUSE_SETTLE_MS = 2_000;

export class ProviderGuardClient {
  /** The process's one reader of the guard (shared with a worker's link in the same process). */
  private readonly reader: GuardReader;
  /** Its writes (pause, resume): update-with-start on the guard's id, bounded and classified as every keyed record's. */
  private readonly records: KeyedRecords;

  constructor(
    private readonly gate: TemporalGate,
    private readonly taskQueue: string,
  ) {
    this.reader = GuardReader.of(gate.temporal.options.namespace, this.workflowId);
    this.records = new KeyedRecords({
      client: gate.temporal,
      taskQueue,
      guard: (fn, flowId) => gate.guard(fn, flowId),
      availability: () => gate.availability(),
      what: 'provider guard',
      answerTimeoutMs: ACT_WAIT_MS,
    });
  }

  get workflowId(): string {
    return providerGuardWorkflowId(this.taskQueue);
  }

  /**
   * Keeps the reading fresh (every second, through the process's one reader) so that a start never
   * waits for it: what a long-lived process (the gateway) does. Answers the function that stops it
   * (await it before closing the connection: it waits for a reading in flight).
   */
  watch(): () => Promise<void> {
    return this.reader.subscribe({ client: this.gate.temporal });
  }

  /**
   * Refuses (ProviderUnavailableError) a start of `cls` the guard holds; nothing is started. `key`
   * is the flow about to start (its workflow id): while the class's breaker is half-open and its
   * GET succeeded, the first start to claim the trial goes on (its first provider call is the trial).
   * Fails open: with no fresh reading the start goes on (the workers hold what the guard refuses).
   * Answers whether this call claimed the trial: the caller gives it back (`releaseTrial`) when its
   * start then starts nothing, so a refused or duplicate start never holds the class for a trial
   * that will not come (the claim would last until its `until`, then count as failed and open the
   * breaker again for a whole cool-down).
   */
  async admit(cls: MoneyClass, what: string, key?: string): Promise<boolean> {
    // Unwatched (a short-lived client): read it now, waiting at most READ_WAIT_MS.
    if (!this.reader.watched && !this.reader.readWithin(GUARD_POLL_MS)) await this.reader.readOnce(this.gate.temporal, READ_WAIT_MS);
    const claimed = key !== undefined && (await this.reader.claimTrial(this.gate.temporal, cls, key, QUERY_WAIT_MS).catch(() => false)); // unclaimed: refused as half-open
    const view = this.reader.current();
    const reason = this.reader.holdReason(cls, key, 'fail-open');
    if (view && reason) throw new ProviderUnavailableError(`no ${what} is started: ${reason}`, retryAfterSeconds(view, cls, Date.now()));
    return claimed;
  }

  /**
   * Gives back the trial `key` claimed in `admit` and will not use, bounded; never throws (a claim
   * not given back ends at its `until`, as before this existed).
   */
  async releaseTrial(cls: MoneyClass, key: string): Promise<void> {
    await this.reader.releaseTrial(this.gate.temporal, cls, key, QUERY_WAIT_MS).catch(() => undefined);
  }

  /**
   * The guard as it last kept it (undefined: none yet, nothing paused or open): its memo, read by
   * describe, so it answers with every worker stopped. WorkerUnavailableError only for a guard
   * that keeps no memo yet (queried) when no worker answers.
   */
  async status(): Promise<GuardView | undefined> {
    try {
      return await this.gate.guard(() => lastGuardView(this.gate.temporal, this.workflowId, ACT_WAIT_MS));
    } catch (err) {
      if (isDeadlineExceeded(err) || isNoPoller(err)) throw new WorkerUnavailableError('provider guard', this.workflowId, ACT_WAIT_MS, undefined);
      throw err;
    }
  }

  /** Pauses every money-moving call deployment-wide; `by` is the identity recorded (an API key's id). */
  async pause(by: string, reason: string): Promise<GuardView> {
    const view = await this.act(guardPauseUpdate, [{ by, reason }]);
    await new Promise((r) => setTimeout(r, PAUSE_SETTLE_MS));
    return view;
  }

  resume(by: string): Promise<GuardView> {
    return this.act(guardResumeUpdate, [{ by }]);
  }

  /** An operator's action: an update of the guard, starting it first when none runs (a keyed record's write). */
  private async act<Args extends [unknown, ...unknown[]]>(update: UpdateDefinition<GuardView, Args>, args: Args): Promise<GuardView> {
    try {
      const view = await this.records.updateWithStart(this.workflowId, update, args, { workflowType: PROVIDER_GUARD_WORKFLOW_TYPE, args: [{}] });
      this.reader.take(view); // this process's starts (and a worker's calls in it) obey it at once
      return view;
    } catch (err) {
      // The guard's validator refused the argument (nothing recorded): the field it names, by the failure's type.
      const refused = refusalOf(err, RECORD_FAILURE.invalidInput);
      if (refused) throw new InputError((err as WorkflowUpdateFailedError).cause?.message ?? `${refused.field}: refused by the provider guard`, refused.field);
      throw err;
    }
  }
}
