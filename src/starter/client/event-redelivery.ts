/**
 * Redelivering a merchant event (`POST /v1/events/{id}/redeliver`, `mpf events redeliver`): the
 * same event (same id, so a receiver de-duplicates it) sent again to the endpoints its flow's
 * events went to, signed by the worker with its current secret, and to the registered webhook
 * endpoints that take it now (each with its own secret); or, with `endpoint`, to that registered
 * endpoint only (it must be enabled and take the event's type). Each redelivery is one run of the
 * ordinary delivery workflow, `redeliver-<event_id>-<n>`, holding just that event: its attempts are
 * retried like any delivery's for REDELIVERY_RETRY_MS and are shown beside the first delivery's.
 * A redelivery still running to the same target is answered again, never doubled (its memo names
 * the endpoint it was for); at most MAX_REDELIVERIES per event.
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
import { endpointTakes } from '../../contract/webhook-endpoints';
import { NO_MERCHANT_EVENTS } from '../../merchant-events/config';
import { checkEndpointId, type WebhookEndpoints } from './webhook-endpoints';

/** The redelivery workflow's memo key naming the registered endpoint it is for (absent: every endpoint). */
const ENDPOINT_MEMO = 'redelivery_endpoint';

/** Where one redelivery goes: its delivery input's targets and schedule, and what is shown before it answers. */
interface Plan {
  input: Pick<EventDeliveryInput, 'endpoints' | 'schedule' | 'endpoint_ids'>;
  hosts: string[];
}

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
    private readonly endpoints?: WebhookEndpoints,
  ) {}

  /** Sends the event again; answers the redelivery (a running one to the same target when there is one). */
  async redeliver(eventId: string, opts: { endpoint?: string } = {}): Promise<Redelivery> {
    if (opts.endpoint !== undefined) checkEndpointId(opts.endpoint, 'endpoint');
    const event = await this.reader.get(eventId);
    const plan = opts.endpoint !== undefined ? await this.toEndpoint(event, opts.endpoint) : await this.toAll(event);
    const temporal = this.gate.temporal;
    for (let n = 1; n <= MAX_REDELIVERIES; n++) {
      const id = redeliveryId(eventId, n);
      const running = await this.gate.guard(() => temporal.workflow.getHandle(id).describe()).then(
        (d) => ({ status: d.status.name, endpoint: d.memo?.[ENDPOINT_MEMO] as string | undefined }),
        (err: unknown) => {
          if (err instanceof WorkflowNotFoundError) return undefined;
          throw err;
        },
      );
      if (running !== undefined && (running.status !== 'RUNNING' || running.endpoint !== opts.endpoint)) continue;
      if (running === undefined) {
        const { flow_id: _flowId, deliveries: _d, ...flowEvent } = event;
        const input: EventDeliveryInput = {
          flow_id: event.flow_id,
          ...plan.input,
          schedule: { ...plan.input.schedule, retry_for_ms: Math.max(0, Date.now() - Date.parse(event.timestamp)) + REDELIVERY_RETRY_MS },
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
            ...(opts.endpoint !== undefined ? { memo: { [ENDPOINT_MEMO]: opts.endpoint } } : {}),
          }),
        );
      }
      return { id, event_id: eventId, deliveries: plan.hosts.map((endpoint) => ({ endpoint, state: 'pending', attempts: 0 })) };
    }
    throw new EventNotDeliverableError(`event ${eventId} was redelivered ${MAX_REDELIVERIES} times already; see GET /v1/events/${eventId}`);
  }

  /** To the flow's endpoints and every registered endpoint that takes the event now. */
  private async toAll(event: MerchantEventDetail): Promise<Plan> {
    const first = await this.firstDeliveryInput(event.flow_id);
    const registered = this.endpoints ? (await this.endpoints.list()).filter((e) => endpointTakes(e, event.type)) : [];
    const endpoints = first?.endpoints ?? [];
    if (endpoints.length === 0 && registered.length === 0) {
      throw new EventNotDeliverableError(
        `the events of ${event.flow_id} had no endpoint when they happened (no MERCHANT_WEBHOOK_URL or webhook_url, or no signing secret) and no registered webhook endpoint takes ${event.type}: nothing to redeliver to; read them with GET /v1/events`,
      );
    }
    return { input: { endpoints, schedule: first?.schedule ?? NO_MERCHANT_EVENTS.schedule }, hosts: [...endpoints.map(endpointHost), ...registered.map((e) => endpointHost(e.url))] };
  }

  /** To one registered endpoint: it must be enabled and take the event's type. */
  private async toEndpoint(event: MerchantEventDetail, endpointId: string): Promise<Plan> {
    if (!this.endpoints) throw new EventNotDeliverableError('this client has no webhook endpoints');
    const e = await this.endpoints.get(endpointId);
    if (e.status !== 'enabled') throw new EventNotDeliverableError(`webhook endpoint ${endpointId} is disabled: enable it first`);
    if (!endpointTakes(e, event.type)) throw new EventNotDeliverableError(`webhook endpoint ${endpointId} does not take ${event.type} events (see its enabled_events)`);
    const first = await this.firstDeliveryInput(event.flow_id);
    return { input: { endpoints: [], endpoint_ids: [endpointId], schedule: first?.schedule ?? NO_MERCHANT_EVENTS.schedule }, hosts: [endpointHost(e.url)] };
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

  /** The endpoints and schedule of the flow's own delivery workflow (its start input); undefined when it had none. */
  private async firstDeliveryInput(flowId: string): Promise<EventDeliveryInput | undefined> {
    const temporal = this.gate.temporal;
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
    if (!payloads) return undefined;
    const [input] = (await decodeArrayFromPayloads(temporal.options.loadedDataConverter, payloads)) as [EventDeliveryInput | undefined];
    return input && Array.isArray(input.endpoints) ? input : undefined;
  }
}
