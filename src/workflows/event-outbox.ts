/**
 * A flow's outgoing merchant events (workflow-safe). FlowSession.set() emits one per state change
 * (event-types.ts decides which); a pump running beside the flow hands them, in order, to the
 * flow's delivery workflow `events-<flow_id>`: started as a child on the first event with
 * ParentClosePolicy ABANDON (it goes on delivering after the flow completed), fed by the `events`
 * signal, told `eventsClosed` when the flow ends. The flow itself never waits for a delivery: only
 * its very end waits until every event was handed over (one signal, not the delivery).
 *
 * Each event is also kept in the flow's memo (`mpf_events`: the whole list, one memo upsert per
 * event), so the events API lists and reads them from visibility and describe, with no worker and
 * no replay, for as long as the namespace keeps the closed flow.
 *
 * Since LEAN_EVENTS_PATCH the delivery workflow is started only when an event has somewhere to
 * go: an endpoint configured on the worker or the flow, or a registered endpoint that takes it now
 * (asked with the first activity's answer for the first event, then by the `eventTargets` local
 * activity at each later one, until one does). A flow started before an endpoint was registered
 * hands its next event to a delivery workflow then; once started, every later event goes to it.
 * Since FRESH_TARGETS_PATCH the swap's confirmation answers the settings too, and a provider
 * notification carries the types its receiver read: the events of the state they decide need no
 * `eventTargets`. An event known to go nowhere is dropped where it is emitted.
 *
 * Flows recorded before this existed replay without it (`patched`), so their histories stay valid.
 */
import { EVENTS_MEMO_PATCH, LEAN_EVENTS_PATCH, MERCHANT_EVENTS_PATCH } from './patches';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import {
  CancellationScope,
  condition,
  getExternalWorkflowHandle,
  log,
  ParentClosePolicy,
  patched,
  proxyLocalActivities,
  setHandler,
  sleep,
  startChild,
  upsertMemo,
  workflowInfo,
} from '@temporalio/workflow';
import type { EventActivities, EventSettings, EventSettingsInput } from '../activities/event-types';
import type { FlowKind } from './flow-ids';
import {
  EVENT_DELIVERY_WORKFLOW_TYPE,
  EVENTS_MEMO_FIELD,
  eventData,
  eventDeliveryWorkflowId,
  type EventDeliveryInput,
  eventId,
  eventsClosedSignal,
  eventsSignal,
  eventTypeFor,
  flowEventsQuery,
  type FlowEvent,
  type FlowEventSummary,
} from './event-types';

export { MERCHANT_EVENTS_PATCH };

// Reading the worker's configuration: it fails only on a worker without the event activities
// (then this flow's events are kept in its view and not delivered; the flow never waits on it).
const { eventSettings } = proxyLocalActivities<EventActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { maximumAttempts: 3, initialInterval: '200 milliseconds' },
});
// Whether a registered endpoint takes an event now (lean flows with no delivery workflow yet): one
// short attempt, since the workflow task that emitted the event (a PIN's answer, say) waits for it;
// without an answer the events go to the delivery workflow, which asks again until it can.
const { eventTargets } = proxyLocalActivities<EventActivities>({
  startToCloseTimeout: '3 seconds',
  retry: { maximumAttempts: 1 },
});

interface Target {
  signal(def: typeof eventsSignal, arg: { events: FlowEvent[] }): Promise<void>;
  signal(def: typeof eventsClosedSignal): Promise<void>;
}

/**
 * Whether a flow's events go to a delivery workflow: an endpoint is configured, or the worker
 * reads registered endpoints (one may be registered while the flow runs). Settings recorded
 * before registered endpoints existed have no `registry`: the same commands as then.
 */
function deliverable(settings: EventSettings): boolean {
  return settings.endpoints.length > 0 || settings.registry === true;
}

export class EventOutbox {
  /** False when replaying a flow recorded before merchant events existed. */
  readonly enabled: boolean;
  /** A delivery workflow only for events that have somewhere to go (false when replaying a flow recorded before). */
  private readonly lean: boolean;
  /** The history length when the settings came: their `registered_types` answer for that workflow task only. */
  private settingsAt: number | undefined;
  /** False when replaying a flow recorded before its events were kept in its memo. */
  private readonly memoKept: boolean;
  private readonly events: FlowEvent[] = [];
  /** events[0, handed) are with the delivery workflow (or dropped: no endpoint configured). */
  private handed = 0;
  private pumping = false;
  private busy = false;
  private settings: EventSettings | undefined;
  private target: Target | undefined;

  /**
   * `startCarried`: the session's START_CARRIED_PATCH, asked before these (it stands for the lean
   * patch, so a new flow records no marker here). `freshTargets`: its FRESH_TARGETS_PATCH (later
   * provider activities are asked for the settings too: answerRequest()). `startMemo`: its
   * START_MEMO_PATCH (the starter carries the empty list in the start memo: not upserted here).
   */
  constructor(
    private readonly kind: FlowKind,
    private readonly flowUrl: string | undefined,
    startCarried = false,
    private readonly freshTargets = false,
    startMemo = false,
  ) {
    // One marker for new flows: the newest patch implies the older ones (each asked only when
    // replaying a flow recorded before the one above it, in the order they were recorded).
    this.lean = startCarried || patched(LEAN_EVENTS_PATCH);
    this.enabled = this.lean || patched(MERCHANT_EVENTS_PATCH);
    this.memoKept = this.lean || (this.enabled && patched(EVENTS_MEMO_PATCH));
    // The field from the start, even empty: a reader tells a flow that has no event yet from one
    // of an older release (whose events only its `events` query answers). Since START_MEMO_PATCH
    // the start carries it (a flow started without it has none until its first event, and readers
    // ask the query meanwhile).
    if (!startMemo) this.keepInMemo();
    // A query is no command: flows recorded before it replay unchanged.
    setHandler(flowEventsQuery, () => this.events);
  }

  /**
   * The events of the run this one carries on (a flow closed from outside, closed-flow.ts): kept
   * in the list, already handed over; the numbering goes on after them. Before any state change.
   */
  carryOn(earlier: readonly FlowEvent[]): void {
    this.events.push(...earlier);
    this.handed = this.events.length;
    this.keepInMemo();
  }

  /** Called on every state change; emits the event it is (if any) and wakes the pump. */
  stateChanged(from: string, to: string, view: () => Record<string, unknown>): void {
    if (!this.enabled) return;
    const type = eventTypeFor(this.kind, from, to);
    if (!type) return;
    const flowId = workflowInfo().workflowId;
    this.events.push({ id: eventId(flowId, this.events.length + 1), type, timestamp: new Date().toISOString(), data: eventData(this.kind, view(), from) });
    this.keepInMemo();
    // No endpoint to hand it to: dropped here, as the pump would drop it in this same activation
    // (dropsNow, without a command), but without waking the pump — each wake costs the flow a
    // dozen promises, each with its stack recorded by the SDK (docs/performance.md).
    if (!this.busy && this.handed === this.events.length - 1 && this.dropsNow()) return;
    if (!this.pumping) {
      this.pumping = true;
      // Beside the flow, never cancelled with it: a cancelled flow's `cancelled` event still goes out.
      void CancellationScope.nonCancellable(() => this.pump());
    }
  }

  /**
   * What the flow's first provider activity is asked for, so it answers the event settings with
   * the provider's data (undefined for a flow replayed from before merchant events existed).
   */
  settingsRequest(): EventSettingsInput | undefined {
    if (!this.enabled) return undefined;
    return this.request();
  }

  private request(): EventSettingsInput {
    return { ...(this.flowUrl ? { flow_url: this.flowUrl } : {}), ...(this.lean ? { registered_types: true } : {}) };
  }

  /**
   * The settings that came with the first activity's answer; without them (an answer recorded by
   * an older worker, or an activity that could not read them) the pump reads them itself with
   * the `eventSettings` local activity, as it always did.
   */
  offer(settings: EventSettings | undefined): void {
    if (this.enabled && settings && !this.settings) {
      this.settings = settings;
      this.settingsAt = workflowInfo().historyLength;
    }
  }

  /**
   * The settings a later provider activity is asked for with its input (FRESH_TARGETS_PATCH), so
   * the event of the state its answer decides is known to go or not without eventTargets;
   * undefined for a flow recorded before it (its activities are scheduled exactly as they were).
   */
  answerRequest(): EventSettingsInput | undefined {
    return this.freshTargets && this.enabled ? this.request() : undefined;
  }

  /**
   * The settings that came with a later activity's answer (answerRequest): they replace the
   * earlier ones, read now, for the events of this workflow task. An answer without them (an
   * activity that could not read them, or run by an older worker) changes nothing.
   */
  refresh(settings: EventSettings | undefined): void {
    if (!this.enabled || !settings) return;
    this.settings = settings;
    this.settingsAt = workflowInfo().historyLength;
  }

  /**
   * The registered types a notification's receiver read as it signalled (NotificationInput's
   * `registered_types`): as refresh(), for the events of this workflow task. Anything else than a
   * list of strings is ignored (a signal handler must never throw).
   */
  refreshTypes(types: unknown): void {
    if (!this.freshTargets || !this.enabled || !this.settings) return;
    if (!Array.isArray(types) || !types.every((t): t is string => typeof t === 'string')) return;
    this.refresh({ ...this.settings, registered_types: [...types] });
  }

  /**
   * Whether a batch goes to a delivery workflow (lean flows): always once one is started, or with
   * an endpoint configured; otherwise when a registered endpoint takes one of its events now —
   * from the settings read in this very workflow task, else asked (a local activity). An answer
   * that cannot be had hands the batch over: the delivery workflow asks again until it can.
   */
  private async goesOut(settings: EventSettings, batch: readonly FlowEvent[]): Promise<boolean> {
    const now = this.goesOutNow(settings, batch);
    if (now !== undefined) return now;
    const types = [...new Set(batch.map((e) => e.type))];
    try {
      for (const t of types) if ((await eventTargets({ event_type: t })).length > 0) return true;
      return false;
    } catch (err) {
      log.warn('merchant events: the registered endpoints could not be read; handing the events to the delivery workflow', { error: String(err) });
      return true;
    }
  }

  /** goesOut's answer when it needs no command to know it; undefined when a registered endpoint must be asked. */
  private goesOutNow(settings: EventSettings, batch: readonly FlowEvent[]): boolean | undefined {
    if (this.target || settings.endpoints.length > 0) return true;
    if (settings.registry !== true) return false;
    if (settings.registered_types && this.settingsAt === workflowInfo().historyLength) {
      return batch.some((e) => settings.registered_types!.includes(e.type));
    }
    return undefined;
  }

  /**
   * The pending batch goes nowhere, and that is known without a command (the settings are here
   * and say so): dropped at once, as handOver would drop it, without its promises (the SDK records
   * a stack for each). Any other batch goes through handOver as before, in the same order.
   */
  private dropsNow(): boolean {
    if (!this.settings) return false;
    const batch = this.events.slice(this.handed);
    const goes = this.lean ? this.goesOutNow(this.settings, batch) : deliverable(this.settings);
    if (goes !== false) return false;
    this.dropUndeliverable(batch.length);
    return true;
  }

  /** The whole list (a carried-on run's earlier events included): a memo field is replaced, not appended to. */
  private keepInMemo(): void {
    if (this.memoKept) upsertMemo({ [EVENTS_MEMO_FIELD]: [...this.events] });
  }

  list(): FlowEventSummary[] {
    return this.events.map(({ id, type, timestamp }) => ({ id, type, timestamp }));
  }

  /**
   * The flow's last step: waits until every event was handed over (bounded), then tells the
   * delivery workflow no more will come. It does not wait for deliveries. Undefined (no promise)
   * when there is nothing to wait for or to tell.
   */
  finish(): Promise<void> | undefined {
    if (!this.enabled || !this.pumping) return undefined;
    if (this.allHandedOver() && !this.target) return undefined;
    return this.closeDelivery();
  }

  private allHandedOver(): boolean {
    return this.handed === this.events.length && !this.busy;
  }

  private async closeDelivery(): Promise<void> {
    // No timeout here: a condition with a timeout starts a timer unless the hand-over completes in
    // the same activation, which depends on when the eventSettings local activity resolved — a
    // replay after a worker crash could then disagree with the history (a nondeterminism error
    // the soak found). The pump never gives up (it retries every 30 s), so this ends.
    if (!this.allHandedOver()) await condition(() => this.allHandedOver());
    if (this.target) {
      await this.target.signal(eventsClosedSignal).catch((err: unknown) => log.warn('merchant events: eventsClosed not delivered', { error: String(err) }));
    }
  }

  private async pump(): Promise<void> {
    for (;;) {
      await condition(() => this.handed < this.events.length);
      if (this.dropsNow()) continue;
      this.busy = true;
      try {
        await this.handOver();
      } catch (err) {
        // Never fail the flow over its events: log, wait, try again.
        log.error('merchant events: handing over failed; retrying in 30 s', { error: String(err) });
        await sleep('30 seconds');
      } finally {
        this.busy = false;
      }
    }
  }

  private async handOver(): Promise<void> {
    const batch = this.events.slice(this.handed);
    if (!this.settings) {
      this.settings = await eventSettings(this.request()).catch((err: unknown): EventSettings => {
        log.error('merchant events: eventSettings failed; this flow\'s events are not delivered', { error: String(err) });
        return { endpoints: [], schedule: { retry_for_ms: 0, initial_interval_ms: 0, max_interval_ms: 0, attempt_timeout_ms: 0, idle_close_ms: 0 } };
      });
      this.settingsAt = workflowInfo().historyLength;
    }
    if (this.lean ? !(await this.goesOut(this.settings, batch)) : !deliverable(this.settings)) {
      this.dropUndeliverable(batch.length);
      return;
    }
    if (this.target) {
      try {
        await this.target.signal(eventsSignal, { events: batch });
        this.handed += batch.length;
        return;
      } catch (err) {
        // The delivery workflow closed (ended idle, or terminated): a new one takes over from here.
        log.warn('merchant events: delivery workflow gone; starting a new one', { error: String(err) });
        this.target = undefined;
      }
    }
    await this.startDelivery(batch);
    this.handed += batch.length;
  }

  /** Events with no endpoint to go to (none configured, or the settings could not be read). */
  private dropUndeliverable(count: number): void {
    if (this.settings?.disabled_reason) log.warn('merchant events: not delivered', { reason: this.settings.disabled_reason });
    this.handed += count;
  }

  private async startDelivery(batch: FlowEvent[]): Promise<void> {
    const flowId = workflowInfo().workflowId;
    const workflowId = eventDeliveryWorkflowId(flowId);
    const input: EventDeliveryInput = { flow_id: flowId, endpoints: this.settings!.endpoints, schedule: this.settings!.schedule, events: batch };
    try {
      this.target = await startChild(EVENT_DELIVERY_WORKFLOW_TYPE, {
        workflowId,
        args: [input],
        parentClosePolicy: ParentClosePolicy.ABANDON,
        cancellationType: 'ABANDON',
      });
    } catch (err) {
      // Already running (e.g. the flow was reset in Temporal): hand the batch to that one; it skips ids it has.
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
      const existing = getExternalWorkflowHandle(workflowId);
      await existing.signal(eventsSignal, { events: batch });
      this.target = existing;
    }
  }
}
