/**
 * The merchant events API (read side): one event by id with its delivery attempts per endpoint,
 * and the list of events across flows with filters and cursor pages. Events are kept by their
 * flows (the `events` query of every swap and link, full data) and their deliveries by
 * `events-<flow_id>` (merchant-events.ts): nothing else stores them, so they live as long as the
 * flows' histories — the namespace's retention after a flow closed (docs/merchant-events.md).
 *
 * The list walks the flows Temporal visibility lists (running first, then by close time, newest
 * first) and, within a flow, its events newest first; a page may hold fewer than `limit` events
 * when few flows match, and `next_page_token` goes on.
 */
import { QueryNotRegisteredError, WorkflowNotFoundError } from '@temporalio/client';
import { z } from 'zod';
import { describeZodError } from '../../contract/provider';
import { EVENT_PREFIX, FLOW_EVENT_TYPES, type FlowEvent, type FlowEventSummary, type DeliveryRecord } from '../../contract/merchant-events';
import { FLOW_ID_PREFIX, FLOW_ID_WORDS, type FlowKind } from '../../contract/flow-kinds';
import { flowEventsQuery } from '../../workflows/event-types';
import { InputError, FlowNotFoundError, WorkerUnavailableError } from './errors';
import type { TemporalGate } from './health';
import { carriedOnRuns, LIST_DEFAULT_LIMIT, pageFields, type PageTokens, visibilityQuery } from './lists';
import { readDeliveries, withDeliveries } from './merchant-events';
import { isDeadlineExceeded, isNoPoller } from './temporal-errors';

/** An event as the API answers it: the webhook body, plus the flow it belongs to. */
export interface MerchantEvent extends FlowEvent {
  flow_id: string;
}

/** One event with its delivery attempts, one record per endpoint (hosts only). */
export interface MerchantEventDetail extends MerchantEvent {
  deliveries: Array<Omit<DeliveryRecord, 'event_id' | 'type'>>;
}

export interface EventPage {
  items: MerchantEvent[];
  next_page_token?: string;
}

const ISO = (what: string) =>
  z.iso.datetime({ offset: true, message: `must be an ISO 8601 date-time, e.g. 2026-01-31T00:00:00Z` }).optional().describe(what);

const EVENT_LIST_FIELDS = {
  type: z
    .enum(FLOW_EVENT_TYPES as [string, ...string[]], { message: `must be one of ${FLOW_EVENT_TYPES.join(', ')}` })
    .optional()
    .describe("only events of this type (flows' events; the provider guard's are in GET /v1/admin/provider)"),
  flow_id: z
    .string()
    .regex(new RegExp(`^(${FLOW_ID_WORDS})-[\\x21-\\x7e]{1,120}$`), `must be a flow id (${FLOW_ID_PREFIX.swap}<txn_ref> or ${FLOW_ID_PREFIX.payment_link}<txn_merchant_ref>)`)
    .optional()
    .describe("only this flow's events"),
  created_from: ISO('only events that happened at or after this instant'),
  created_to: ISO('only events that happened before this instant'),
  ...pageFields('events'),
};

/** The list parameters as documented (the gateway's querystring; unknown ones are refused by parseEventFilter). */
export const EventListQueryDoc = z.looseObject(EVENT_LIST_FIELDS);
const EventListQuery = z
  .strictObject(EVENT_LIST_FIELDS)
  .refine((q) => !q.created_from || !q.created_to || Date.parse(q.created_from) < Date.parse(q.created_to), { message: 'must be after created_from', path: ['created_to'] });
export type EventFilter = z.infer<typeof EventListQuery>;

export function parseEventFilter(raw: unknown): EventFilter {
  const r = EventListQuery.safeParse(raw ?? {});
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  if (issue?.code === 'unrecognized_keys') {
    const field = String(issue.keys[0]);
    throw new InputError(`${field}: is not an events list parameter (type, flow_id, created_from, created_to, limit, page_token)`, field);
  }
  throw new InputError(describeZodError(r.error), issue?.path.map(String).join('.') || 'query');
}

const EVENT_ID = new RegExp(`^evt_((?:${FLOW_ID_WORDS})-[\\x21-\\x7e]{1,120})_([1-9][0-9]{0,5})$`);

/** The flow and sequence number of an event id (`evt_<flow_id>_<n>`); InputError naming event_id otherwise. */
export function parseEventId(eventId: string): { flowId: string; seq: number } {
  const m = EVENT_ID.exec(eventId);
  if (!m) throw new InputError('event_id: must be an event id, evt_<flow_id>_<n> (as a delivery\'s webhook-id or an event\'s id)', 'event_id');
  return { flowId: m[1]!, seq: Number(m[2]) };
}

const kindOfFlow = (flowId: string): FlowKind => (flowId.startsWith(FLOW_ID_PREFIX.payment_link) ? 'payment_link' : 'swap');
/** How many flows one list call reads at most before it answers what it found (and a token). */
const MAX_FLOWS_PER_CALL = 200;
/** Flows whose events are read at once. */
const READ_CONCURRENCY = 8;
/** Flows per visibility page (fixed: a page token belongs to its page size). */
const FLOW_PAGE_SIZE = 25;

interface Cursor {
  /** The visibility page being walked (base64; absent: the first page). */
  t?: string;
  /** Flows of that page already walked. */
  f: number;
  /** Events of the next flow already answered. */
  e: number;
}

export class MerchantEventsReader {
  constructor(
    private readonly gate: TemporalGate,
    private readonly taskQueue: string,
    private readonly tokens: PageTokens,
  ) {}

  /** A flow's events in full, oldest first. FlowNotFoundError / WorkerUnavailableError when unanswered. */
  async flowEvents(flowId: string): Promise<FlowEvent[]> {
    try {
      return await this.gate.guard(() => this.gate.queryWithinDeadline(flowId, flowEventsQuery), flowId);
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) throw new FlowNotFoundError(kindOfFlow(flowId), flowId);
      if (isDeadlineExceeded(err) || isNoPoller(err)) throw new WorkerUnavailableError(kindOfFlow(flowId), flowId, this.gate.queryAnswerTimeoutMs(), undefined);
      // A worker of a release before the events query: its flows' events are read by a newer one.
      if (err instanceof QueryNotRegisteredError) {
        throw new WorkerUnavailableError(kindOfFlow(flowId), flowId, this.gate.queryAnswerTimeoutMs(), undefined);
      }
      throw err;
    }
  }

  /** One event with its delivery attempts; FlowNotFoundError (404) when there is no such event. */
  async get(eventId: string): Promise<MerchantEventDetail> {
    const { flowId, seq } = parseEventId(eventId);
    const events = await this.flowEvents(flowId).catch((err: unknown) => {
      throw err instanceof FlowNotFoundError ? new FlowNotFoundError('event', eventId) : err;
    });
    const event = events[seq - 1];
    if (!event || event.id !== eventId) throw new FlowNotFoundError('event', eventId);
    const waitMs = Math.min(this.gate.queryAnswerTimeoutMs(), 5_000);
    const merged = withDeliveries({ events: [{ id: event.id, type: event.type, timestamp: event.timestamp }] as FlowEventSummary[] }, await readDeliveries(this.gate.temporal, flowId, waitMs));
    return { ...event, flow_id: flowId, deliveries: merged.events[0]?.deliveries ?? [] };
  }

  /** One page of events matching `raw` (validated: a bad parameter is an InputError naming it). */
  async list(raw: unknown): Promise<EventPage> {
    const f = parseEventFilter(raw);
    const limit = f.limit ?? LIST_DEFAULT_LIMIT;
    const query = this.flowQuery(f);
    let cursor: Cursor = f.page_token ? this.decode(query, f.page_token) : { f: 0, e: 0 };
    const items: MerchantEvent[] = [];
    let flowsRead = 0;
    for (;;) {
      const page = await this.gate.guard(() =>
        this.gate.temporal.workflowService.listWorkflowExecutions({
          namespace: this.gate.temporal.options.namespace,
          pageSize: FLOW_PAGE_SIZE,
          query,
          ...(cursor.t ? { nextPageToken: Buffer.from(cursor.t, 'base64') } : {}),
        }),
      );
      // A run carried on by a newer one reads as no flow ('': no events): the flow's events are its newest run's.
      const carried = await carriedOnRuns(this.gate.temporal, page.executions ?? []);
      const flows = (page.executions ?? []).map((x) => (carried.has(x.execution?.runId ?? '') ? '' : (x.execution?.workflowId ?? ''))).slice(cursor.f);
      const read = await this.readMany(flows, f);
      for (let i = 0; i < read.length; i++) {
        const events = read[i]!.slice(i === 0 ? cursor.e : 0);
        const room = limit - items.length;
        items.push(...events.slice(0, room));
        if (items.length === limit) {
          const taken = (i === 0 ? cursor.e : 0) + Math.min(room, events.length);
          const next: Cursor | undefined =
            taken < read[i]!.length ? { ...cursor, f: cursor.f + i, e: taken } : this.after(cursor, cursor.f + i + 1, page.executions?.length ?? 0, page.nextPageToken);
          return this.page(items, query, next);
        }
      }
      flowsRead += flows.length;
      const next = this.after(cursor, Infinity, 0, page.nextPageToken);
      if (!next || flowsRead >= MAX_FLOWS_PER_CALL) return this.page(items, query, next);
      cursor = next;
    }
  }

  /** Where the walk goes on after the flow at index `f` of a page of `n` flows. */
  private after(cursor: Cursor, f: number, n: number, nextPageToken: Uint8Array | null | undefined): Cursor | undefined {
    if (f < n) return { ...cursor, f, e: 0 };
    return nextPageToken && nextPageToken.length > 0 ? { t: Buffer.from(nextPageToken).toString('base64'), f: 0, e: 0 } : undefined;
  }

  private page(items: MerchantEvent[], query: string, next: Cursor | undefined): EventPage {
    return next ? { items, next_page_token: this.tokens.encode(query, Buffer.from(JSON.stringify(next))) } : { items };
  }

  private decode(query: string, token: string): Cursor {
    const raw = this.tokens.decode(query, token);
    try {
      const c = JSON.parse(raw.toString('utf8')) as Cursor;
      if (Number.isInteger(c.f) && Number.isInteger(c.e) && c.f >= 0 && c.e >= 0 && (c.t === undefined || typeof c.t === 'string')) return c;
    } catch {
      /* refused below */
    }
    throw new InputError('page_token: is not a page token of this list', 'page_token');
  }

  /** The flows that can hold matching events: of the type's kind, started before created_to, not closed before created_from. */
  private flowQuery(f: EventFilter): string {
    const kinds: FlowKind[] = f.type ? [f.type.startsWith(`${EVENT_PREFIX.payment_link}.`) ? 'payment_link' : 'swap'] : f.flow_id ? [kindOfFlow(f.flow_id)] : ['swap', 'payment_link'];
    const parts = [visibilityQuery(kinds, this.taskQueue, f.created_to ? { created_to: f.created_to } : {})];
    if (f.flow_id) parts.push(`WorkflowId = '${f.flow_id.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`);
    if (f.created_from) parts.push(`(ExecutionStatus = 'Running' OR CloseTime >= '${new Date(f.created_from).toISOString()}')`);
    return parts.join(' AND ');
  }

  /** Each flow's matching events, newest first (a flow whose events cannot be read now: WorkerUnavailableError). */
  private async readMany(flowIds: string[], f: EventFilter): Promise<MerchantEvent[][]> {
    const out: MerchantEvent[][] = new Array<MerchantEvent[]>(flowIds.length);
    let next = 0;
    const from = f.created_from ? Date.parse(f.created_from) : -Infinity;
    const to = f.created_to ? Date.parse(f.created_to) : Infinity;
    const work = async (): Promise<void> => {
      while (next < flowIds.length) {
        const i = next++;
        const flowId = flowIds[i]!;
        const events = await (flowId === '' ? Promise.resolve<FlowEvent[]>([]) : this.flowEvents(flowId)).catch((err: unknown) => {
          if (err instanceof FlowNotFoundError) return []; // deleted by retention between the list and the read
          throw err;
        });
        out[i] = events
          .filter((e) => (!f.type || e.type === f.type) && Date.parse(e.timestamp) >= from && Date.parse(e.timestamp) < to)
          .map((e) => ({ ...e, flow_id: flowId }))
          .reverse();
      }
    };
    await Promise.all(Array.from({ length: Math.min(READ_CONCURRENCY, flowIds.length) }, work));
    return out;
  }
}
