/**
 * The operations pages: the needs_reconciliation queue, the provider guard, today's limits,
 * webhook endpoints and API keys. Read through the API with the person's token; a route this
 * gateway does not have yet (404) or refuses (403) is said on the page, not hidden.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { callApi, queryOf, refusalOf, type ApiAnswer, type Json } from './api';
import { type ConsoleDeps, render, takeSecret } from './context';
import { rowOf, timeText } from './format';

/** Why a page cannot list what it lists, in words; undefined when the answer is a 200. */
export function noticeOf(a: ApiAnswer, what: string): string | undefined {
  if (a.status === 200) return undefined;
  if (a.status === 404) return `This gateway has no ${what} API yet (it answered 404): update the gateway to see ${what} here.`;
  if (a.status === 403) return `Your role may not see ${what}: ${String(a.json.message ?? '')}`;
  return refusalOf(a);
}

async function reconciliations(deps: ConsoleDeps, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const s = req.consoleSession!;
  const token = (req.query as { page_token?: unknown }).page_token;
  const a = await callApi(deps.gateway, s, 'GET', `/v1/admin/reconciliations${queryOf({ page_token: typeof token === 'string' ? token : undefined })}`);
  if (a.status === 401) return reply.redirect('/console/sign-in?expired=1', 303);
  const notice = noticeOf(a, 'the reconciliation queue');
  const rows = a.status === 200 ? ((a.json.items ?? []) as Array<Json>).map(rowOf) : [];
  const next = a.json.next_page_token ? `/console/reconciliations${queryOf({ page_token: String(a.json.next_page_token) })}` : undefined;
  return render(deps, req, reply, 'reconciliations', { title: 'Needs reconciliation', rows, next, flash: notice ? { ok: false, text: notice } : undefined });
}

async function provider(deps: ConsoleDeps, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const a = await callApi(deps.gateway, req.consoleSession!, 'GET', '/v1/admin/provider');
  if (a.status === 401) return reply.redirect('/console/sign-in?expired=1', 303);
  const notice = noticeOf(a, 'the provider guard');
  if (notice) return render(deps, req, reply, 'error', { title: 'Provider guard', active: '/console/provider', heading: 'Provider guard', message: notice }, a.status >= 500 ? 503 : 200);
  const g = a.json;
  const breakers = Object.entries((g.breakers ?? {}) as Record<string, Json>).map(([name, b]) => ({
    name,
    state: String(b.state),
    detail: [`since ${timeText(b.since)}`, b.reason, b.probe_at ? `probe at ${timeText(b.probe_at)}` : undefined].filter(Boolean).join(' · '),
  }));
  const audit = ((g.audit ?? []) as Array<Json>).slice().reverse().map((x) => ({ ...x, at: timeText(x.at) }));
  return render(deps, req, reply, 'provider', { title: 'Provider guard', guard: { ...g, ...(g.paused ? { paused: { ...g.paused, at: timeText(g.paused.at) } } : {}) }, breakers, audit });
}

async function limits(deps: ConsoleDeps, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const raw = (req.query as { user_ref?: unknown }).user_ref;
  const userRef = typeof raw === 'string' ? raw.trim().slice(0, 100) : '';
  const a = await callApi(deps.gateway, req.consoleSession!, 'GET', `/v1/admin/limits${queryOf({ user_ref: userRef })}`);
  if (a.status === 401) return reply.redirect('/console/sign-in?expired=1', 303);
  const rows = a.status === 200 ? ((a.json.data ?? a.json.items ?? []) as Array<Json>).map((l) => ({ ...l, resets_at: timeText(l.resets_at) })) : [];
  return render(deps, req, reply, 'limits', { title: "Today's limits", rows, userRef, notice: noticeOf(a, "today's limits") });
}

async function listPage(deps: ConsoleDeps, req: FastifyRequest, reply: FastifyReply, o: { path: string; template: string; title: string; what: string; extra?: Record<string, unknown> }): Promise<FastifyReply> {
  const a = await callApi(deps.gateway, req.consoleSession!, 'GET', o.path);
  if (a.status === 401) return reply.redirect('/console/sign-in?expired=1', 303);
  const rows = a.status === 200 ? ((a.json.items ?? a.json.data ?? []) as Array<Json>).map((r) => ({ ...r, created_at: timeText(r.created_at), ...(r.expires_at ? { expires_at: timeText(r.expires_at) } : {}) })) : [];
  return render(deps, req, reply, o.template, { title: o.title, rows, notice: noticeOf(a, o.what), ...o.extra });
}

/** The endpoints and keys pages, with a secret to show once (after a create, a roll or a rotation). */
export const endpointsPage = (deps: ConsoleDeps, req: FastifyRequest, reply: FastifyReply, secret?: { label: string; value: string }) =>
  listPage(deps, req, reply, { path: '/v1/webhook_endpoints', template: 'endpoints', title: 'Webhook endpoints', what: 'webhook endpoints', extra: { active: '/console/webhooks', secret } });
export const apiKeysPage = (deps: ConsoleDeps, req: FastifyRequest, reply: FastifyReply, secret?: { label: string; value: string }) =>
  listPage(deps, req, reply, { path: '/v1/api_keys', template: 'api-keys', title: 'API keys', what: 'API keys', extra: { active: '/console/api-keys', secret } });

export function registerOperatorPages(app: FastifyInstance, deps: ConsoleDeps): void {
  app.get('/reconciliations', (req, reply) => reconciliations(deps, req, reply));
  app.get('/provider', (req, reply) => provider(deps, req, reply));
  app.get('/limits', (req, reply) => limits(deps, req, reply));
  app.get('/webhooks', (req, reply) => endpointsPage(deps, req, reply, takeSecret(deps, req)));
  app.get('/api-keys', (req, reply) => apiKeysPage(deps, req, reply, takeSecret(deps, req)));
}
