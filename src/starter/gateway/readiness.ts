/**
 * The gateway's readiness: Temporal answers, its persistence answers (the frontend answers
 * GetSystemInfo and DescribeTaskQueue from memory with its database down: health.ts), AND a
 * worker polled the task queue recently. Without a
 * worker, starts and PINs would only answer 504 after 30 s (see README, HTTP gateway), so a load
 * balancer should not send traffic yet. "Recently" is judged by the pollers' last access time
 * that Temporal reports for the task queue (DescribeTaskQueue): an idle worker's long poll is
 * renewed about every minute, so a worker seen within READY_POLLER_WINDOW_MS is alive; a worker
 * gone for longer no longer counts.
 */
import { temporal } from '@temporalio/proto';
import type { MpfClient } from '../client/mpf-client';

const READY_TIMEOUT_MS = 3_000;
/** A poller seen within this window counts (a long poll is renewed about every 60 s when idle). */
export const READY_POLLER_WINDOW_MS = 120_000;

const { TaskQueueType, TaskQueueKind } = temporal.api.enums.v1;

export interface Readiness {
  ready: boolean;
  /** Why not ready. */
  error?: 'temporal_unavailable' | 'temporal_persistence_unavailable' | 'no_worker_polling';
  /** Pollers seen within the window, by task queue type (absent when Temporal did not answer). */
  pollers?: { workflow: number; activity: number };
}

function tsToMs(ts: { seconds?: { toNumber(): number } | number | null; nanos?: number | null } | null | undefined): number | undefined {
  if (!ts) return undefined;
  const s = typeof ts.seconds === 'number' ? ts.seconds : (ts.seconds?.toNumber() ?? 0);
  return s * 1000 + Math.floor((ts.nanos ?? 0) / 1e6);
}

export async function checkReadiness(mpf: MpfClient, now: () => number = Date.now): Promise<Readiness> {
  const client = mpf.temporal;
  const describe = (taskQueueType: temporal.api.enums.v1.TaskQueueType) =>
    client.workflowService.describeTaskQueue({
      namespace: client.options.namespace,
      taskQueue: { name: mpf.taskQueue, kind: TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
      taskQueueType,
    });
  // Bounded by the gate's probes (PROBE_TIMEOUT_MS each): the frontend, then its persistence.
  const availability = await mpf.temporalAvailability();
  if (availability === 'frontend_unavailable') return { ready: false, error: 'temporal_unavailable' };
  if (availability === 'persistence_unavailable') return { ready: false, error: 'temporal_persistence_unavailable' };
  let answers;
  try {
    // The deadline ends each call itself (retries included), so nothing outlives the answer.
    answers = await client.withDeadline(Date.now() + READY_TIMEOUT_MS, () =>
      Promise.all([describe(TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW), describe(TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY)]),
    );
  } catch {
    return { ready: false, error: 'temporal_unavailable' };
  }
  const since = now() - READY_POLLER_WINDOW_MS;
  const recent = (r: (typeof answers)[number]) => (r.pollers ?? []).filter((p) => (tsToMs(p.lastAccessTime) ?? 0) >= since).length;
  const pollers = { workflow: recent(answers[0]), activity: recent(answers[1]) };
  if (pollers.workflow === 0) return { ready: false, error: 'no_worker_polling', pollers };
  return { ready: true, pollers };
}
