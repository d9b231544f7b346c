/**
 * One reading of the deployment's provider guard (workflows/provider-guard.ts), as workers
 * (provider-guard-link.ts) and gateways (starter/client/provider-guard.ts) take it, and their
 * claim of a half-open breaker's trial call (claimGuardTrial). The reading is the view the guard
 * keeps in its memo, by a describe, which the server answers with no worker: a killed worker no
 * longer leaves every reader without a reading while the guard's workflow task moves to another.
 * It is trusted unless the guard's workflow task is failing (attempt 2 or more: a nondeterminism
 * error, say) or has waited more than GUARD_TASK_STALE_MS for a worker: outcomes and pauses sent
 * to it then wait unprocessed, so its memo may be behind (fail closed). A guard that keeps no memo
 * yet (started before mpf-guard-memo-v1) is queried instead. An operator's status takes the memo
 * as it is (lastGuardView): the last view, even while no worker runs.
 */
import { type Client, WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import type { google } from '@temporalio/proto';
import {
  closedGuardView,
  DEFAULT_BREAKER,
  GUARD_MEMO_KEY,
  GUARD_TASK_STALE_MS,
  type GuardView,
  holdReason,
  type MoneyClass,
  type TrialClaim,
  trialClaimable,
} from '../contract/provider-guard';
import { guardClaimTrialUpdate, guardQuery, guardReleaseTrialUpdate } from '../workflows/provider-guard';
import { RECORD_FAILURE, refusalDetails } from '../workflows/record-failures';

/** The guard's run is closed (terminated, failed): nobody decides for it until it is started again. */
export class GuardClosedError extends Error {
  override name = 'GuardClosedError';
}

/** The guard's workflow task has waited too long for a worker: its view may lag what was reported to it. */
export class GuardStalledError extends Error {
  override name = 'GuardStalledError';
}

type Timestamp = google.protobuf.ITimestamp;

/** A protobuf timestamp in epoch milliseconds (undefined when absent). */
function timestampMs(ts: Timestamp | null | undefined): number | undefined {
  if (!ts || ts.seconds === null || ts.seconds === undefined) return undefined;
  return Number(ts.seconds) * 1000 + Math.floor((ts.nanos ?? 0) / 1_000_000);
}

/** What the guard's pending workflow task (if any) shows of a guard not deciding: undefined when it is fine. */
export function guardStall(pending: { scheduledTime?: Timestamp | null; originalScheduledTime?: Timestamp | null; attempt?: number | null } | null | undefined, now: number): string | undefined {
  if (!pending) return undefined;
  // A failed or timed-out task is retried with attempt + 1 and a new scheduled time: a task failing
  // in a loop (a nondeterminism error) never grows old, so its attempt is what tells.
  if ((pending.attempt ?? 1) >= 2) return `has a workflow task failing or timing out (attempt ${pending.attempt})`;
  const since = timestampMs(pending.originalScheduledTime ?? pending.scheduledTime);
  if (since !== undefined && now - since > GUARD_TASK_STALE_MS) return `has waited ${Math.round((now - since) / 1000)} s for a worker`;
  return undefined;
}

/**
 * The guard's view. Throws WorkflowNotFoundError (no guard yet), GuardClosedError, GuardStalledError,
 * or what the describe or query threw (deadline, connection).
 */
export async function readGuard(client: Client, workflowId: string, deadlineMs: number): Promise<GuardView> {
  const handle = client.workflow.getHandle(workflowId);
  const desc = await client.withDeadline(Date.now() + deadlineMs, () => handle.describe());
  if (desc.status.name !== 'RUNNING') throw new GuardClosedError(`the provider guard ${workflowId} is ${desc.status.name.toLowerCase()}`);
  const stalled = guardStall(desc.raw.pendingWorkflowTask, Date.now());
  if (stalled) throw new GuardStalledError(`the provider guard ${workflowId} ${stalled}`);
  const view = desc.memo?.[GUARD_MEMO_KEY] as GuardView | undefined;
  if (view) return view;
  return client.withDeadline(Date.now() + deadlineMs, () => handle.query(guardQuery));
}

/**
 * The guard's view as it last kept it, for an operator (status): its memo, by describe, whether
 * its run is open, closed or waiting for a worker: the server answers it with every worker
 * stopped. undefined when there is no guard yet; a guard that keeps no memo yet is queried.
 */
export async function lastGuardView(client: Client, workflowId: string, deadlineMs: number): Promise<GuardView | undefined> {
  const handle = client.workflow.getHandle(workflowId);
  try {
    const desc = await client.withDeadline(Date.now() + deadlineMs, () => handle.describe());
    const view = desc.memo?.[GUARD_MEMO_KEY] as GuardView | undefined;
    if (view) return view;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return undefined;
    throw err;
  }
  return client.withDeadline(Date.now() + deadlineMs, () => handle.query(guardQuery));
}

/** The guard refused a claim's argument (its update validator: nothing recorded); `field` names it. */
export class GuardClaimRefusedError extends Error {
  override name = 'GuardClaimRefusedError';
  constructor(
    message: string,
    readonly field: string,
  ) {
    super(message);
  }
}

/**
 * Claims a half-open class's trial call for the flow `key` (the `claimTrial` update, bounded): the
 * guard's answer, granted or not, with its view. Workers claim it for a held call, gateways for a
 * start. An argument the guard refuses is GuardClaimRefusedError, read from the failure's type.
 */
export async function claimGuardTrial(client: Client, workflowId: string, cls: MoneyClass, key: string, deadlineMs: number): Promise<TrialClaim> {
  try {
    return await client.withDeadline(Date.now() + deadlineMs, () => client.workflow.getHandle(workflowId).executeUpdate(guardClaimTrialUpdate, { args: [{ cls, key }] }));
  } catch (err) {
    const refused = err instanceof WorkflowUpdateFailedError ? refusalDetails(err.cause, RECORD_FAILURE.invalidInput) : undefined;
    if (refused) throw new GuardClaimRefusedError(`the provider guard refused the trial claim (${(err as WorkflowUpdateFailedError).cause?.message ?? refused.field})`, refused.field);
    throw err;
  }
}

/**
 * Gives back the trial the flow `key` claimed and will not use (the `releaseTrial` update, bounded):
 * the guard's answer with its view. A guard of a release before this update refuses it; the claim
 * then ends at its `until`, as a claim whose call never came always did.
 */
export async function releaseGuardTrial(client: Client, workflowId: string, cls: MoneyClass, key: string, deadlineMs: number): Promise<TrialClaim> {
  return client.withDeadline(Date.now() + deadlineMs, () => client.workflow.getHandle(workflowId).executeUpdate(guardReleaseTrialUpdate, { args: [{ cls, key }] }));
}

/** Who reads through a GuardReader, and what it does around each reading. */
export interface GuardSubscriber {
  /** The client this subscriber's process reads with (its owner keeps it open while subscribed). */
  client: Client;
  /** Runs before each polled reading (a worker reports its outcomes first). */
  beforeRead?: () => Promise<void>;
  /** Told each reading, and undefined when the reading went stale (metrics). */
  onView?: (view: GuardView | undefined) => void;
  /** Told when the guard is missing or closed: a worker starts it. */
  onMissing?: () => Promise<void>;
}

/**
 * What a caller does with no fresh reading: a worker holds every money-moving call (fail closed);
 * a start goes on (fail open), because the workers' own reading holds what the guard refuses.
 */
export type GuardPolicy = 'fail-closed' | 'fail-open';

/** How often the guard is read, and how long a reading is trusted. */
export const GUARD_POLL_MS = 1_000;
export const GUARD_FRESH_MS = 5_000;
/** How long one reading (a describe) may take. */
const READ_DEADLINE_MS = 3_000;

/**
 * The one reader of a deployment's provider guard in a process: one poll (every GUARD_POLL_MS,
 * while anyone subscribes) shared by the worker's link (fail closed) and the client's starts
 * (fail open), so a process with both (the demo, a test stack) reads once. A reading is fresh for
 * GUARD_FRESH_MS; the guard's absence is a reading too (nothing paused, every breaker closed).
 */
export class GuardReader {
  private static readonly shared = new Map<string, GuardReader>();

  /** The process's reader of `workflowId` in `namespace`. */
  static of(namespace: string, workflowId: string): GuardReader {
    const key = `${namespace}/${workflowId}`;
    let reader = GuardReader.shared.get(key);
    if (!reader) GuardReader.shared.set(key, (reader = new GuardReader(workflowId)));
    return reader;
  }

  private view: GuardView | undefined;
  private readAt = 0;
  private lastError = 'not read yet';
  private readonly subscribers: GuardSubscriber[] = [];
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;
  private inflight: Promise<void> | undefined;
  private generation = 0;

  private constructor(readonly workflowId: string) {}

  /** Subscribes (starting the poll if it is the first); answers the unsubscribe, which awaits a poll in flight. */
  subscribe(s: GuardSubscriber): () => Promise<void> {
    this.subscribers.push(s);
    if (this.subscribers.length === 1) this.schedule();
    return async () => {
      const i = this.subscribers.indexOf(s);
      if (i >= 0) this.subscribers.splice(i, 1);
      if (this.subscribers.length === 0) clearTimeout(this.timer);
      await this.polling?.catch(() => undefined);
    };
  }

  get watched(): boolean {
    return this.subscribers.length > 0;
  }

  /** Starts the one poll (a new generation: a poll of an earlier one still in flight ends there). */
  private schedule(): void {
    clearTimeout(this.timer);
    const generation = ++this.generation;
    const loop = (): void => {
      if (!this.watched || generation !== this.generation) return;
      this.polling = this.tick().finally(() => {
        if (this.watched && generation === this.generation) this.timer = setTimeout(loop, GUARD_POLL_MS).unref();
      });
    };
    this.timer = setTimeout(loop, 0).unref();
  }

  private async tick(): Promise<void> {
    for (const s of [...this.subscribers]) await s.beforeRead?.().catch(() => undefined);
    await this.refresh();
  }

  /** The last reading when fresh; undefined otherwise. */
  current(): GuardView | undefined {
    return Date.now() - this.readAt <= GUARD_FRESH_MS ? this.view : undefined;
  }

  /** Whether a reading was taken in the last `ms`. */
  readWithin(ms: number): boolean {
    return Date.now() - this.readAt <= ms;
  }

  /**
   * Why `key`'s call of `cls` may not go on now, under `policy` (undefined: it may). With no fresh
   * reading a fail-closed caller is held and told why; a fail-open one goes on.
   */
  holdReason(cls: MoneyClass, key: string | undefined, policy: GuardPolicy): string | undefined {
    const view = this.current();
    if (view) return holdReason(view, cls, key);
    if (policy === 'fail-open') return undefined;
    const since = this.readAt === 0 ? 'has not been read yet' : `has not answered for ${Math.round((Date.now() - this.readAt) / 1000)} s`;
    return `the provider guard ${this.workflowId} ${since} (${this.lastError}): held until it answers`;
  }

  /**
   * Claims a half-open class's trial for `key` when it is claimable (bounded): the guard's answer
   * becomes the reading at once (every held caller in this process sees it claimed). Throws what
   * the update threw.
   */
  async claimTrial(client: Client, cls: MoneyClass, key: string, deadlineMs: number): Promise<boolean> {
    const view = this.current();
    if (!view || !trialClaimable(view, cls)) return false;
    const claim = await claimGuardTrial(client, this.workflowId, cls, key, deadlineMs);
    this.take(claim.view);
    return claim.granted;
  }

  /** Gives back the trial `key` claimed (bounded); the guard's answer becomes the reading at once. */
  async releaseTrial(client: Client, cls: MoneyClass, key: string, deadlineMs: number): Promise<void> {
    const answer = await releaseGuardTrial(client, this.workflowId, cls, key, deadlineMs);
    this.take(answer.view);
  }

  /** Takes a view the guard answered (an operator's action, a claim) as the reading. */
  take(view: GuardView): void {
    [this.view, this.readAt] = [view, Date.now()];
    this.tell(view);
  }

  noteError(err: unknown): string {
    this.lastError = err instanceof Error ? err.message.slice(0, 200) : String(err);
    return this.lastError;
  }

  /** Reads now, joining a reading in flight. */
  refresh(): Promise<void> {
    // Inside a promise: a closed connection throws at once, and from a timer that would be uncaught.
    this.inflight ??= Promise.resolve()
      .then(() => this.read())
      .finally(() => {
        this.inflight = undefined;
      });
    return this.inflight;
  }

  /** Reads now (a new reading, not joining one in flight: a worker's report was just sent). */
  async read(): Promise<void> {
    const client = this.subscribers.at(-1)?.client ?? this.lender;
    if (!client) return;
    try {
      this.take(await readGuard(client, this.workflowId, READ_DEADLINE_MS));
    } catch (err) {
      this.noteError(err);
      if (err instanceof WorkflowNotFoundError) {
        // No guard at all: nobody ever paused (a pause starts it) and no breaker ever opened. That
        // is a reading too, so a new deployment's first calls are not held; then it is started.
        this.take(closedGuardView(DEFAULT_BREAKER, Date.now()));
        await this.missing();
        return;
      }
      if (!this.current()) this.tell(undefined);
      if (err instanceof GuardClosedError) await this.missing();
    }
  }

  /** The client an unsubscribed caller (a short-lived client's start) lends for one reading. */
  private lender: Client | undefined;

  /** One reading with `client`, for a caller that does not subscribe; waits at most `waitMs`. */
  async readOnce(client: Client, waitMs: number): Promise<void> {
    this.lender = client;
    await Promise.race([this.refresh(), new Promise((r) => setTimeout(r, waitMs).unref())]);
  }

  private async missing(): Promise<void> {
    for (const s of [...this.subscribers]) await s.onMissing?.().catch(() => undefined);
  }

  /** Tells the subscribers a reading; an observer's failure never touches the guard. */
  private tell(view: GuardView | undefined): void {
    for (const s of this.subscribers) {
      try {
        s.onView?.(view);
      } catch {
        /* a metric is not worth a held payment */
      }
    }
  }
}
