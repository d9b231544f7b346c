/**
 * One reading of the deployment's provider guard (workflows/provider-guard.ts), as workers
 * (provider-guard-link.ts) and gateways (starter/client/provider-guard.ts) take it: the view the
 * guard keeps in its memo, by a describe, which the server answers with no worker. A killed worker
 * therefore no longer leaves every reader without a reading while the guard's workflow task moves
 * to another worker. The reading is trusted while the guard's workflow task has not waited more
 * than GUARD_TASK_STALE_MS for a worker (outcomes and pauses then wait unprocessed). A guard that
 * keeps no memo yet (started before mpf-guard-memo-v1) is queried instead.
 */
import type { Client } from '@temporalio/client';
import { optionalTsToMs } from '@temporalio/common/lib/time';
import { GUARD_MEMO_KEY, GUARD_TASK_STALE_MS, type GuardView } from '../contract/provider-guard';
import { guardQuery } from '../workflows/provider-guard';

/** The guard's run is closed (terminated, failed): nobody decides for it until it is started again. */
export class GuardClosedError extends Error {
  override name = 'GuardClosedError';
}

/** The guard's workflow task has waited too long for a worker: its view may lag what was reported to it. */
export class GuardStalledError extends Error {
  override name = 'GuardStalledError';
}

/**
 * The guard's view. Throws WorkflowNotFoundError (no guard yet), GuardClosedError, GuardStalledError,
 * or what the describe or query threw (deadline, connection).
 */
export async function readGuard(client: Client, workflowId: string, deadlineMs: number): Promise<GuardView> {
  const handle = client.workflow.getHandle(workflowId);
  const desc = await client.withDeadline(Date.now() + deadlineMs, () => handle.describe());
  if (desc.status.name !== 'RUNNING') throw new GuardClosedError(`the provider guard ${workflowId} is ${desc.status.name.toLowerCase()}`);
  const pending = desc.raw.pendingWorkflowTask;
  const waitingSince = optionalTsToMs(pending?.originalScheduledTime ?? pending?.scheduledTime);
  if (waitingSince !== undefined && Date.now() - waitingSince > GUARD_TASK_STALE_MS) {
    throw new GuardStalledError(`the provider guard ${workflowId} has waited ${Math.round((Date.now() - waitingSince) / 1000)} s for a worker`);
  }
  const view = desc.memo?.[GUARD_MEMO_KEY] as GuardView | undefined;
  if (view) return view;
  return client.withDeadline(Date.now() + deadlineMs, () => handle.query(guardQuery));
}
