/**
 * The delivery workflow of one flow's merchant events (`events-<flow_id>`, a child the flow
 * abandons when it closes). One lane per endpoint, each delivering the flow's events one by one
 * in order: an event is retried with exponential backoff until it is delivered or its retry period
 * (counted from when it happened) has passed, and only then does the lane move to the next one.
 * Each attempt is one activity attempt (the retries are timers here, so attempts, last status and
 * the next attempt are in the `deliveries` view). Ends once the flow said `eventsClosed` and every
 * lane is done, or when idle for `idle_close_ms` with nothing left to deliver.
 */
import { ActivityFailure, ApplicationFailure, condition, proxyActivities, setHandler, sleep, TimeoutFailure } from '@temporalio/workflow';
import type { DeliveryFailureDetails, EventActivities } from '../activities/event-types';
import { retryDelayMs } from '../contract/merchant-events';
import {
  deliveriesQuery,
  type DeliveryRecord,
  endpointHost,
  type EventDeliveryInput,
  type EventDeliveryView,
  eventsClosedSignal,
  eventsSignal,
  type FlowEvent,
} from './event-types';

export { retryDelayMs };

/**
 * What a failed attempt said: the HTTP status when there was one, and its class (never a raw
 * network error), both from the failure's details. An attempt recorded by a worker from before the
 * class was in its details (it may hold a raw network error in its message) shows 'delivery_failed'.
 */
export function describeAttemptFailure(err: unknown): { status?: number; error: string } {
  if (err instanceof ActivityFailure) {
    const cause = err.cause;
    if (cause instanceof ApplicationFailure) {
      const details = cause.details?.[0] as DeliveryFailureDetails | undefined;
      return { status: details?.status, error: details?.error ?? 'delivery_failed' };
    }
    if (cause instanceof TimeoutFailure) return { error: 'timeout' };
    return { error: 'delivery_failed' };
  }
  return { error: 'delivery_failed' };
}

class Lane {
  next = 0;
  constructor(
    readonly url: string,
    readonly host: string,
  ) {}
}

export async function eventDeliveryWorkflow(input: EventDeliveryInput): Promise<EventDeliveryView> {
  const { schedule } = input;
  const events: FlowEvent[] = [];
  const known = new Set<string>();
  const records = new Map<string, DeliveryRecord>();
  const lanes = input.endpoints.map((url) => new Lane(url, endpointHost(url)));
  let closed = false;
  let activity = 0; // bumped on every new event and every finished delivery (idle detection)

  const add = (batch: FlowEvent[]): void => {
    for (const e of batch) {
      if (known.has(e.id)) continue; // handed over twice (a retried hand-over): once is enough
      known.add(e.id);
      events.push(e);
      for (const lane of lanes) {
        records.set(`${lanes.indexOf(lane)}|${e.id}`, { event_id: e.id, type: e.type, endpoint: lane.host, state: 'pending', attempts: 0 });
      }
      activity++;
    }
  };
  const recordOf = (lane: Lane, e: FlowEvent): DeliveryRecord => records.get(`${lanes.indexOf(lane)}|${e.id}`)!;
  const view = (): EventDeliveryView => ({ flow_id: input.flow_id, endpoints: lanes.map((l) => l.host), deliveries: [...records.values()] });
  const drained = (): boolean => lanes.every((l) => l.next >= events.length);

  add(input.events);
  setHandler(eventsSignal, (arg) => {
    if (arg && Array.isArray(arg.events)) add(arg.events);
  });
  setHandler(eventsClosedSignal, () => {
    closed = true;
  });
  setHandler(deliveriesQuery, view);

  const attemptTimeoutMs = schedule.attempt_timeout_ms;
  const { deliverEvent } = proxyActivities<EventActivities>({
    // The activity bounds the HTTP exchange itself; this also covers a worker that died during it.
    startToCloseTimeout: attemptTimeoutMs + 5_000,
    retry: { maximumAttempts: 1 }, // the retries are ours (timers below), so each attempt is visible
  });

  const deliver = async (lane: Lane, e: FlowEvent): Promise<void> => {
    const rec = recordOf(lane, e);
    const deadline = Date.parse(e.timestamp) + schedule.retry_for_ms;
    for (;;) {
      rec.attempts += 1;
      rec.next_attempt_at = undefined;
      try {
        const res = await deliverEvent({ event: e, url: lane.url, attempt: rec.attempts });
        rec.state = 'delivered';
        rec.last_status = res.status;
        rec.last_error = undefined;
        rec.delivered_at = res.delivered_at;
        return;
      } catch (err) {
        const f = describeAttemptFailure(err);
        rec.last_status = f.status;
        rec.last_error = f.error;
      }
      const delay = retryDelayMs(rec.attempts, schedule.initial_interval_ms, schedule.max_interval_ms);
      if (Date.now() + delay > deadline) {
        rec.state = 'failed';
        return;
      }
      rec.next_attempt_at = new Date(Date.now() + delay).toISOString();
      await sleep(delay);
    }
  };

  const runLane = async (lane: Lane): Promise<void> => {
    for (;;) {
      await condition(() => lane.next < events.length);
      await deliver(lane, events[lane.next]!);
      lane.next++;
      activity++;
    }
  };
  for (const lane of lanes) void runLane(lane);

  for (;;) {
    const seen = activity;
    const moved = await condition(() => (closed && drained()) || activity !== seen, schedule.idle_close_ms);
    if (closed && drained()) break;
    if (!moved && drained()) break; // idle: nothing new and nothing left
  }
  return view();
}
