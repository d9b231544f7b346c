/**
 * Heartbeats while a provider call is in flight, so Temporal notices a worker that died mid-call
 * within PROVIDER_ACTIVITY_HEARTBEAT_TIMEOUT and retries the call elsewhere (retry-policies.ts).
 * No details are sent: a heartbeat carries nothing about the request. The first is sent after
 * HEARTBEAT_EVERY_MS, so a quick call costs no heartbeat at all.
 */
import { Context } from '@temporalio/activity';

/** How often the activity heartbeats; the worker's throttle (2 s) decides how often it is sent. */
export const HEARTBEAT_EVERY_MS = 1_000;

export async function whileHeartbeating<T>(work: () => Promise<T>): Promise<T> {
  let ctx: Context;
  try {
    ctx = Context.current();
  } catch {
    return work(); // called outside an activity (unit tests)
  }
  // No heartbeat at the start: the SDK sends a first heartbeat at once (a Temporal RPC and a write
  // of the flow's state on the server), so a call answered within HEARTBEAT_EVERY_MS, as nearly
  // all are, sends none. The heartbeat timeout (8 s) counts from the start all the same.
  const timer = setInterval(() => ctx.heartbeat(), HEARTBEAT_EVERY_MS);
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}
