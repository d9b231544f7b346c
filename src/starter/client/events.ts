/**
 * The merchant events API (read side): one event by id with its delivery attempts per endpoint,
 * and the list of events across flows with filters and cursor pages. Each flow keeps its events in
 * full in its memo (`mpf_events`, event-outbox.ts), which visibility lists and describe answers
 * with no worker and no replay; a flow of a release before that is asked by its `events` query (a
 * worker replays it). Their deliveries are kept by `events-<flow_id>` (merchant-events.ts). Nothing
 * else stores them: they live as long as the flows — the namespace's retention after a flow
 * closed (30 days by default, docs/operations/scaling.md).
 *
 * The list is newest first across flows (by when each event happened); a page's token is its last
 * event, and a page is short only when it is the last.
 */
import { QueryNotRegisteredError, WorkflowNotFoundError } from '@temporalio/client';
import { decodeMapFromPayloads } from '@temporalio/common/lib/internal-non-workflow';
import type { temporal } from '@temporalio/proto';
import { z } from 'zod';
import { describeZodError } from '../../contract/provider';
import { EVENT_PREFIX, FLOW_EVENT_TYPES, type FlowEvent, type FlowEventSummary, type DeliveryRecord } from '../../contract/merchant-events';
import { FLOW_ID_PREFIX, FLOW_ID_WORDS, type FlowKind } from '../../contract/flow-kinds';
import { CLOSED_FLOW_WORKFLOW_TYPE } from '../../workflows/closed-flows';
import { flowEventsQuery } from '../../workflows/event-types';
import { InputError, FlowNotFoundError, WorkerUnavailableError } from './errors';
import type { TemporalGate } from './health';
import { carriedOnRuns, LIST_DEFAULT_LIMIT, pageFields, type PageTokens, visibilityQuery } from './lists';
import { readDeliveries, withDeliveries } from './merchant-events';
import { isDeadlineExceeded, isNoPoller } from './temporal-errors';
import { keywordOf, memoEventsOf } from './timeline';
import { FLOW_STATE } from '../../workflows/search-attributes';

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
/** Flows of a release before mpf-events-memo-v1 (no events in their memo) whose `events` query is asked at once. */
const READ_CONCURRENCY = 8;
/** Flows per visibility page (fixed: a page token belongs to its page size). Memos come with the page. */
const FLOW_PAGE_SIZE = 200;

/** The last event a page answered; the next page holds the events before it (newest first). */
interface Cursor {
  /** Its time, ms since the epoch. */
  ts: number;
  flow: string;
  /** Its number in its flow (evt_<flow>_<n>). */
  n: number;
}

/** An event as listed, with the sort key the order is made of. */
interface Listed {
  event: MerchantEvent;
  key: Cursor;
}

/** Newest first: by time, then flow id, then number (descending); negative when `a` comes first. */
function newestFirst(a: Cursor, b: Cursor): number {
  if (a.ts !== b.ts) return b.ts - a.ts;
  if (a.flow !== b.flow) return a.flow < b.flow ? 1 : -1;
  return b.n - a.n;
}

function keyOf(flowId: string, event: FlowEvent, index: number): Cursor {
  const n = Number(/_([0-9]+)$/.exec(event.id)?.[1] ?? index + 1);
  return { ts: Date.parse(event.timestamp), flow: flowId, n };
}

function closeMs(x: temporal.api.workflow.v1.IWorkflowExecutionInfo): number {
  const t = x.closeTime;
  if (!t?.seconds && !t?.nanos) return Infinity; // running
  return Number(t.seconds ?? 0) * 1000 + Math.floor((t.nanos ?? 0) / 1e6);
}

export class MerchantEventsReader {
  constructor(
    private readonly gate: TemporalGate,
    private readonly taskQueue: string,
    private readonly tokens: PageTokens,
  ) {}

  /**
   * A flow's events in full, oldest first: from its memo by describe (no worker), or, for a flow
   * of an older release that keeps none, by its `events` query. FlowNotFoundError /
   * WorkerUnavailableError when unanswered.
   */
  async flowEvents(flowId: string): Promise<FlowEvent[]> {
    let kept: FlowEvent[] | undefined;
    try {
      const desc = await this.gate.guard(() => this.gate.temporal.workflow.getHandle(flowId).describe(), flowId);
      kept = memoEventsOf(desc.memo, { kind: kindOfFlow(flowId), state: desc.typedSearchAttributes.get(FLOW_STATE) });
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) throw new FlowNotFoundError(kindOfFlow(flowId), flowId);
      throw err;
    }
    return kept ?? this.queriedEvents(flowId);
  }

  /** The events of a flow that keeps none in its memo, by its query: a worker replays it. */
  private async queriedEvents(flowId: string): Promise<FlowEvent[]> {
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

  /**
   * One page of events matching `raw` (validated: a bad parameter is an InputError naming it),
   * newest first across flows. The flows come from visibility with their memos, running first
   * and then by close time, newest first; an event happens before its flow closes, so once the
   * walk passed close time C, no flow still to come holds an event after C: the newest `limit`
   * events read so far are the page as soon as they all happened after C. A page's token is its
   * last event; the next page is the events before it, from the flows started before it.
   */
  async list(raw: unknown): Promise<EventPage> {
    const f = parseEventFilter(raw);
    const limit = f.limit ?? LIST_DEFAULT_LIMIT;
    const query = this.flowQuery(f);
    const after = f.page_token ? this.decode(query, f.page_token) : undefined;
    // A run carrying on a flow closed from outside holds events from before it started: always walked.
    const walk = after ? `${query} AND (StartTime < '${new Date(after.ts + 1).toISOString()}' OR WorkflowType = '${CLOSED_FLOW_WORKFLOW_TYPE}')` : query;
    let best: Listed[] = [];
    let frontier = Infinity;
    let token: Uint8Array | undefined;
    for (;;) {
      const page = await this.gate.guard(() =>
        this.gate.temporal.workflowService.listWorkflowExecutions({
          namespace: this.gate.temporal.options.namespace,
          pageSize: FLOW_PAGE_SIZE,
          query: walk,
          ...(token ? { nextPageToken: token } : {}),
        }),
      );
      const executions = page.executions ?? [];
      const read = await this.readMany(executions, f, after);
      best = [...best, ...read].sort((a, b) => newestFirst(a.key, b.key)).slice(0, limit + 1);
      for (const x of executions) frontier = Math.min(frontier, closeMs(x));
      token = page.nextPageToken && page.nextPageToken.length > 0 ? page.nextPageToken : undefined;
      const settled = best.length >= limit && best[limit - 1]!.key.ts > Math.floor(frontier);
      if (settled || !token) return this.page(best, limit, query, best.length > limit || token !== undefined);
    }
  }

  private page(best: Listed[], limit: number, query: string, more: boolean): EventPage {
    const items = best.slice(0, limit).map((l) => l.event);
    const last = best[Math.min(limit, best.length) - 1];
    if (!more || !last) return { items };
    return { items, next_page_token: this.tokens.encode(query, Buffer.from(JSON.stringify(last.key))) };
  }

  private decode(query: string, token: string): Cursor {
    const raw = this.tokens.decode(query, token);
    try {
      const c = JSON.parse(raw.toString('utf8')) as Cursor;
      if (Number.isFinite(c.ts) && typeof c.flow === 'string' && Number.isInteger(c.n) && c.n >= 1) return c;
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

  /**
   * The matching events of a page of flows (before the cursor, when there is one): from each
   * flow's memo as visibility lists it, or, for a flow of an older release that keeps none, from
   * its query (WorkerUnavailableError when no worker answers it). A run carried on by a newer one
   * is skipped: the flow's events are its newest run's.
   */
  private async readMany(executions: temporal.api.workflow.v1.IWorkflowExecutionInfo[], f: EventFilter, after: Cursor | undefined): Promise<Listed[]> {
    const carried = await carriedOnRuns(this.gate.temporal, executions);
    const converter = this.gate.temporal.options.loadedDataConverter;
    const flows = await Promise.all(
      executions
        .filter((x) => x.execution?.workflowId && !carried.has(x.execution.runId ?? ''))
        .map(async (x) => {
          const fields = x.memo?.fields;
          const memo = fields ? ((await decodeMapFromPayloads(converter, fields)) as Record<string, unknown>) : undefined;
          const flowId = x.execution!.workflowId!;
          return { flowId, events: memoEventsOf(memo, { kind: kindOfFlow(flowId), state: keywordOf(x.searchAttributes?.indexedFields?.[FLOW_STATE.name]) }) };
        }),
    );
    const older = flows.filter((x) => x.events === undefined);
    let next = 0;
    const work = async (): Promise<void> => {
      while (next < older.length) {
        const flow = older[next++]!;
        flow.events = await this.queriedEvents(flow.flowId).catch((err: unknown) => {
          if (err instanceof FlowNotFoundError) return []; // deleted by retention between the list and the read
          throw err;
        });
      }
    };
    await Promise.all(Array.from({ length: Math.min(READ_CONCURRENCY, older.length) }, work));
    const from = f.created_from ? Date.parse(f.created_from) : -Infinity;
    const to = f.created_to ? Date.parse(f.created_to) : Infinity;
    return flows.flatMap(({ flowId, events }) =>
      (events ?? []).flatMap((e, i): Listed[] => {
        const key = keyOf(flowId, e, i);
        if (f.type && e.type !== f.type) return [];
        if (key.ts < from || key.ts >= to || (after && newestFirst(key, after) <= 0)) return [];
        return [{ event: { ...e, flow_id: flowId }, key }];
      }),
    );
  }
}
