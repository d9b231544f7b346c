/**
 * Lists of flows from Temporal's visibility store, by the flows' search attributes (MpfFlowKind,
 * MpfState) and start time, newest first, with an opaque page token. Visibility is eventually
 * consistent: a flow that changed state a moment ago may still be listed under its former state
 * (its own view, GET /v1/swaps/{id}, is always current). Lists are scoped to the client's task
 * queue, so deployments sharing a namespace do not see each other's flows.
 *
 * Each item carries the flow's amount, currency and customer reference from its memo (`mpf_list`,
 * set by the starter at start and encrypted by the payload codec like every memo value), which a
 * visibility page brings with it: no query, no worker. A list filters by txn_ref (MpfTxnRef) and
 * by customer reference through MpfCustomerRef, a keyed hash (HMAC-SHA256, purpose customer_ref)
 * the starter sets at start, since search attributes are not encrypted. Flows started before
 * either existed carry no such fields and match no customer filter.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { deriveKeys } from '../../codec/derive';
import type { Client } from '@temporalio/client';
import { decodeMapFromPayloads } from '@temporalio/common/lib/internal-non-workflow';
import type { temporal } from '@temporalio/proto';
import { z } from 'zod';
import type { KeyRing } from '../../codec/keys';
import { describeZodError, Reference } from '../../contract/provider';
import { GrpcStatus, hasGrpcCode } from '../../temporal/grpc-status';
import { closedFlowOutcome, EXECUTION_OF_STATUS } from '../../workflows/closed-flows';
import type { FlowKind } from '../../workflows/flow-ids';
import { InputError } from './errors';
import { isDeadlineExceeded } from './temporal-errors';
import { keywordOf } from './timeline';

export const LIST_MAX_LIMIT = 100;
export const LIST_DEFAULT_LIMIT = 20;

const STATE = /^[a-z_]{1,40}$/;

/** What a list asks for (after validation). */
export interface ListFilter {
  state?: string;
  /** Flows started at or after this instant (ISO 8601). */
  created_from?: string;
  /** Flows started before this instant (ISO 8601). */
  created_to?: string;
  /** Only the flow of this merchant reference (txn_ref of a swap, txn_merchant_ref of a link). */
  txn_ref?: string;
  /** Only flows of this customer reference (user_ref; customer_ref is its other name). */
  user_ref?: string;
  customer_ref?: string;
  limit?: number;
  page_token?: string;
}

/** The memo field a flow's list item reads (set by the starter at start; encrypted like every memo value). */
export const LIST_MEMO_FIELD = 'mpf_list';

/** What a list item shows of a flow beside its search attributes: the amount, its currency, the customer. */
export interface ListMemo {
  amount: number;
  /** A swap's from_currency (its amount is in it); a link's currency. */
  currency: string;
  /** The flow's user_ref (a payment link's too: the customer reference its request carries). */
  customer_ref: string;
}

/**
 * The value of MpfCustomerRef for a customer reference under each key of the ring (the active key
 * first): the starter sets the first; a list matches any, so flows started before a key rotation
 * are still found while their key is in the ring.
 */
export function customerRefHashes(keys: string | KeyRing, customerRef: string): string[] {
  return [...deriveKeys(keys, 'customer_ref').keys.values()].map((key) => createHmac('sha256', key).update(customerRef, 'utf8').digest('base64url'));
}

/** One page's size and the token of the next: the same in every list (flows, events). */
export const pageFields = (what: string) => ({
  limit: z.coerce
    .number()
    .int('must be a whole number')
    .min(1, 'must be at least 1')
    .max(LIST_MAX_LIMIT, `must be at most ${LIST_MAX_LIMIT}`)
    .optional()
    .describe(`${what} per page (1-${LIST_MAX_LIMIT}, default ${LIST_DEFAULT_LIMIT})`),
  page_token: z.string().max(4096, 'is too long').optional().describe('next_page_token of the previous page (same filters)'),
});

const LIST_FIELDS = {
  state: z.string().regex(STATE, 'must be a state name').optional().describe("only flows in this state (the flow's MpfState)"),
  created_from: z.iso
    .datetime({ offset: true, message: 'must be an ISO 8601 date-time, e.g. 2026-01-31T00:00:00Z' })
    .optional()
    .describe('only flows started at or after this instant (ISO 8601)'),
  created_to: z.iso
    .datetime({ offset: true, message: 'must be an ISO 8601 date-time, e.g. 2026-02-01T00:00:00Z' })
    .optional()
    .describe('only flows started before this instant (ISO 8601)'),
  txn_ref: Reference.optional().describe("only the flow of this merchant reference: a swap's txn_ref, a payment link's txn_merchant_ref (exact match)"),
  user_ref: Reference.optional().describe(
    'only flows of this customer reference, the user_ref of the start (exact match; flows started before this filter existed never match)',
  ),
  customer_ref: Reference.optional().describe('the same filter as user_ref, by its name in list items'),
  ...pageFields('flows'),
};

/** The list parameters as documented (the gateway's querystring; unknown ones are refused by parseListFilter). */
export const ListQueryDoc = z.looseObject(LIST_FIELDS);

export const ListQuery = z
  .strictObject(LIST_FIELDS)
  .refine((q) => !q.created_from || !q.created_to || Date.parse(q.created_from) < Date.parse(q.created_to), {
    message: 'must be after created_from',
    path: ['created_to'],
  })
  .refine((q) => !q.user_ref || !q.customer_ref || q.user_ref === q.customer_ref, {
    message: 'must equal user_ref when both are given (they are one filter)',
    path: ['customer_ref'],
  });

export interface FlowListItem {
  flow_id: string;
  kind: FlowKind;
  /** txn_ref (swap) or txn_merchant_ref (payment link). */
  reference: string | undefined;
  /** The flow's state as last published (MpfState). */
  state: string | undefined;
  /** Temporal's execution status: RUNNING, COMPLETED, TERMINATED, … */
  execution_status: string;
  created_at: string | undefined;
  closed_at: string | undefined;
  /** From the flow's memo; absent on flows started before it was kept. */
  amount?: number;
  currency?: string;
  customer_ref?: string;
}

export interface FlowPage {
  items: FlowListItem[];
  /** Pass as page_token for the next page; absent on the last page. */
  next_page_token?: string;
}

/** Validates a list query ("field: rule" InputError naming the field). */
export function parseListFilter(raw: unknown, states?: readonly string[]): ListFilter {
  const r = ListQuery.safeParse(raw ?? {});
  if (!r.success) {
    const issue = r.error.issues[0];
    const field = issue?.code === 'unrecognized_keys' ? String(issue.keys[0]) : (issue?.path.map(String).join('.') ?? 'query');
    const message = issue?.code === 'unrecognized_keys' ? `${field}: is not a list parameter (state, created_from, created_to, txn_ref, user_ref, customer_ref, limit, page_token)` : describeZodError(r.error);
    throw new InputError(message, field);
  }
  if (r.data.state !== undefined && states && !states.includes(r.data.state)) throw new InputError(`state: must be one of ${states.join(', ')}`, 'state');
  return r.data;
}

const KIND_LABEL: Record<FlowKind, string> = { swap: 'swap', payment_link: 'payment_link' };

/**
 * The visibility query of a filter (values are validated or re-formatted, never pasted raw: a
 * reference is letters, digits and `._:-`). `customerHashes`: MpfCustomerRef values of the
 * filter's user_ref (customerRefHashes), without which a customer filter is not applied.
 */
export function visibilityQuery(kinds: readonly FlowKind[], taskQueue: string, f: ListFilter, customerHashes: readonly string[] = []): string {
  const parts = [
    kinds.length === 1 ? `MpfFlowKind = '${KIND_LABEL[kinds[0]!]}'` : `MpfFlowKind IN (${kinds.map((k) => `'${KIND_LABEL[k]}'`).join(', ')})`,
    `TaskQueue = '${taskQueue.replace(/'/g, "\\'")}'`,
  ];
  if (f.state) parts.push(`MpfState = '${f.state}'`);
  if (f.created_from) parts.push(`StartTime >= '${new Date(f.created_from).toISOString()}'`);
  if (f.created_to) parts.push(`StartTime < '${new Date(f.created_to).toISOString()}'`);
  if (f.txn_ref) parts.push(`MpfTxnRef = '${f.txn_ref}'`);
  if (customerHashes.length === 1) parts.push(`MpfCustomerRef = '${customerHashes[0]!}'`);
  else if (customerHashes.length > 1) parts.push(`MpfCustomerRef IN (${customerHashes.map((h) => `'${h}'`).join(', ')})`);
  return parts.join(' AND ');
}

const queryTag = (q: string): string => createHash('sha256').update(q).digest('base64url').slice(0, 16);
const NOT_OURS = 'page_token: is not a page token of this list';

/**
 * Page tokens are authenticated: an HMAC-SHA256 under a key derived (HKDF) from each payload key,
 * so every gateway of a deployment checks the others' tokens, and a crafted token is refused with
 * 400 before anything reaches Temporal. The newest key signs; any key of the ring verifies.
 */
export class PageTokens {
  private readonly keys: { id: string; key: Buffer }[];

  constructor(keys: string | KeyRing) {
    // The active key first: it signs; every key verifies.
    this.keys = [...deriveKeys(keys, 'page_token').keys].map(([id, key]) => ({ id, key }));
  }

  private mac(key: Buffer, body: string): Buffer {
    return createHmac('sha256', key).update(body).digest();
  }

  encode(query: string, token: Uint8Array): string {
    const body = Buffer.from(JSON.stringify({ v: 2, q: queryTag(query), t: Buffer.from(token).toString('base64') })).toString('base64url');
    return `${body}.${this.mac(this.keys[0]!.key, body).toString('base64url')}`;
  }

  decode(query: string, pageToken: string): Buffer {
    const [body, sig, extra] = pageToken.split('.');
    if (!body || !sig || extra !== undefined) throw new InputError(NOT_OURS, 'page_token');
    const given = Buffer.from(sig, 'base64url');
    const authentic = this.keys.some(({ key }) => {
      const want = this.mac(key, body);
      return given.length === want.length && timingSafeEqual(given, want);
    });
    if (!authentic) throw new InputError(NOT_OURS, 'page_token');
    let parsed: { v?: unknown; q?: unknown; t?: unknown };
    try {
      parsed = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as typeof parsed;
    } catch {
      throw new InputError(NOT_OURS, 'page_token');
    }
    if (parsed?.v !== 2 || typeof parsed.t !== 'string') throw new InputError(NOT_OURS, 'page_token');
    if (parsed.q !== queryTag(query)) throw new InputError('page_token: belongs to a list with other filters (keep state, created_from, created_to, txn_ref and user_ref)', 'page_token');
    return Buffer.from(parsed.t, 'base64');
  }
}

/** The server refused a call for a search attribute the namespace does not define (a start: nothing was started). */
export function isUnknownSearchAttribute(err: unknown, name: string): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (hasGrpcCode(e, GrpcStatus.INVALID_ARGUMENT) && e.message.includes(name) && /search attribute/i.test(e.message)) return true;
  }
  return false;
}

/** How long a list call with a page token may take before the token is suspected (see listFlows). */
const TOKEN_CALL_MS = 5_000;

function keyword(info: temporal.api.workflow.v1.IWorkflowExecutionInfo, name: string): string | undefined {
  return keywordOf(info.searchAttributes?.indexedFields?.[name]);
}

function isoOf(ts: temporal.api.workflow.v1.IWorkflowExecutionInfo['startTime']): string | undefined {
  if (!ts?.seconds) return undefined;
  return new Date(Number(ts.seconds) * 1000 + Math.floor((ts.nanos ?? 0) / 1e6)).toISOString();
}

const STATUS_NAMES: Record<number, string> = { 1: 'RUNNING', 2: 'COMPLETED', 3: 'FAILED', 4: 'CANCELLED', 5: 'TERMINATED', 6: 'CONTINUED_AS_NEW', 7: 'TIMED_OUT' };

/**
 * The runs of a page that were closed from outside (terminated, timed out, failed, cancelled in
 * Temporal) and are carried on by a newer run of the same flow (closedFlowWorkflow): a flow is
 * listed once, by its newest run. One describe per such run (rare: an operator's break-glass act).
 */
export async function carriedOnRuns(client: Client, executions: readonly temporal.api.workflow.v1.IWorkflowExecutionInfo[]): Promise<Set<string>> {
  const out = new Set<string>();
  await Promise.all(
    executions
      .filter((x) => EXECUTION_OF_STATUS[STATUS_NAMES[Number(x.status ?? 0)] ?? ''] !== undefined)
      .map(async (x) => {
        const { workflowId, runId } = x.execution ?? {};
        if (!workflowId || !runId) return;
        const latest = await client.workflow.getHandle(workflowId).describe().catch(() => undefined);
        if (latest && latest.runId !== runId) out.add(runId);
      }),
  );
  return out;
}

/** The amount, currency and customer of a listed flow, from its memo (undefined fields when it keeps none). */
async function listMemoOf(client: Client, info: temporal.api.workflow.v1.IWorkflowExecutionInfo): Promise<Partial<ListMemo>> {
  const payload = info.memo?.fields?.[LIST_MEMO_FIELD];
  if (!payload) return {};
  try {
    const map = await decodeMapFromPayloads(client.options.loadedDataConverter, { [LIST_MEMO_FIELD]: payload });
    const decoded = map?.[LIST_MEMO_FIELD] as Partial<ListMemo> | undefined;
    const out: Partial<ListMemo> = {};
    if (typeof decoded?.amount === 'number') out.amount = decoded.amount;
    if (typeof decoded?.currency === 'string') out.currency = decoded.currency;
    if (typeof decoded?.customer_ref === 'string') out.customer_ref = decoded.customer_ref;
    return out;
  } catch {
    // Sealed under a key no longer in the ring: the item is listed without them.
    return {};
  }
}

/** One page of flows of `kinds` matching `f`. `keys`: the payload keys, for a customer filter's hashes. */
export async function listFlows(client: Client, taskQueue: string, kinds: readonly FlowKind[], f: ListFilter, tokens: PageTokens, keys?: string | KeyRing): Promise<FlowPage> {
  const customer = f.user_ref ?? f.customer_ref;
  if (customer && !keys) throw new InputError('user_ref: this client cannot filter by customer (no payload keys)', 'user_ref');
  const query = visibilityQuery(kinds, taskQueue, f, customer && keys ? customerRefHashes(keys, customer) : []);
  const nextPageToken = f.page_token ? tokens.decode(query, f.page_token) : undefined;
  let res;
  const call = () => client.workflowService.listWorkflowExecutions({ namespace: client.options.namespace, pageSize: f.limit ?? LIST_DEFAULT_LIMIT, nextPageToken, query });
  try {
    // With a token, a bounded wait: the client retries a refusal answered UNKNOWN for many seconds.
    res = nextPageToken ? await client.withDeadline(Date.now() + TOKEN_CALL_MS, call) : await call();
  } catch (err) {
    // A namespace without MpfCustomerRef yet (workers of the release before): no flow carries it.
    if (customer && isUnknownSearchAttribute(err, 'MpfCustomerRef')) return { items: [] };
    // An authentic token Temporal does not take (e.g. after a visibility store change; the dev
    // server answers UNKNOWN, others INVALID_ARGUMENT): the caller's input, when the same query
    // without the token is answered.
    if (nextPageToken && (hasGrpcCode(err, GrpcStatus.INVALID_ARGUMENT, GrpcStatus.UNKNOWN) || isDeadlineExceeded(err))) {
      const fine = await client.workflowService.listWorkflowExecutions({ namespace: client.options.namespace, pageSize: 1, query }).then(
        () => true,
        () => false,
      );
      if (fine) throw new InputError('page_token: has expired or is no longer valid; start the list again without it', 'page_token');
    }
    throw err;
  }
  const carried = await carriedOnRuns(client, res.executions ?? []);
  const listed = (res.executions ?? []).filter((info) => !carried.has(info.execution?.runId ?? ''));
  const memos = await Promise.all(listed.map((info) => listMemoOf(client, info)));
  const items: FlowListItem[] = listed.map((info, i) => {
      const kind = (keyword(info, 'MpfFlowKind') as FlowKind | undefined) ?? kinds[0]!;
      const execution_status = STATUS_NAMES[Number(info.status ?? 0)] ?? 'UNKNOWN';
      const last = keyword(info, 'MpfState');
      // Closed from outside and not yet carried on: the state it truthfully ended in (closed-flows.ts).
      const execution = EXECUTION_OF_STATUS[execution_status];
      const state = execution && last ? (closedFlowOutcome(kind, last, execution)?.state ?? last) : last;
      return {
        flow_id: info.execution?.workflowId ?? '',
        kind,
        reference: keyword(info, 'MpfTxnRef'),
        state,
        execution_status,
        created_at: isoOf(info.startTime),
        closed_at: isoOf(info.closeTime),
        ...memos[i],
      };
    });
  const token = res.nextPageToken && res.nextPageToken.length > 0 ? tokens.encode(query, res.nextPageToken) : undefined;
  return token ? { items, next_page_token: token } : { items };
}
