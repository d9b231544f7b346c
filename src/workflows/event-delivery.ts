/**
 * The delivery workflow of one flow's merchant events (`events-<flow_id>`, a child the flow
 * abandons when it closes). One lane per endpoint, each delivering the flow's events one by one
 * in order: an event is retried with exponential backoff until it is delivered or its retry period
 * (counted from when it happened) has passed, and only then does the lane move to the next one.
 * Each attempt is one activity attempt (the retries are timers here, so attempts, last status and
 * the next attempt are in the `deliveries` view). Ends once the flow said `eventsClosed` and every
 * lane is done, or when idle for `idle_close_ms` with nothing left to deliver.
 *
 * The deployment's registered webhook endpoints (behind WEBHOOK_ENDPOINTS_PATCH): as each event
 * comes, in order, the worker is asked which of them take it now (`eventTargets`: enabled, its type
 * enabled); each such endpoint gets a lane of its own the first time, and the event joins it. So an
 * endpoint registered while the flow runs gets the flow's next event, a disabled one gets none, and
 * an event whose type an endpoint did not enable is not sent there. Each attempt reads the endpoint
 * again (its URL, its secrets); one deleted or disabled since is not retried.
 */
import { ActivityFailure, ApplicationFailure, condition, log, patched, proxyActivities, setHandler, sleep, TimeoutFailure } from '@temporalio/workflow';
import type { DeliverEventInput, DeliveryFailureDetails, EventActivities } from '../activities/event-types';
import { retryDelayMs } from '../contract/merchant-events';
import { ENDPOINT_GONE_ERRORS, type EndpointTarget } from '../contract/webhook-endpoints';
import { WEBHOOK_ENDPOINTS_PATCH } from './patches';
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

/** A registered endpoint's lane: the events dispatched to it, in order. */
class EndpointLane {
  next = 0;
  readonly queue: FlowEvent[] = [];
  constructor(
    readonly id: string,
    readonly host: string,
  ) {}
}

type Deliver = (rec: DeliveryRecord, e: FlowEvent, to: Pick<DeliverEventInput, 'url' | 'endpoint_id'>) => Promise<void>;

/**
 * The registered endpoints' side of one delivery workflow: offers each event, in order, to the
 * endpoints that take it now (asking the worker), and runs one lane per endpoint it met.
 */
class RegisteredEndpoints {
  /** events[0, dispatched) were offered. */
  dispatched = 0;
  readonly lanes = new Map<string, EndpointLane>();

  constructor(
    private readonly events: readonly FlowEvent[],
    private readonly records: Map<string, DeliveryRecord>,
    private readonly only: string[] | undefined,
    private readonly deliver: Deliver,
    private readonly moved: () => void,
  ) {}

  drained(): boolean {
    return this.dispatched >= this.events.length && [...this.lanes.values()].every((l) => l.next >= l.queue.length);
  }

  hosts(): string[] {
    return [...this.lanes.values()].map((l) => l.host);
  }

  async dispatch(): Promise<void> {
    // Which registered endpoints take an event: retried until the worker can read them (never guessed).
    const { eventTargets } = proxyActivities<EventActivities>({
      startToCloseTimeout: '30 seconds',
      retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
    });
    for (;;) {
      await condition(() => this.dispatched < this.events.length);
      const e = this.events[this.dispatched]!;
      let targets: EndpointTarget[];
      try {
        targets = await eventTargets({ event_type: e.type, ...(this.only ? { only: this.only } : {}) });
      } catch (err) {
        log.warn('merchant events: the registered endpoints could not be read; asking again in 30 s', { error: String(err) });
        await sleep('30 seconds');
        continue;
      }
      for (const t of targets) {
        let lane = this.lanes.get(t.id);
        if (!lane) {
          lane = new EndpointLane(t.id, t.host);
          this.lanes.set(t.id, lane);
          void this.run(lane);
        }
        lane.queue.push(e);
        this.records.set(`${t.id}|${e.id}`, { event_id: e.id, type: e.type, endpoint: t.host, state: 'pending', attempts: 0 });
      }
      this.dispatched++;
      this.moved();
    }
  }

  private async run(lane: EndpointLane): Promise<void> {
    for (;;) {
      await condition(() => lane.next < lane.queue.length);
      const e = lane.queue[lane.next]!;
      await this.deliver(this.records.get(`${lane.id}|${e.id}`)!, e, { endpoint_id: lane.id });
      lane.next++;
      this.moved();
    }
  }
}

export async function eventDeliveryWorkflow(input: EventDeliveryInput): Promise<EventDeliveryView> {
  const { schedule } = input;
  const events: FlowEvent[] = [];
  const known = new Set<string>();
  const records = new Map<string, DeliveryRecord>();
  const lanes = input.endpoints.map((url) => new Lane(url, endpointHost(url)));
  // Registered endpoints: asked for at each event (flows recorded before them replay without).
  const registry = patched(WEBHOOK_ENDPOINTS_PATCH);
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
  const view = (): EventDeliveryView => ({
    flow_id: input.flow_id,
    endpoints: [...lanes.map((l) => l.host), ...(registered?.hosts() ?? [])],
    deliveries: [...records.values()],
  });
  const drained = (): boolean => lanes.every((l) => l.next >= events.length) && (registered?.drained() ?? true);

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

  const deliver: Deliver = async (rec, e, to) => {
    const deadline = Date.parse(e.timestamp) + schedule.retry_for_ms;
    for (;;) {
      rec.attempts += 1;
      rec.next_attempt_at = undefined;
      try {
        const res = await deliverEvent({ event: e, ...to, attempt: rec.attempts });
        rec.state = 'delivered';
        rec.last_status = res.status;
        rec.last_error = undefined;
        rec.delivered_at = res.delivered_at;
        return;
      } catch (err) {
        const f = describeAttemptFailure(err);
        rec.last_status = f.status;
        rec.last_error = f.error;
        if (to.endpoint_id !== undefined && ENDPOINT_GONE_ERRORS.includes(f.error)) {
          rec.state = 'failed'; // deleted or disabled since: not retried
          return;
        }
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
      const e = events[lane.next]!;
      await deliver(recordOf(lane, e), e, { url: lane.url });
      lane.next++;
      activity++;
    }
  };
  for (const lane of lanes) void runLane(lane);

  const registered = registry ? new RegisteredEndpoints(events, records, input.endpoint_ids, deliver, () => void activity++) : undefined;
  void registered?.dispatch();

  for (;;) {
    const seen = activity;
    const moved = await condition(() => (closed && drained()) || activity !== seen, schedule.idle_close_ms);
    if (closed && drained()) break;
    if (!moved && drained()) break; // idle: nothing new and nothing left
  }
  return view();
}
