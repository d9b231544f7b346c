/**
 * The provider guard seen from the client (gateway, CLI): new swaps and links are refused before
 * anything starts while their class is held (ProviderUnavailableError -> 503 provider_unavailable
 * with Retry-After), and operators read, pause and resume it. The reading is cached for a second;
 * a guard that does not answer in time lets the start go on: the workers' own reading holds every
 * money-moving call anyway (fail closed there), so nothing is sent that the guard would refuse.
 */
import { WithStartWorkflowOperation, WorkflowNotFoundError } from '@temporalio/client';
import {
  type GuardView,
  holdReason,
  type MoneyClass,
  PROVIDER_GUARD_WORKFLOW_TYPE,
  providerGuardWorkflowId,
  retryAfterSeconds,
  trialClaimable,
} from '../../contract/provider-guard';
import { guardPauseUpdate, guardResumeUpdate } from '../../workflows/provider-guard';
import { claimGuardTrial, lastGuardView, readGuard } from '../../temporal/provider-guard-reading';
import { WorkerUnavailableError } from './errors';
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

/** A watching client reads the guard this often. */
const READ_EVERY_MS = 1_000;
/** A reading older than this is not used: the start goes on, and the workers hold what the guard refuses. */
const FRESH_MS = 5_000;
/** How long an unwatched client's start waits for its reading. */
const READ_WAIT_MS = 1_000;
const QUERY_WAIT_MS = 2_000;
const ACT_WAIT_MS = 10_000;
/**
 * How long a pause waits before it answers: every worker reads the guard each second, so once the
 * pause answered no worker that reads it sends a money-moving call (one that cannot read it holds
 * them all after STALE_MS of not reading: temporal/provider-guard-link.ts).
 */
export const PAUSE_SETTLE_MS = 2_000;

export class ProviderGuardClient {
  /** The last reading (null: there is no guard yet, so nothing is paused or open) and when it was taken. */
  private view: GuardView | null | undefined;
  private readAt = 0;
  private inflight: Promise<void> | undefined;
  private watching: NodeJS.Timeout | undefined;

  constructor(
    private readonly gate: TemporalGate,
    private readonly taskQueue: string,
  ) {}

  get workflowId(): string {
    return providerGuardWorkflowId(this.taskQueue);
  }

  /**
   * Keeps the reading fresh (every READ_EVERY_MS) so that a start never waits for it: what a
   * long-lived process (the gateway) does. Answers the function that stops it (await it before closing the connection).
   */
  watch(): () => Promise<void> {
    clearInterval(this.watching);
    void this.refresh();
    const timer = setInterval(() => void this.refresh(), READ_EVERY_MS).unref();
    this.watching = timer;
    // Stopping waits for a reading in flight (at most QUERY_WAIT_MS): the connection may be closed
    // next, and a call the gRPC retry interceptor would retry on a closed channel throws uncaught.
    return async () => {
      clearInterval(timer);
      if (this.watching === timer) this.watching = undefined;
      await this.inflight;
    };
  }

  /**
   * Refuses (ProviderUnavailableError) a start of `cls` the guard holds; nothing is started. `key`
   * is the flow about to start (its workflow id): while the class's breaker is half-open and its
   * GET succeeded, the first start to claim the trial goes on (its first provider call is the trial).
   */
  async admit(cls: MoneyClass, what: string, key?: string): Promise<void> {
    // Unwatched (a short-lived client): read it now, waiting at most READ_WAIT_MS.
    if (!this.watching && Date.now() - this.readAt > READ_EVERY_MS) await Promise.race([this.refresh(), new Promise((r) => setTimeout(r, READ_WAIT_MS).unref())]);
    let view = Date.now() - this.readAt <= FRESH_MS ? this.view : undefined;
    if (view && key !== undefined && trialClaimable(view, cls)) view = await this.claimTrial(cls, key, view);
    const reason = view ? holdReason(view, cls, key) : undefined;
    if (view && reason) throw new ProviderUnavailableError(`no ${what} is started: ${reason}`, retryAfterSeconds(view, cls, Date.now()));
  }

  /** Claims a half-open class's trial for `key` (bounded); the guard's answer, or `view` unchanged when it did not answer. */
  private async claimTrial(cls: MoneyClass, key: string, view: GuardView): Promise<GuardView> {
    try {
      const claim = await claimGuardTrial(this.gate.temporal, this.workflowId, cls, key, QUERY_WAIT_MS);
      [this.view, this.readAt] = [claim.view, Date.now()];
      return claim.view;
    } catch {
      return view; // unclaimed: refused as half-open
    }
  }

  private refresh(): Promise<void> {
    // Inside a promise: a closed connection throws at once, and from a timer that would be uncaught.
    this.inflight ??= Promise.resolve()
      .then(() => readGuard(this.gate.temporal, this.workflowId, QUERY_WAIT_MS))
      .then(
        (view) => {
          this.view = view;
          this.readAt = Date.now();
        },
        (err: unknown) => {
          if (err instanceof WorkflowNotFoundError) {
            this.view = null;
            this.readAt = Date.now();
          }
          // Otherwise the reading ages: past FRESH_MS starts go on, and the workers (which read it themselves, failing closed) hold their calls.
        },
      )
      .finally(() => {
        this.inflight = undefined;
      });
    return this.inflight;
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
    const view = await this.act(guardPauseUpdate, { by, reason });
    await new Promise((r) => setTimeout(r, PAUSE_SETTLE_MS));
    return view;
  }

  resume(by: string): Promise<GuardView> {
    return this.act(guardResumeUpdate, { by });
  }

  private async act<A>(update: typeof guardPauseUpdate | typeof guardResumeUpdate, args: A): Promise<GuardView> {
    const startWorkflowOperation = new WithStartWorkflowOperation(PROVIDER_GUARD_WORKFLOW_TYPE, {
      workflowId: this.workflowId,
      taskQueue: this.taskQueue,
      args: [{}],
      workflowIdConflictPolicy: 'USE_EXISTING',
    });
    try {
      const view = await this.gate.guard(() =>
        this.gate.temporal.withDeadline(Date.now() + ACT_WAIT_MS, () =>
          this.gate.temporal.workflow.executeUpdateWithStart(update as typeof guardPauseUpdate, { args: [args as { by: string; reason: string }], startWorkflowOperation }),
        ),
      );
      [this.view, this.readAt] = [view, Date.now()]; // this process's starts obey it at once
      return view;
    } catch (err) {
      if (isDeadlineExceeded(err) || isNoPoller(err)) throw new WorkerUnavailableError('provider guard', this.workflowId, ACT_WAIT_MS, undefined);
      throw err;
    }
  }
}
