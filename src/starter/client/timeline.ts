/**
 * A flow's timeline for its single view (GET /v1/swaps/{id}, GET /v1/payment-links/{id}), read
 * with no worker: the server's describe (the memo) and the run's history, never a query.
 *
 *  - `state`: each state the flow took and when, from the events it keeps in its memo
 *    (`mpf_events`: the state and the event type); the steps that emit no event (`initializing`,
 *    `confirming`, `creating`) from the MpfState its start set and the history's MpfState upserts,
 *    which also give every state of a flow from before the events were kept.
 *  - `provider_call`: each activity the run scheduled (initSwap, confirmSwap, createPaymentLink):
 *    when, its last attempt, when it ended and its outcome; a failure shows only its type (its
 *    message is encrypted by the failure converter, and is not decoded here). The activities'
 *    inputs and results are never read: they carry the sealed PIN and auth_token.
 *  - `notification`: each provider notification the flow recorded (when, its outcome), from the
 *    view; without a view, each `notification` signal in the history.
 *  - `operator`: a cancel, a resolve (by whom, from the view's reconciliation), a termination or a
 *    cancellation in Temporal.
 *
 * The history is fetched only here, for one flow: lists never read it. A run that carries on a
 * flow closed from outside (closed-flow.ts) has its own history: the earlier run's provider calls
 * are not in it (its states are, from the memo).
 */
import type { Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { EVENT_TYPE_OF_STATE, EVENTS_MEMO_FIELD, type FlowEvent } from '../../contract/merchant-events';
import type { FlowKind } from '../../workflows/flow-ids';
import { FIRST_STATE } from '../../contract/flow-kinds';

export type TimelineKind = 'state' | 'provider_call' | 'notification' | 'operator';

export interface TimelineEntry {
  /** When it happened (a provider call: when it was scheduled), ISO 8601. */
  at: string;
  kind: TimelineKind;
  /** The state; the activity type; `notification`; the operator's act (cancel, resolve, terminate, cancel_request). */
  name: string;
  /** A provider call's: completed, failed, timed_out, cancelled, pending; a notification's outcome; a resolve's. */
  outcome?: string;
  /** A few words more: the event a state emitted, a failure's type, who resolved, a termination's reason. */
  detail?: string;
  /** A provider call's last attempt (1 when it was not retried). */
  attempt?: number;
  /** When a provider call ended. */
  ended_at?: string;
}

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
type Ts = temporal.api.history.v1.IHistoryEvent['eventTime'];

function iso(ts: Ts): string | undefined {
  if (!ts || (ts.seconds === undefined && ts.nanos === undefined)) return undefined;
  return new Date(Number(ts.seconds ?? 0) * 1000 + Math.floor((ts.nanos ?? 0) / 1e6)).toISOString();
}

/** A keyword search attribute's value from its (plaintext JSON) payload (of a keyword list, its first). */
export function keywordOf(p: temporal.api.common.v1.IPayload | null | undefined): string | undefined {
  if (!p?.data) return undefined;
  try {
    const v = JSON.parse(Buffer.from(p.data).toString('utf8')) as unknown;
    return typeof v === 'string' ? v : Array.isArray(v) && typeof v[0] === 'string' ? v[0] : undefined;
  } catch {
    return undefined;
  }
}

/** The type of a failure (never its message, which the failure converter encrypts). */
function failureType(f: temporal.api.failure.v1.IFailure | null | undefined): string | undefined {
  if (!f) return undefined;
  if (f.applicationFailureInfo) return f.applicationFailureInfo.type || 'ApplicationFailure';
  if (f.timeoutFailureInfo) return 'timeout';
  if (f.canceledFailureInfo) return 'cancelled';
  if (f.serverFailureInfo) return 'server failure';
  return undefined;
}

/** The provider calls of a history: one entry per scheduled activity, with its outcome. */
function providerCalls(events: readonly HistoryEvent[]): TimelineEntry[] {
  const calls = new Map<string, TimelineEntry>();
  const close = (id: unknown, e: HistoryEvent, outcome: string, detail?: string): void => {
    const call = calls.get(String(id));
    if (!call) return;
    call.outcome = outcome;
    const ended = iso(e.eventTime);
    if (ended) call.ended_at = ended;
    if (detail) call.detail = detail;
  };
  for (const e of events) {
    if (e.activityTaskScheduledEventAttributes) {
      calls.set(String(e.eventId), { at: iso(e.eventTime) ?? '', kind: 'provider_call', name: e.activityTaskScheduledEventAttributes.activityType?.name ?? 'activity', outcome: 'pending', attempt: 1 });
    } else if (e.activityTaskStartedEventAttributes) {
      const call = calls.get(String(e.activityTaskStartedEventAttributes.scheduledEventId));
      if (call) call.attempt = e.activityTaskStartedEventAttributes.attempt ?? 1;
    } else if (e.activityTaskCompletedEventAttributes) {
      close(e.activityTaskCompletedEventAttributes.scheduledEventId, e, 'completed');
    } else if (e.activityTaskFailedEventAttributes) {
      close(e.activityTaskFailedEventAttributes.scheduledEventId, e, 'failed', failureType(e.activityTaskFailedEventAttributes.failure));
    } else if (e.activityTaskTimedOutEventAttributes) {
      close(e.activityTaskTimedOutEventAttributes.scheduledEventId, e, 'timed_out', failureType(e.activityTaskTimedOutEventAttributes.failure));
    } else if (e.activityTaskCanceledEventAttributes) {
      close(e.activityTaskCanceledEventAttributes.scheduledEventId, e, 'cancelled');
    }
  }
  return [...calls.values()];
}

/**
 * The states a run published (MpfState upserts), oldest first; and the first state its start set,
 * unless the run upserted its kind itself (a flow started without them, or run by a worker of a
 * release before the start carried them, upserts its first state again).
 */
function stateUpserts(events: readonly HistoryEvent[]): Array<{ at: string; state: string }> {
  const out: Array<{ at: string; state: string }> = [];
  const upsertsKind = events.some((e) => e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields?.MpfFlowKind);
  for (const e of events) {
    const set = e.upsertWorkflowSearchAttributesEventAttributes ?? (upsertsKind ? undefined : e.workflowExecutionStartedEventAttributes);
    const state = keywordOf(set?.searchAttributes?.indexedFields?.MpfState);
    const at = iso(e.eventTime);
    if (state && at) out.push({ at, state });
  }
  return out;
}

/** What of the view the timeline reads: the notifications recorded and the reconciliation's audit. */
export interface TimelineView {
  notifications?: ReadonlyArray<{ received_at: string; outcome: string; applied?: boolean; deliveries?: number }>;
  reconciliation?: { outcome?: string; operator?: string; resolved_at?: string };
}

/** The operator's acts in a history: cancels, resolves, terminations and cancellations in Temporal. */
function operatorActs(events: readonly HistoryEvent[], view: TimelineView | undefined): TimelineEntry[] {
  const out: TimelineEntry[] = [];
  for (const e of events) {
    const at = iso(e.eventTime);
    if (!at) continue;
    const update = e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name;
    const signal = e.workflowExecutionSignaledEventAttributes?.signalName;
    if (update === 'cancelAndWait' || signal === 'cancel') out.push({ at, kind: 'operator', name: 'cancel' });
    else if (update === 'resolve') {
      const r = view?.reconciliation;
      out.push({ at, kind: 'operator', name: 'resolve', ...(r?.outcome ? { outcome: r.outcome } : {}), ...(r?.operator ? { detail: `by ${r.operator}` } : {}) });
    } else if (e.workflowExecutionTerminatedEventAttributes) {
      const reason = e.workflowExecutionTerminatedEventAttributes.reason;
      out.push({ at, kind: 'operator', name: 'terminate', ...(reason ? { detail: reason.slice(0, 200) } : {}) });
    } else if (e.workflowExecutionCancelRequestedEventAttributes) out.push({ at, kind: 'operator', name: 'cancel_request' });
  }
  return out;
}

function notifications(events: readonly HistoryEvent[], view: TimelineView | undefined): TimelineEntry[] {
  if (view?.notifications) {
    return view.notifications.map((n) => ({
      at: n.received_at,
      kind: 'notification' as const,
      name: 'notification',
      outcome: n.outcome,
      ...(n.applied !== undefined ? { detail: `${n.applied ? 'applied' : 'not applied'}${n.deliveries && n.deliveries > 1 ? `, delivered ${n.deliveries} times` : ''}` } : {}),
    }));
  }
  return events.flatMap((e) => {
    const at = iso(e.eventTime);
    return e.workflowExecutionSignaledEventAttributes?.signalName === 'notification' && at ? [{ at, kind: 'notification' as const, name: 'notification' }] : [];
  });
}

/** The states, from the memo's events and the history's MpfState upserts (see the module's comment). */
function states(kind: FlowKind, memoEvents: readonly FlowEvent[] | undefined, events: readonly HistoryEvent[]): TimelineEntry[] {
  const upserts = stateUpserts(events);
  if (!memoEvents || memoEvents.length === 0) return upserts.map(({ at, state }) => ({ at, kind: 'state', name: state }));
  const silent = upserts.filter(({ state }) => EVENT_TYPE_OF_STATE[kind][state] === null).map(({ at, state }): TimelineEntry => ({ at, kind: 'state', name: state }));
  const told = memoEvents.map((e): TimelineEntry => ({ at: e.timestamp, kind: 'state', name: typeof e.data?.state === 'string' ? e.data.state : e.type, detail: e.type }));
  return [...silent, ...told];
}

/**
 * The events a flow keeps in its (decoded) memo, or undefined when only its `events` query can
 * say (a flow of a release before the events memo). With `state` (its MpfState) and `kind`, an
 * empty list is trusted only while the flow is in its first state: a worker that keeps the list
 * adds each later state's event in the workflow task that sets the state, so an empty list past
 * the first state is the one the starter put in the start memo (mpf-start-memo-v1) of a flow that
 * a worker of a release before the events memo ran.
 */
export function memoEventsOf(memo: Record<string, unknown> | undefined, at?: { kind: FlowKind; state: string | undefined }): FlowEvent[] | undefined {
  const v = memo?.[EVENTS_MEMO_FIELD];
  if (!Array.isArray(v)) return undefined;
  if (v.length === 0 && at?.state !== undefined && at.state !== FIRST_STATE[at.kind]) return undefined;
  return v as FlowEvent[];
}

/** The timeline of a run's history, its memo's events and (when known) its view; oldest first. */
export function timelineOf(kind: FlowKind, events: readonly HistoryEvent[], memoEvents: readonly FlowEvent[] | undefined, view: TimelineView | undefined): TimelineEntry[] {
  const all = [...states(kind, memoEvents, events), ...providerCalls(events), ...notifications(events, view), ...operatorActs(events, view)];
  // Stable: entries at the same instant keep the order above (a state before the call it led to).
  return all.filter((e) => e.at !== '').sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
}

/** A flow's timeline: its memo by describe and its latest run's history (no worker). */
export async function readTimeline(client: Client, kind: FlowKind, flowId: string, view: TimelineView | undefined): Promise<TimelineEntry[]> {
  const handle = client.workflow.getHandle(flowId);
  const [desc, history] = await Promise.all([handle.describe(), handle.fetchHistory()]);
  return timelineOf(kind, history.events ?? [], memoEventsOf(desc.memo), view);
}
