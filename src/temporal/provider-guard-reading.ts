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
import { type Client, WorkflowNotFoundError } from '@temporalio/client';
import type { google } from '@temporalio/proto';
import { GUARD_MEMO_KEY, GUARD_TASK_STALE_MS, type GuardView, type MoneyClass, type TrialClaim } from '../contract/provider-guard';
import { guardClaimTrialUpdate, guardQuery } from '../workflows/provider-guard';

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

/**
 * Claims a half-open class's trial call for the flow `key` (the `claimTrial` update, bounded): the
 * guard's answer, granted or not, with its view. Workers claim it for a held call, gateways for a start.
 */
export function claimGuardTrial(client: Client, workflowId: string, cls: MoneyClass, key: string, deadlineMs: number): Promise<TrialClaim> {
  return client.withDeadline(Date.now() + deadlineMs, () => client.workflow.getHandle(workflowId).executeUpdate(guardClaimTrialUpdate, { args: [{ cls, key }] }));
}

