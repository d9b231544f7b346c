/**
 * The payments pages: the list of swaps or payment links (search by txn_ref, user_ref, state and
 * creation date; paging), its CSV export for finance, and one payment (facts, timeline, events
 * with every delivery, redeliver and resolve for an operator). Everything read through the API.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { LINK_STATES, SWAP_STATES } from '../../workflows/messages';
import { callApi, queryOf, refusalOf, type ApiAnswer, type Json } from './api';
import { type ConsoleDeps, render } from './context';
import { amountText, CSV_COLUMNS, csvLine, rowOf, timeText } from './format';
import { mayAct, mayExport } from './roles';
import type { ConsoleSession } from './sessions';

type Kind = 'swap' | 'payment_link';
const LIST_PATH: Record<Kind, string> = { swap: '/v1/swaps', payment_link: '/v1/payment-links' };
const DATE = /^\d{4}-\d{2}-\d{2}$/;
/** The most rows a CSV export holds (pages of 100 from the API). */
export const CSV_MAX_ROWS = 10_000;

export interface PaymentsQuery {
  kind: Kind;
  txn_ref: string;
  user_ref: string;
  state: string;
  created_from: string;
  created_to: string;
  page_token: string;
}

const str = (v: unknown): string => (typeof v === 'string' ? v.trim().slice(0, 200) : '');

export function paymentsQueryOf(raw: unknown): PaymentsQuery {
  const q = (raw ?? {}) as Record<string, unknown>;
  return {
    kind: q.kind === 'payment_link' ? 'payment_link' : 'swap',
    txn_ref: str(q.txn_ref),
    user_ref: str(q.user_ref),
    state: str(q.state),
    created_from: str(q.created_from),
    created_to: str(q.created_to),
    page_token: typeof q.page_token === 'string' ? q.page_token.slice(0, 4096) : '',
  };
}

/** The API's query for the console's search; a malformed date names its field. */
export function apiQueryOf(q: PaymentsQuery, extra: Record<string, string> = {}): { query: Record<string, string | undefined> } | { problem: string } {
  for (const f of ['created_from', 'created_to'] as const) {
    if (q[f] && !DATE.test(q[f])) return { problem: `${f}: must be a date (YYYY-MM-DD)` };
  }
  return {
    query: {
      txn_ref: q.txn_ref,
      user_ref: q.user_ref,
      state: q.state,
      created_from: q.created_from ? `${q.created_from}T00:00:00Z` : undefined,
      created_to: q.created_to ? `${q.created_to}T00:00:00Z` : undefined,
      page_token: q.page_token,
      ...extra,
    },
  };
}

/** A list answer the console cannot show: why, in words (a filter this gateway does not take yet, a refusal). */
function listProblem(a: ApiAnswer): string {
  const message = String(a.json.message ?? '');
  if (a.status === 400 && /^(txn_ref|user_ref|customer_ref): is not a list parameter/.test(message)) {
    return `This gateway's list cannot search by ${message.split(':')[0]} yet; search by state and date instead.`;
  }
  return refusalOf(a);
}

async function paymentsPage(deps: ConsoleDeps, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const s = req.consoleSession!;
  const q = paymentsQueryOf(req.query);
  const states = q.kind === 'swap' ? SWAP_STATES : LINK_STATES;
  const base = { title: 'Payments', active: '/console/payments', q, states, rows: [] as unknown[] };
  const built = apiQueryOf(q);
  if ('problem' in built) return render(deps, req, reply, 'payments', { ...base, notice: built.problem }, 400);
  const a = await callApi(deps.gateway, s, 'GET', `${LIST_PATH[q.kind]}${queryOf(built.query)}`);
  if (a.status === 401) return reply.redirect('/console/sign-in?expired=1', 303);
  if (a.status !== 200) return render(deps, req, reply, 'payments', { ...base, notice: listProblem(a) }, a.status >= 500 ? 503 : 200);
  const items = (a.json.items ?? []) as Array<Json>;
  const { page_token: _p, ...sameFilters } = q;
  const next = a.json.next_page_token ? `/console/payments${queryOf({ ...sameFilters, page_token: String(a.json.next_page_token) })}` : undefined;
  const csv = mayExport(s.role) ? `/console/payments.csv${queryOf({ ...sameFilters })}` : undefined;
  return render(deps, req, reply, 'payments', { ...base, rows: items.map(rowOf), next, csv });
}

/** Every page of the list, as CSV: the API's items, field for field, with the same filters. */
async function paymentsCsv(deps: ConsoleDeps, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const s = req.consoleSession!;
  if (!mayExport(s.role)) return render(deps, req, reply, 'error', { title: 'Not allowed', heading: 'Not allowed', message: 'The CSV export is for finance (and operators).' }, 403);
  const q = paymentsQueryOf(req.query);
  const lines = [CSV_COLUMNS.join(',')];
  let token = '';
  do {
    const built = apiQueryOf({ ...q, page_token: token }, { limit: '100' });
    if ('problem' in built) return reply.code(400).type('text/plain; charset=utf-8').send(`${built.problem}\n`);
    const a = await callApi(deps.gateway, s, 'GET', `${LIST_PATH[q.kind]}${queryOf(built.query)}`);
    if (a.status !== 200) return reply.code(a.status >= 500 ? 503 : a.status).type('text/plain; charset=utf-8').send(`${listProblem(a)}\n`);
    for (const item of (a.json.items ?? []) as Array<Record<string, unknown>>) lines.push(csvLine(item));
    token = typeof a.json.next_page_token === 'string' ? a.json.next_page_token : '';
  } while (token && lines.length <= CSV_MAX_ROWS);
  const name = `payments-${q.kind}-${new Date().toISOString().slice(0, 10)}.csv`;
  return reply.type('text/csv; charset=utf-8').header('content-disposition', `attachment; filename="${name}"`).send(`${lines.join('\r\n')}\r\n`);
}

interface TimelineEntry {
  at: string;
  kind: string;
  name: string;
  outcome?: string;
  detail?: string;
}

/** Without the API's timeline: the flow's events, the provider's notifications and the resolution, in time order. */
function timelineFromView(view: Json): TimelineEntry[] {
  const out: TimelineEntry[] = [];
  for (const e of (view.events ?? []) as Array<Json>) out.push({ at: String(e.timestamp), kind: 'state', name: String(e.type) });
  for (const n of (view.notifications ?? []) as Array<Json>) {
    out.push({ at: String(n.received_at), kind: 'notification', name: "the provider's notification", outcome: String(n.outcome), detail: n.applied ? 'moved the flow' : `did not move the flow (${n.deliveries} deliveries)` });
  }
  const r = view.reconciliation as Json | undefined;
  if (r) out.push({ at: String(r.resolved_at), kind: 'operator', name: `resolved ${r.outcome}`, detail: `by ${r.operator}: ${r.note}` });
  return out.sort((a, b) => Date.parse(a.at) - Date.parse(b.at)).map((t) => ({ ...t, at: timeText(t.at) }));
}

function factsOf(kind: Kind, v: Json): Array<[string, string]> {
  const f: Array<[string, string | undefined]> =
    kind === 'swap'
      ? [['txn_ref', v.txn_ref], ['Customer (user_ref)', v.user_ref], ['Swap', `${v.from_currency} → ${v.to_currency}`], ['Converted', v.converted_amount !== undefined ? amountText(v.converted_amount, v.to_currency) : undefined],
         ['Rate', v.rate_used !== undefined ? String(v.rate_used) : undefined], ['PIN attempts', `${v.pin_attempts_used} used, ${v.pin_attempts_left} left`], ['Window ends', v.expires_at ? timeText(v.expires_at) : undefined]]
      : [['txn_merchant_ref', v.txn_merchant_ref], ['Customer (user_ref)', v.user_ref], ['Pay link', v.pay_link], ['Link expires', v.expires_at ? timeText(v.expires_at) : undefined]];
  f.push(['Provider reference', v.payment_ref], ['Updated', timeText(v.updated_at)]);
  const r = v.reconciliation as Json | undefined;
  if (r) f.push(['Resolved', `${r.outcome} by ${r.operator} at ${timeText(r.resolved_at)} (provider reference ${r.provider_reference}): ${r.note}`]);
  return f.filter((x): x is [string, string] => x[1] !== undefined && x[1] !== '');
}

/** The flow's events with every delivery: the first one per endpoint, then each redelivery's. */
async function eventsOf(deps: ConsoleDeps, s: ConsoleSession, view: Json): Promise<Array<Json>> {
  const events = ((view.events ?? []) as Array<Json>).slice(-30);
  return Promise.all(
    events.map(async (e) => {
      const detail = await callApi(deps.gateway, s, 'GET', `/v1/events/${encodeURIComponent(String(e.id))}`);
      const first = ((detail.status === 200 ? detail.json.deliveries : e.deliveries) ?? []) as Array<Json>;
      const again = detail.status === 200 ? ((detail.json.redeliveries ?? []) as Array<Json>).flatMap((r) => ((r.deliveries ?? []) as Array<Json>).map((d) => ({ ...d, redelivery: r.id }))) : [];
      const deliveries = ([...first, ...again] as Json[]).map((d) => ({ ...d, ...(d.delivered_at ? { delivered_at: timeText(d.delivered_at) } : {}), ...(d.next_attempt_at ? { next_attempt_at: `next attempt ${timeText(d.next_attempt_at)}` } : {}) }));
      return { id: e.id, type: e.type, timestamp: timeText(e.timestamp), deliveries };
    }),
  );
}

/**
 * A running payment no worker answers for (its view is a query): what the server keeps without a
 * worker, i.e. its row of the list (amount, customer, last known state) and its events (kept in
 * its memo) with their deliveries, said as such. The timeline and the PIN attempts wait for a worker.
 */
async function paymentWithoutWorker(deps: ConsoleDeps, req: FastifyRequest<{ Params: { flow_id: string } }>, reply: FastifyReply, kind: Kind, unavailable: Json): Promise<FastifyReply> {
  const s = req.consoleSession!;
  const flowId = req.params.flow_id;
  const reference = flowId.slice(flowId.indexOf('-') + 1);
  const [listed, kept] = await Promise.all([
    callApi(deps.gateway, s, 'GET', `${LIST_PATH[kind]}${queryOf({ txn_ref: reference, limit: '10' })}`),
    callApi(deps.gateway, s, 'GET', `/v1/events${queryOf({ flow_id: flowId, limit: '100' })}`),
  ]);
  const item = listed.status === 200 ? ((listed.json.items ?? []) as Array<Json>).find((i) => i.flow_id === flowId) : undefined;
  const state = String(item?.state ?? unavailable.last_known_state ?? 'unknown');
  // The events API answers newest first; the page shows them in the order they happened.
  const events = kept.status === 200 ? await eventsOf(deps, s, { events: ((kept.json.items ?? []) as Array<Json>).slice().reverse() }) : [];
  const facts: Array<[string, string | undefined]> = [
    [kind === 'swap' ? 'txn_ref' : 'txn_merchant_ref', reference],
    ['Customer (user_ref)', typeof item?.customer_ref === 'string' ? item.customer_ref : undefined],
    ['Created', item ? timeText(item.created_at) : undefined],
  ];
  const why = 'No worker answers now: shown are its last known state, its amount and its events as the server keeps them; its timeline, provider calls and PIN attempts appear once a worker is back.';
  return render(deps, req, reply, 'payment', {
    title: flowId,
    active: '/console/payments',
    flowId,
    kind,
    view: { state, reason: why },
    amountText: amountText(item?.amount, item?.currency),
    facts: facts.filter((f): f is [string, string] => f[1] !== undefined && f[1] !== ''),
    timeline: undefined,
    timelineNotice: kept.status === 200 ? 'The timeline needs a worker to answer.' : `${why} ${refusalOf(kept)}`,
    events,
    endpoints: [],
    resolvable: false,
    back: `/console/payments/${encodeURIComponent(flowId)}`,
  });
}

async function paymentPage(deps: ConsoleDeps, req: FastifyRequest<{ Params: { flow_id: string } }>, reply: FastifyReply): Promise<FastifyReply> {
  const s = req.consoleSession!;
  const flowId = req.params.flow_id;
  const kind: Kind | undefined = flowId.startsWith('swap-') ? 'swap' : flowId.startsWith('paylink-') ? 'payment_link' : undefined;
  const notFound = () => render(deps, req, reply, 'error', { title: 'Not found', heading: 'No such payment', message: `There is no swap or payment link ${flowId.slice(0, 120)}.` }, 404);
  if (!kind) return notFound();
  const a = await callApi(deps.gateway, s, 'GET', `${LIST_PATH[kind]}/${encodeURIComponent(flowId)}`);
  if (a.status === 401) return reply.redirect('/console/sign-in?expired=1', 303);
  if (a.status === 404) return notFound();
  if (a.status === 503 && a.json.error === 'worker_unavailable') return paymentWithoutWorker(deps, req, reply, kind, a.json);
  if (a.status !== 200) return render(deps, req, reply, 'error', { title: 'Unavailable', heading: 'This payment cannot be read now', message: refusalOf(a) }, a.status >= 500 ? 503 : a.status);
  const view = a.json;
  const [events, endpoints] = await Promise.all([
    eventsOf(deps, s, view),
    mayAct(s.role) ? callApi(deps.gateway, s, 'GET', '/v1/webhook_endpoints') : Promise.resolve(undefined),
  ]);
  const apiTimeline = Array.isArray(view.timeline) ? (view.timeline as TimelineEntry[]).map((t) => ({ ...t, at: timeText(t.at) })) : undefined;
  return render(deps, req, reply, 'payment', {
    title: flowId,
    active: '/console/payments',
    flowId,
    kind,
    view,
    amountText: amountText(view.amount, kind === 'swap' ? view.from_currency : view.currency),
    facts: factsOf(kind, view),
    timeline: apiTimeline ?? timelineFromView(view),
    timelineNotice: '',
    events,
    endpoints: endpoints?.status === 200 ? ((endpoints.json.items ?? []) as unknown[]) : [],
    resolvable: mayAct(s.role) && view.state === 'needs_reconciliation',
    back: `/console/payments/${encodeURIComponent(flowId)}`,
  });
}

export function registerPaymentPages(app: FastifyInstance, deps: ConsoleDeps): void {
  app.get('/payments', (req, reply) => paymentsPage(deps, req, reply));
  app.get('/payments.csv', (req, reply) => paymentsCsv(deps, req, reply));
  app.get<{ Params: { flow_id: string } }>('/payments/:flow_id', (req, reply) => paymentPage(deps, req, reply));
}
