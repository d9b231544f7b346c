/**
 * The provider guard at the activities (contract/provider-guard.ts): a money-moving call asks the
 * worker's ProviderGate when it has its connection, right before it is sent (guardedSend: the
 * provider client's `admit`, provider/client.ts), not before it waits for a connection, so a
 * breaker that opens while the call waits behind slow calls holds it. A held call fails with
 * PROVIDER_HELD_TYPE (retryable: the activity's retries wait, inside its schedule-to-close, for
 * the guard to let it go). Nothing is sent by a held attempt. Whether an EARLIER attempt of the
 * same activity may have reached the provider travels in the heartbeat details (`held_only`), so
 * a confirmation held on every attempt is known never to have been sent, and one held after a
 * sent attempt keeps its doubt. An attempt that waits a second or more for its connection
 * heartbeats meanwhile without details (activities/heartbeat.ts), which reads as "may have been
 * sent": the safe side, should its window close during that wait; a refusal at the connection
 * heartbeats "held" again.
 */
import { Context, log } from '@temporalio/activity';
import { ApplicationFailure, ApplicationFailureCategory } from '@temporalio/common';
import { type HeldDetails, type MoneyClass, PROVIDER_HELD_TYPE, type ProviderGate } from '../contract/provider-guard';
import type { SendOptions } from '../provider/client';

interface GuardHeartbeat {
  held_only?: boolean;
  /** The previous attempt was held (so this one's hold is not news for the log). */
  held?: boolean;
}

/**
 * An attempt that follows held ones is not sent in the last seconds of its schedule-to-close: its
 * "sent" heartbeat must reach the server before the activity can time out, or the timeout would
 * read "held on every attempt" from the older heartbeat (workflows/failures.ts heldThroughout).
 */
export const NO_SEND_BEFORE_DEADLINE_MS = 2_000;

interface AttemptInfo {
  ctx: Context;
  attempt: number;
  heldOnlySoFar: boolean;
  heldBefore: boolean;
  /** ms left of the activity's schedule-to-close (undefined: none set). */
  leftMs: number | undefined;
}

function attemptInfo(): AttemptInfo | undefined {
  try {
    const ctx = Context.current();
    const previous = ctx.info.heartbeatDetails as GuardHeartbeat | undefined;
    const { scheduleToCloseTimeoutMs, scheduledTimestampMs } = ctx.info;
    const leftMs = scheduleToCloseTimeoutMs && scheduledTimestampMs ? scheduledTimestampMs + scheduleToCloseTimeoutMs - Date.now() : undefined;
    return { ctx, attempt: ctx.info.attempt, heldOnlySoFar: ctx.info.attempt === 1 || previous?.held_only === true, heldBefore: ctx.info.attempt > 1 && previous?.held === true, leftMs };
  } catch {
    return undefined; // outside an activity (unit tests)
  }
}

/**
 * How the activity lets a provider call out: a money-moving class (`cls`) is admitted by the guard
 * when the call has its connection (passGuard, asked by the provider client right before it
 * sends); every call stops waiting for a connection when the activity is cancelled or timed out,
 * so an attempt that is over sends nothing.
 */
export function guardedSend(gate: ProviderGate | undefined, cls: MoneyClass | undefined): SendOptions {
  let signal: AbortSignal | undefined;
  try {
    signal = Context.current().cancellationSignal;
  } catch {
    signal = undefined; // outside an activity (unit tests)
  }
  return { ...(cls ? { admit: () => passGuard(gate, cls) } : {}), ...(signal ? { signal } : {}) };
}

/**
 * Throws the held failure when the guard holds `cls` for this flow; otherwise notes that this
 * attempt sends. The flow (its workflow id) is the key of a half-open breaker's trial call. Asked
 * when the call has its connection (guardedSend), so the reading it answers from, the trial claim
 * and the time left before the deadline are those of the moment of sending.
 */
export async function passGuard(gate: ProviderGate | undefined, cls: MoneyClass): Promise<void> {
  const info = attemptInfo();
  let key: string | undefined;
  try {
    key = Context.current().info.workflowExecution?.workflowId;
  } catch {
    key = undefined;
  }
  let reason = gate ? await gate.admit(cls, key) : undefined;
  if (!reason && info && info.attempt > 1 && info.heldOnlySoFar && info.leftMs !== undefined && info.leftMs < NO_SEND_BEFORE_DEADLINE_MS) {
    reason = `the guard let it go ${Math.max(0, Math.round(info.leftMs))} ms before its deadline: too late to send safely`;
  }
  if (!reason) {
    if (info && info.attempt > 1) info.ctx.heartbeat({ held_only: false } satisfies GuardHeartbeat);
    return;
  }
  const sentEarlier = info ? !info.heldOnlySoFar : false;
  info?.ctx.heartbeat({ held_only: !sentEarlier, held: true } satisfies GuardHeartbeat);
  const details: HeldDetails = { class: cls, reason, sent_earlier: sentEarlier };
  // Expected while the guard holds: one line when a call is first held, not a warning with a stack per retry.
  if (!info?.heldBefore) log.info('provider call held by the provider guard; retried until it lets go', { class: cls, reason });
  throw ApplicationFailure.create({
    type: PROVIDER_HELD_TYPE,
    message: `held by the provider guard, nothing sent: ${reason}`,
    nextRetryDelay: '1 second',
    details: [details],
    category: ApplicationFailureCategory.BENIGN,
  });
}
