/**
 * The merchant's console: server-rendered pages (eta) for the merchant's people, served by the
 * gateway under /console/ and kept off the public API (no route of it is in the OpenAPI document;
 * its own Content-Security-Policy: no script at all, styles from /console/assets only). People sign
 * in through the deployment's identity provider (oidc-sign-in.ts) or, in the demo, through the
 * one-time links of the local sign-in (local-sign-in.ts); the session lives here (sessions.ts) and
 * every page reads and acts through the gateway's own HTTP API with the person's token (api.ts).
 * Forms carry a CSRF token (@fastify/csrf-protection, double-submit cookie) and the cookies are
 * httpOnly and SameSite=Lax.
 */
import fastifyCookie from '@fastify/cookie';
import fastifyCsrf from '@fastify/csrf-protection';
import fastifyFormbody from '@fastify/formbody';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type PersonTokenSettings, PersonTokens } from '../../auth/person-tokens';
import { registerActions } from './actions';
import { type ConsoleDeps, render, SESSION_COOKIE } from './context';
import type { LocalSignIn } from './local-sign-in';
import { OidcSignIn } from './oidc-sign-in';
import { registerOperatorPages } from './pages-operations';
import { registerPaymentPages } from './pages-payments';
import { consoleRoleOf } from './roles';
import { SessionStore } from './sessions';
import { CONSOLE_CSS, consoleTemplates } from './templates';

export interface ConsoleOptions {
  /** The Temporal namespace whose permissions map a person to a role. */
  namespace: string;
  /** How people's tokens are verified (the gateway's own settings: GATEWAY_OIDC_*, or the local sign-in's). */
  personTokens?: PersonTokenSettings;
  /** Sign-in through the identity provider (GATEWAY_OIDC_ISSUER set): its public client. */
  oidc?: { issuer: string; clientId: string };
  /** The demo's local sign-in (never with oidc). */
  local?: LocalSignIn;
  /** The gateway's public base URL (the OIDC redirect), read when a sign-in starts. */
  publicUrl: () => string;
}

const SIGN_IN_COOKIE = 'mpf_console_sign_in';
const CSP = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
const cookieOpts = { path: '/console', httpOnly: true, sameSite: 'lax', secure: 'auto' } as const;

/** Signs the person of `accessToken` in: verified as the API verifies it, mapped to a console role; a new session. */
async function signIn(deps: ConsoleDeps, tokens: PersonTokens, namespace: string, reply: FastifyReply, t: { accessToken: string; expiresAt: number; name?: string }): Promise<string | undefined> {
  const { accessToken, expiresAt } = t;
  const v = await tokens.verify(accessToken);
  if (!v.ok) return v.error.replace(/^\w+: /, '');
  const role = consoleRoleOf(v.person, namespace);
  if (!role) return `${v.person.name ?? v.person.subject} holds no permission to read ${namespace} (the console needs ${namespace}:read or above in the access token)`;
  const session = deps.sessions.create({ accessToken, expiresAt, subject: v.person.subject, name: t.name ?? v.person.name ?? v.person.subject, role });
  reply.setCookie(SESSION_COOKIE, session.id, { ...cookieOpts, maxAge: Math.max(1, Math.floor((expiresAt - Date.now()) / 1000)) });
  return undefined;
}

function registerSignIn(app: FastifyInstance, deps: ConsoleDeps, o: ConsoleOptions): void {
  const tokens = o.personTokens ? new PersonTokens(o.personTokens) : undefined;
  const oidc = o.oidc ? new OidcSignIn({ ...o.oidc, publicUrl: o.publicUrl }) : undefined;
  const mode = oidc && tokens ? 'oidc' : o.local && tokens ? 'local' : 'off';
  const page = (req: FastifyRequest, reply: FastifyReply, problem?: string, status = 200) =>
    render(deps, req, reply, 'sign-in', { title: 'Sign in', mode, issuer: o.oidc?.issuer, problem }, status);

  app.get('/sign-in', (req, reply) => page(req, reply, (req.query as { expired?: string }).expired ? 'Your session ended: sign in again.' : undefined));
  app.get('/sign-in/start', async (req, reply) => {
    if (!oidc) return page(req, reply, 'Sign-in through an identity provider is not configured here.', 404);
    try {
      const { url, state } = await oidc.start();
      reply.setCookie(SIGN_IN_COOKIE, state, { ...cookieOpts, maxAge: 600 });
      return reply.redirect(url, 303);
    } catch (e) {
      req.log.warn({ err: (e as Error).message }, 'console sign-in: the identity provider cannot be reached');
      return page(req, reply, `The identity provider ${o.oidc!.issuer} cannot be reached now; try again shortly.`, 503);
    }
  });
  app.get('/callback', async (req, reply) => {
    if (!oidc || !tokens) return page(req, reply, 'Sign-in through an identity provider is not configured here.', 404);
    const query = req.url.includes('?') ? req.url.slice(req.url.indexOf('?')) : '';
    const state = req.cookies[SIGN_IN_COOKIE];
    reply.clearCookie(SIGN_IN_COOKIE, cookieOpts);
    let t: { accessToken: string; expiresAt: number; name?: string };
    try {
      t = await oidc.finish(new URL(`${oidc.redirectUri}${query}`), state);
    } catch (e) {
      req.log.warn({ err: (e as Error).message.split('\n')[0] }, 'console sign-in refused');
      return page(req, reply, `The sign-in did not complete: ${(e as Error).message.split('\n')[0]!.slice(0, 200)}`, 400);
    }
    const problem = await signIn(deps, tokens, o.namespace, reply, t);
    return problem ? page(req, reply, problem, 403) : reply.redirect('/console/payments', 303);
  });
  app.get('/local-sign-in', async (req, reply) => {
    if (!o.local || !tokens) return page(req, reply, 'There is no local sign-in here.', 404);
    const role = o.local.redeem(String((req.query as { code?: unknown }).code ?? ''));
    if (!role) return page(req, reply, 'This sign-in link was already used, is unknown or has expired.', 403);
    const t = await o.local.mint(role);
    const problem = await signIn(deps, tokens, o.namespace, reply, t);
    return problem ? page(req, reply, problem, 403) : reply.redirect('/console/payments', 303);
  });
  app.post('/sign-out', { preHandler: app.csrfProtection }, (req, reply) => {
    const id = req.cookies[SESSION_COOKIE];
    deps.sessions.end(id);
    if (id) {
      deps.flashes.delete(id);
      deps.reveals.delete(id);
    }
    reply.clearCookie(SESSION_COOKIE, cookieOpts);
    return reply.redirect('/console/sign-in', 303);
  });
}

/** Errors inside the console: an HTML page; a refused CSRF token says what to do; nothing unexpected answers 500. */
function consoleErrors(deps: ConsoleDeps) {
  return (err: FastifyError, req: FastifyRequest, reply: FastifyReply) => {
    if (err.code?.startsWith('FST_CSRF')) {
      return render(deps, req, reply, 'error', { title: 'Refused', heading: 'This form was refused', message: 'It did not carry the console\'s CSRF token (an old page, or a form from another site): reload the page and try again.' }, 403);
    }
    const status = err.statusCode && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 503;
    if (status === 503) req.log.error({ err }, 'console page failed');
    return render(deps, req, reply, 'error', { title: 'Error', heading: status === 503 ? 'The console could not complete this' : 'Bad request', message: status === 503 ? 'Try again in a moment; the gateway logged what went wrong.' : err.message.slice(0, 300) }, status);
  };
}

/** The console as a fastify plugin (register it with `prefix: '/console'`). */
export async function consolePlugin(app: FastifyInstance, o: ConsoleOptions & { gateway: FastifyInstance }): Promise<void> {
  // Off the public API: no console route in the OpenAPI document.
  app.addHook('onRoute', (route) => {
    route.schema = { ...(route.schema ?? {}), hide: true };
  });
  await app.register(fastifyCookie);
  await app.register(fastifyCsrf, { cookieKey: 'mpf_console_csrf', cookieOpts });
  await app.register(fastifyFormbody, { bodyLimit: 16_384 });
  const deps: ConsoleDeps = { gateway: o.gateway, eta: consoleTemplates(), sessions: new SessionStore(), flashes: new Map(), reveals: new Map() };
  app.decorateRequest('consoleSession', undefined);
  app.addHook('onSend', async (_req, reply, payload) => {
    reply.header('content-security-policy', CSP).header('x-frame-options', 'DENY').header('referrer-policy', 'same-origin').header('x-content-type-options', 'nosniff').header('cache-control', 'no-store');
    return payload;
  });
  app.setErrorHandler(consoleErrors(deps));
  app.get('/assets/console.css', (_req, reply) => reply.type('text/css; charset=utf-8').send(CONSOLE_CSS));
  registerSignIn(app, deps, o);

  // Everything else needs a signed-in person.
  await app.register(async (pages) => {
    pages.addHook('onRequest', async (req, reply) => {
      const session = deps.sessions.get(req.cookies[SESSION_COOKIE]);
      if (!session) return reply.redirect(`/console/sign-in${req.cookies[SESSION_COOKIE] ? '?expired=1' : ''}`, 303);
      req.consoleSession = session;
      return undefined;
    });
    pages.get('/', (_req, reply) => reply.redirect('/console/payments', 303));
    registerPaymentPages(pages, deps);
    registerOperatorPages(pages, deps);
    registerActions(pages, deps);
  });
}
