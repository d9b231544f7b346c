/**
 * Who may call the gateway's API-key routes, as one encapsulated fastify plugin (`gatewayAuth`):
 * the backend's API key (`x-api-key: KEY` or `Authorization: Bearer KEY`) checked against the
 * keyring and the route's declared access, and on the operator routes a person's access token from
 * the identity provider (../../auth/person-tokens), mapped to a role. Keys and tokens are compared
 * and verified by ../../auth; the policy of what each verdict answers lives here.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fastifyPlugin from 'fastify-plugin';
import { type Access, type KeyringSource, type KeyVerdict, type Role, ROLE_ACCESS, ROLE_FOR } from '../../auth/keyring';
import { describePermissions, gatewayRoleOf, looksLikeJwt, type PersonTokenSettings, PersonTokens, SYSTEM_SCOPE } from '../../auth/person-tokens';
import { bearerToken as bearerOf } from '../../auth/secrets';
import type { ApiKeyCache } from '../client/api-keys';
import { sendError } from './errors';

/** The token of the request's `Authorization: Bearer <token>`, or undefined when absent or malformed. */
export function bearerToken(req: FastifyRequest): string | undefined {
  return bearerOf(req.headers.authorization);
}

/** The API key a request presents (`x-api-key`, else `Authorization: Bearer`), or undefined. */
export function presentedApiKey(req: FastifyRequest): string | undefined {
  const header = req.headers['x-api-key'];
  const presented = (Array.isArray(header) ? header[0] : header) ?? bearerToken(req);
  return presented === undefined || presented === '' ? undefined : presented;
}

/** Which key of the keyring a request presents: 'missing', or the keyring's verdict. */
export function checkRequestKey(keys: KeyringSource, req: FastifyRequest): KeyVerdict | { kind: 'missing' } {
  const presented = presentedApiKey(req);
  return presented === undefined ? { kind: 'missing' } : keys.current.check(presented);
}

/**
 * The rate limiter's bucket for a request: per API key id when an API-key route is presented a
 * known key (bounded: the number of keys), else per client address.
 */
export function rateLimitKeyOf(keys: KeyringSource, req: FastifyRequest): string {
  const v = req.routeOptions.config?.apiKey ? checkRequestKey(keys, req) : undefined;
  return v && v.kind !== 'missing' && v.kind !== 'unknown' ? `key:${v.key.id}` : req.ip;
}

export interface GatewayAuthOptions {
  keyring: KeyringSource;
  /** People's access tokens on the operator routes (GATEWAY_OIDC_*); unset: API keys only. */
  personTokens?: PersonTokenSettings;
  /** The Temporal namespace whose permissions map a person to a role. */
  personNamespace: string;
  /** The keys made through /v1/api_keys (client/api-keys.ts), checked when the keyring does not hold the presented key. */
  recordKeys?: Pick<ApiKeyCache, 'check'>;
}

/** People's access tokens and the namespace their permissions are read on. */
interface People {
  tokens: PersonTokens;
  namespace: string;
}

const refuseToken = (reply: FastifyReply, code: string, message: string): FastifyReply => {
  reply.header('www-authenticate', 'Bearer realm="gateway", error="invalid_token"');
  return sendError(reply, 401, code, message);
};

/**
 * What a person's role lets them do on a route: read routes with the read role; the operator
 * routes (access admin) as operator, or, for a GET of a route that declares `personRead` (views
 * that carry no secret and no URL: the reconciliation queue, the provider guard), with the read
 * role; the write routes only when the route declares `personWrite` (a redelivery), as operator.
 * Starting and cancelling flows stays the merchant backend's, with its API key.
 */
function personMay(role: Role | undefined, need: Access, req: FastifyRequest): boolean {
  if (!role) return false;
  if (need === 'read') return ROLE_ACCESS[role].includes('read');
  if (need === 'write') return req.routeOptions.config.personWrite === true && role === 'operator';
  if (role === 'operator') return true;
  return req.method === 'GET' && req.routeOptions.config.personRead === true && ROLE_ACCESS[role].includes('read');
}

/**
 * A person's access token on an API-key route, its role from the permissions claim (see
 * `personMay`). Refusals name what is missing; the token is never logged.
 */
async function authorisePerson(people: People | undefined, req: FastifyRequest, reply: FastifyReply, token: string, need: Access | undefined): Promise<FastifyReply | undefined> {
  if (!people) return refuseToken(reply, 'unauthorized', "the API key is not valid (a person's access token is accepted only when the gateway is configured with GATEWAY_OIDC_ISSUER)");
  if (!need) return sendError(reply, 403, 'forbidden', 'this route declares no access, so no one may use it (deny by default)');
  const persons = people.tokens;
  const v = await persons.verify(token);
  if (!v.ok) {
    const message = v.error.replace(/^\w+: /, '');
    if (v.status === 503) {
      reply.header('retry-after', '5');
      req.log.warn({ issuer: persons.issuer }, 'identity provider unavailable: a person\'s access token could not be checked');
      return sendError(reply, 503, v.code, message);
    }
    return refuseToken(reply, v.code === 'token_expired' ? 'token_expired' : 'unauthorized', message);
  }
  const role = gatewayRoleOf(v.person.permissions, people.namespace);
  if (!personMay(role, need, req)) {
    reply.header('www-authenticate', 'Bearer realm="gateway", error="insufficient_scope"');
    const holds = `person ${v.person.subject} holds ${describePermissions(v.person)} (role ${role ?? 'none'})`;
    if (need === 'write' && req.routeOptions.config.personWrite !== true) {
      return sendError(reply, 403, 'forbidden', `starting and cancelling flows takes the merchant backend's API key (role backend); a person's access token may not; ${holds}`);
    }
    const what = need === 'read' ? `this route needs the role read_only: a person needs ${people.namespace}:read or above` : `this route needs the role operator: a person needs ${people.namespace}:admin or ${SYSTEM_SCOPE}:admin`;
    return sendError(reply, 403, 'forbidden', `${what} in the access token's ${persons.claim} claim; ${holds}`);
  }
  req.person = { ...v.person, role: role! };
  req.log = req.log.child({ person_sub: v.person.subject });
  req.log.info({ person_sub: v.person.subject, role }, "a person's access token authorised this request");
  return undefined;
}

/**
 * Deny by default: an API-key route needs a known, unexpired key whose role allows the access
 * the route declares; a route that declares none is refused. The key's public id goes on the
 * request (logs, metrics, audit records); the secret never leaves this hook.
 */
async function authoriseRequest(keyring: KeyringSource, recordKeys: GatewayAuthOptions['recordKeys'], people: People | undefined, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
  if (!req.routeOptions.config?.apiKey) return undefined;
  let verdict = checkRequestKey(keyring, req);
  // Not a key of the keyring but a JWT (Authorization: Bearer, or x-api-key as the mpf CLI sends
  // MPF_API_KEY): a person's access token.
  const presented = presentedApiKey(req);
  if (verdict.kind === 'unknown' && looksLikeJwt(presented)) return authorisePerson(people, req, reply, presented, req.routeOptions.config.access);
  // Not a key of the keyring file: one made through /v1/api_keys, if this gateway's reading of
  // them is fresh; else refused as unavailable (fail closed: a revoked key is never let through on
  // an old reading), while the keyring file's keys keep working.
  if (verdict.kind === 'unknown' && recordKeys && presented !== undefined) {
    const fromRecord = await recordKeys.check(presented);
    if (fromRecord.kind === 'unavailable') {
      req.log.warn({ reason: fromRecord.reason }, 'an API key not in the keyring file could not be checked: the API keys record is unavailable');
      reply.header('retry-after', '5');
      return sendError(reply, 503, 'api_keys_unavailable', "the API key could not be checked now (the gateway's reading of the API keys record is out of date); try again shortly");
    }
    verdict = fromRecord;
  }
  if (verdict.kind === 'missing' || verdict.kind === 'unknown') {
    reply.header('www-authenticate', 'ApiKey header="x-api-key", Bearer');
    const send = people && req.routeOptions.config.access === 'admin' ? "send the API key as x-api-key or Authorization: Bearer, or a person's access token as Authorization: Bearer" : 'send the API key as x-api-key or Authorization: Bearer';
    return sendError(reply, 401, 'unauthorized', verdict.kind === 'missing' ? send : 'the API key is not valid');
  }
  if (verdict.kind === 'expired') {
    reply.header('www-authenticate', 'ApiKey header="x-api-key", Bearer');
    return sendError(reply, 401, 'key_expired', `the API key ${verdict.key.id} has expired: use its successor`);
  }
  const need = req.routeOptions.config.access;
  if (!need) return sendError(reply, 403, 'forbidden', 'this route declares no access, so no key may use it (deny by default)');
  if (!ROLE_ACCESS[verdict.key.role].includes(need)) {
    return sendError(reply, 403, 'forbidden', `this route needs a key of role ${ROLE_FOR[need]}${need === 'read' ? '' : ' or above'}; key ${verdict.key.id} has role ${verdict.key.role}`);
  }
  req.apiKey = verdict.key;
  req.log = req.log.child({ key_id: verdict.key.id });
  return undefined;
}

/**
 * The gateway's authentication, registered once on the app (not encapsulated away from the routes,
 * so its hook runs before every route): decorates each request with `apiKey` or `person` and
 * refuses, in an onRequest hook, what the keyring or the identity provider does not allow.
 */
export const gatewayAuth = fastifyPlugin(
  async (app: FastifyInstance, opts: GatewayAuthOptions) => {
    const people = opts.personTokens ? { tokens: new PersonTokens(opts.personTokens), namespace: opts.personNamespace } : undefined;
    app.decorateRequest('apiKey', undefined);
    app.decorateRequest('person', undefined);
    app.addHook('onRequest', (req, reply) => authoriseRequest(opts.keyring, opts.recordKeys, people, req, reply));
  },
  { name: 'gateway-auth', fastify: '5.x' },
);
