/** What the console's page modules share: the templates, the sessions, and rendering with the layout. */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Eta } from 'eta';
import type { ConsoleSession, SessionStore } from './sessions';
import { mayAct, mayExport } from './roles';

export const SESSION_COOKIE = 'mpf_console_session';

export interface ConsoleDeps {
  /** The gateway app: the API is called through it (api.ts). */
  gateway: FastifyInstance;
  eta: Eta;
  sessions: SessionStore;
  /** A flash message per session, shown once on the next page. */
  flashes: Map<string, { ok: boolean; text: string }>;
  /**
   * A secret (an endpoint's, an API key) answered by the API to a form, per session, until the
   * page the form redirects to shows it once (post/redirect/get: reloading that page re-posts
   * nothing, so it never makes a second endpoint or key).
   */
  reveals: Map<string, { label: string; value: string }>;
}

/** The navigation a role sees. */
export function navOf(s: ConsoleSession): Array<[string, string]> {
  const nav: Array<[string, string]> = [
    ['/console/payments', 'Payments'],
    ['/console/reconciliations', 'Needs reconciliation'],
  ];
  if (mayAct(s.role)) nav.push(['/console/webhooks', 'Webhooks'], ['/console/api-keys', 'API keys']);
  nav.push(['/console/provider', 'Provider guard'], ['/console/limits', 'Limits']);
  return nav;
}

/** Renders `template` inside the layout, with the session's navigation, a fresh CSRF token and the pending flash. */
export function render(deps: ConsoleDeps, req: FastifyRequest, reply: FastifyReply, template: string, data: Record<string, unknown>, status = 200): FastifyReply {
  const session = req.consoleSession;
  const csrf = reply.generateCsrf();
  let flash = data.flash;
  if (session && flash === undefined) {
    flash = deps.flashes.get(session.id);
    deps.flashes.delete(session.id);
  }
  const html = deps.eta.render(`@${template}`, {
    ...data,
    csrf,
    flash,
    session,
    nav: session ? navOf(session) : [],
    active: data.active ?? req.url.split('?')[0],
    mayAct: session ? mayAct(session.role) : false,
    mayExport: session ? mayExport(session.role) : false,
  });
  return reply.code(status).type('text/html; charset=utf-8').send(html);
}

/** After an action that answered a secret: keep it for the next page of this session only, and a 303 to `to`. */
export function redirectWithSecret(deps: ConsoleDeps, req: FastifyRequest, reply: FastifyReply, to: string, secret: { label: string; value: string }): FastifyReply {
  if (req.consoleSession) deps.reveals.set(req.consoleSession.id, secret);
  return reply.redirect(to, 303);
}

/** The secret kept for this session's next page, taken (shown once). */
export function takeSecret(deps: ConsoleDeps, req: FastifyRequest): { label: string; value: string } | undefined {
  const id = req.consoleSession?.id;
  if (!id) return undefined;
  const secret = deps.reveals.get(id);
  deps.reveals.delete(id);
  return secret;
}

/** After an action: a flash for the next page, and a 303 to `to` (a console path only). */
export function redirectWithFlash(deps: ConsoleDeps, req: FastifyRequest, reply: FastifyReply, to: string, flash: { ok: boolean; text: string }): FastifyReply {
  if (req.consoleSession) deps.flashes.set(req.consoleSession.id, flash);
  return reply.redirect(safeBack(to), 303);
}

/** A console path to return to (`back` in a form): only /console/… of this site, else the payments list. */
export function safeBack(to: unknown): string {
  return typeof to === 'string' && /^\/console\/[A-Za-z0-9_\-./%?=&]*$/.test(to) && !to.includes('//') ? to : '/console/payments';
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The console's signed-in person (console routes only). */
    consoleSession?: ConsoleSession;
  }
}
