/**
 * Redelivering a merchant event (`POST /v1/events/{id}/redeliver`, `mpf events redeliver`): the
 * same event (same id, so a receiver de-duplicates it) sent again to the endpoints its flow's
 * events went to, signed by the worker with its current secret. Each redelivery is one run of the
 * ordinary delivery workflow, `redeliver-<event_id>-<n>`, holding just that event: its attempts are
 * retried like any delivery's for REDELIVERY_RETRY_MS and are shown beside the first delivery's.
 * A redelivery still running is answered again, never doubled; at most MAX_REDELIVERIES per event.
 */
import { WorkflowNotFoundError } from '@temporalio/client';
import { decodeArrayFromPayloads } from '@temporalio/common/lib/internal-non-workflow';
import {
  EVENT_DELIVERY_WORKFLOW_TYPE,
  endpointHost,
  type EventDeliveryInput,
  eventDeliveryWorkflowId,
  type EventDeliveryView,
  eventsClosedSignal,
  deliveriesQuery,
} from '../../workflows/event-types';
import type { MerchantEventDetail, MerchantEventsReader } from './events';
import type { TemporalGate } from './health';
import { GrpcStatus, hasGrpcCode } from '../../temporal/grpc-status';

export const MAX_REDELIVERIES = 10;
/** How long a redelivery retries an endpoint that does not take it (the first delivery's backoff). */
export const REDELIVERY_RETRY_MS = 60 * 60 * 1000;

/** The flow's events have no endpoint (none was configured when they happened): nothing to send to. -> 409 */
export class EventNotDeliverableError extends Error {
  override name = 'EventNotDeliverableError';
}

export interface Redelivery {
  /** The redelivery's own id (a delivery workflow in Temporal Web). */
  id: string;
  event_id: string;
  /** Each endpoint's host and how its attempts went so far. */
  deliveries: MerchantEventDetail['deliveries'];
}

export const redeliveryId = (eventId: string, n: number): string => `redeliver-${eventId}-${n}`;

export class EventRedeliveries {
  constructor(
    private readonly gate: TemporalGate,
    private readonly reader: MerchantEventsReader,
    private readonly taskQueue: string,
  ) {}

  /** Sends the event again; answers the redelivery (a running one when there is one). */
  async redeliver(eventId: string): Promise<Redelivery> {
    const event = await this.reader.get(eventId);
    const first = await this.firstDeliveryInput(event.flow_id);
    const temporal = this.gate.temporal;
    for (let n = 1; n <= MAX_REDELIVERIES; n++) {
      const id = redeliveryId(eventId, n);
      const status = await this.gate.guard(() => temporal.workflow.getHandle(id).describe()).then(
        (d) => d.status.name,
        (err: unknown) => {
          if (err instanceof WorkflowNotFoundError) return undefined;
          throw err;
        },
      );
      if (status !== undefined && status !== 'RUNNING') continue;
      if (status === undefined) {
        const { flow_id: _flowId, deliveries: _d, ...flowEvent } = event;
        const input: EventDeliveryInput = {
          flow_id: event.flow_id,
          endpoints: first.endpoints,
          schedule: { ...first.schedule, retry_for_ms: Math.max(0, Date.now() - Date.parse(event.timestamp)) + REDELIVERY_RETRY_MS },
          events: [flowEvent],
        };
        // With the flow's `eventsClosed` at once: it ends when every endpoint took the event (or gave up).
        await this.gate.guard(() =>
          temporal.workflow.signalWithStart(EVENT_DELIVERY_WORKFLOW_TYPE, {
            workflowId: id,
            taskQueue: this.taskQueue,
            args: [input],
            signal: eventsClosedSignal,
            workflowIdReusePolicy: 'REJECT_DUPLICATE',
          }),
        );
      }
      return { id, event_id: eventId, deliveries: first.endpoints.map((url) => ({ endpoint: endpointHost(url), state: 'pending', attempts: 0 })) };
    }
    throw new EventNotDeliverableError(`event ${eventId} was redelivered ${MAX_REDELIVERIES} times already; see GET /v1/events/${eventId}`);
  }

  /** The redeliveries of an event so far, with their attempts (bounded reads; none when unanswered). */
  async list(eventId: string): Promise<Redelivery[]> {
    const out: Redelivery[] = [];
    for (let n = 1; n <= MAX_REDELIVERIES; n++) {
      const id = redeliveryId(eventId, n);
      const view = await this.view(id);
      if (view === null) break;
      out.push({ id, event_id: eventId, deliveries: (view?.deliveries ?? []).map(({ event_id: _e, type: _t, ...rest }) => rest) });
    }
    return out;
  }

  /** A delivery workflow's view: null when there is none, undefined when it did not answer. */
  private async view(workflowId: string): Promise<EventDeliveryView | null | undefined> {
    const handle = this.gate.temporal.workflow.getHandle(workflowId);
    try {
      const desc = await this.gate.guard(() => handle.describe());
      if (desc.status.name === 'COMPLETED') return (await handle.result()) as EventDeliveryView;
      return await this.gate.queryWithinDeadline(workflowId, deliveriesQuery).catch(() => undefined);
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return null;
      throw err;
    }
  }

  /** The endpoints and schedule of the flow's own delivery workflow (its start input). */
  private async firstDeliveryInput(flowId: string): Promise<EventDeliveryInput> {
    const temporal = this.gate.temporal;
    const notDeliverable = new EventNotDeliverableError(
      `the events of ${flowId} had no endpoint when they happened (no MERCHANT_WEBHOOK_URL or webhook_url, or no signing secret): nothing to redeliver to; read them with GET /v1/events`,
    );
    const res = await this.gate
      .guard(() =>
        temporal.workflowService.getWorkflowExecutionHistory({
          namespace: temporal.options.namespace,
          execution: { workflowId: eventDeliveryWorkflowId(flowId) },
          maximumPageSize: 1,
        }),
      )
      .catch((err: unknown) => {
        if (hasGrpcCode(err, GrpcStatus.NOT_FOUND)) return undefined;
        throw err;
      });
    const payloads = res?.history?.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads;
    if (!payloads) throw notDeliverable;
    const [input] = (await decodeArrayFromPayloads(temporal.options.loadedDataConverter, payloads)) as [EventDeliveryInput | undefined];
    if (!input || !Array.isArray(input.endpoints) || input.endpoints.length === 0) throw notDeliverable;
    return input;
  }
}
