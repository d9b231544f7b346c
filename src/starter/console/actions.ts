/**
 * The console's actions (POST forms, each with the CSRF token): resolve, redeliver, pause and
 * resume, webhook endpoints and API keys. Each is one call of the gateway's API with the person's
 * token, so the API decides (a support person's resolve is its 403, shown as such) and the audit
 * names the person. A secret in an answer (an endpoint's, a key) is kept in memory for the
 * session's next page, which shows it once (post/redirect/get: a reload re-posts nothing).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { callApi, refusalOf } from './api';
import { type ConsoleDeps, redirectWithFlash, redirectWithSecret } from './context';

type Form = Record<string, string | undefined>;
const field = (req: FastifyRequest, name: string): string => {
  const v = ((req.body ?? {}) as Form)[name];
  return typeof v === 'string' ? v.trim() : '';
};
const optional = (v: string): string | undefined => (v === '' ? undefined : v);

async function act(deps: ConsoleDeps, req: FastifyRequest, reply: FastifyReply, o: { method?: 'POST' | 'DELETE'; path: string; body?: unknown; back: string; done: string }): Promise<FastifyReply> {
  const a = await callApi(deps.gateway, req.consoleSession!, o.method ?? 'POST', o.path, o.body);
  if (a.status === 401) return reply.redirect('/console/sign-in?expired=1', 303);
  const ok = a.status >= 200 && a.status < 300;
  return redirectWithFlash(deps, req, reply, o.back, { ok, text: ok ? o.done : refusalOf(a) });
}

function registerFlowActions(app: FastifyInstance, deps: ConsoleDeps): void {
  const csrf = { preHandler: app.csrfProtection };
  app.post<{ Params: { flow_id: string } }>('/reconciliations/:flow_id/resolve', csrf, (req, reply) =>
    act(deps, req, reply, {
      path: `/v1/admin/flows/${encodeURIComponent(req.params.flow_id)}/resolve`,
      body: { outcome: field(req, 'outcome'), provider_reference: field(req, 'provider_reference'), note: field(req, 'note') },
      back: field(req, 'back') || '/console/reconciliations',
      done: `Resolved ${req.params.flow_id} as ${field(req, 'outcome')}; the audit names you.`,
    }),
  );
  app.post<{ Params: { event_id: string } }>('/events/:event_id/redeliver', csrf, (req, reply) => {
    const endpoint = optional(field(req, 'endpoint'));
    return act(deps, req, reply, {
      path: `/v1/events/${encodeURIComponent(req.params.event_id)}/redeliver`,
      body: endpoint ? { endpoint } : {},
      back: field(req, 'back'),
      done: `Event ${req.params.event_id} sent again${endpoint ? ` to ${endpoint} only` : ''}; its deliveries appear below as they are made.`,
    });
  });
  app.post('/provider/pause', csrf, (req, reply) => act(deps, req, reply, { path: '/v1/admin/provider/pause', body: { reason: field(req, 'reason') }, back: '/console/provider', done: 'Paused: no money-moving call is sent until resumed.' }));
  app.post('/provider/resume', csrf, (req, reply) => act(deps, req, reply, { path: '/v1/admin/provider/resume', back: '/console/provider', done: 'Resumed.' }));
}

function registerEndpointActions(app: FastifyInstance, deps: ConsoleDeps): void {
  const csrf = { preHandler: app.csrfProtection };
  app.post('/webhooks', csrf, async (req, reply) => {
    const events = field(req, 'enabled_events').split(',').map((e) => e.trim()).filter(Boolean);
    const a = await callApi(deps.gateway, req.consoleSession!, 'POST', '/v1/webhook_endpoints', { url: field(req, 'url'), enabled_events: events, ...(field(req, 'description') ? { description: field(req, 'description') } : {}) });
    if (a.status !== 201 && a.status !== 200) return redirectWithFlash(deps, req, reply, '/console/webhooks', { ok: false, text: refusalOf(a) });
    return redirectWithSecret(deps, req, reply, '/console/webhooks', { label: `Signing secret of ${a.json.id} (${a.json.url})`, value: String(a.json.secret ?? '') });
  });
  app.post<{ Params: { id: string; action: string } }>('/webhooks/:id/:action', csrf, async (req, reply) => {
    const { id, action } = req.params;
    const path = `/v1/webhook_endpoints/${encodeURIComponent(id)}`;
    if (action === 'roll_secret') {
      const a = await callApi(deps.gateway, req.consoleSession!, 'POST', `${path}/roll_secret`, {});
      if (a.status !== 200) return redirectWithFlash(deps, req, reply, '/console/webhooks', { ok: false, text: refusalOf(a) });
      return redirectWithSecret(deps, req, reply, '/console/webhooks', { label: `New signing secret of ${id} (the previous one keeps signing beside it for a day)`, value: String(a.json.secret ?? '') });
    }
    if (action === 'delete') return act(deps, req, reply, { method: 'DELETE', path, back: '/console/webhooks', done: `Deleted ${id}.` });
    if (action === 'disable' || action === 'enable') return act(deps, req, reply, { path: `${path}/${action}`, back: '/console/webhooks', done: `${action === 'disable' ? 'Disabled' : 'Enabled'} ${id}.` });
    return redirectWithFlash(deps, req, reply, '/console/webhooks', { ok: false, text: `action: ${action.slice(0, 40)} is not one of disable, enable, roll_secret, delete` });
  });
}

function registerKeyActions(app: FastifyInstance, deps: ConsoleDeps): void {
  const csrf = { preHandler: app.csrfProtection };
  app.post('/api-keys', csrf, async (req, reply) => {
    const expires = field(req, 'expires_at');
    const body = { role: field(req, 'role'), ...(field(req, 'label') ? { label: field(req, 'label') } : {}), ...(expires ? { expires_at: /^\d{4}-\d{2}-\d{2}$/.test(expires) ? `${expires}T00:00:00Z` : expires } : {}) };
    const a = await callApi(deps.gateway, req.consoleSession!, 'POST', '/v1/api_keys', body);
    if (a.status !== 201 && a.status !== 200) return redirectWithFlash(deps, req, reply, '/console/api-keys', { ok: false, text: refusalOf(a) });
    return redirectWithSecret(deps, req, reply, '/console/api-keys', { label: `API key ${a.json.id} (role ${a.json.role})`, value: String(a.json.key ?? '') });
  });
  app.post<{ Params: { id: string } }>('/api-keys/:id/revoke', csrf, (req, reply) =>
    act(deps, req, reply, { path: `/v1/api_keys/${encodeURIComponent(req.params.id)}/revoke`, back: '/console/api-keys', done: `Revoked ${req.params.id}: it is refused from now on.` }),
  );
  app.post<{ Params: { id: string } }>('/api-keys/:id/rotate', csrf, async (req, reply) => {
    const overlap = field(req, 'overlap_seconds');
    const a = await callApi(deps.gateway, req.consoleSession!, 'POST', `/v1/api_keys/${encodeURIComponent(req.params.id)}/rotate`, overlap ? { overlap_seconds: Number(overlap) } : {});
    if (a.status !== 201 && a.status !== 200) return redirectWithFlash(deps, req, reply, '/console/api-keys', { ok: false, text: refusalOf(a) });
    return redirectWithSecret(deps, req, reply, '/console/api-keys', { label: `API key ${a.json.id}, successor of ${req.params.id} (the old key stays valid for the overlap)`, value: String(a.json.key ?? '') });
  });
}

export function registerActions(app: FastifyInstance, deps: ConsoleDeps): void {
  registerFlowActions(app, deps);
  registerEndpointActions(app, deps);
  registerKeyActions(app, deps);
}
