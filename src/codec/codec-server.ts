/**
 * The codec server: lets authorised operators see decrypted payloads in Temporal Web (or with
 * `temporal workflow show --codec-endpoint URL --codec-auth 'Bearer TOKEN'`).
 *
 * Protocol (Temporal's remote codec protocol): POST <prefix>/encode and POST <prefix>/decode with
 * body `{ payloads: [{ metadata: { key: base64 }, data: base64 }] }` (protobuf JSON of Payloads),
 * answered in the same shape (a body without `payloads`, as the Temporal CLI sends, is an empty
 * list). Every POST needs `Authorization: Bearer <authToken>` (compared in constant time), checked
 * before the body is read (onRequest); anything else gets 401 without reading it. Bodies are
 * bounded at 4 MB.
 *
 * Temporal Web without its own login cannot send that header, so the same routes are also served
 * under a capability path, `<prefix>/web/<webToken>/{encode,decode}` (the protocol only reads the
 * last path segment). `webToken` is derived from the auth token (HMAC-SHA256), so the URL a UI
 * holds never reveals the Bearer token; the gateway's logs strip it. Give that URL only to a
 * Temporal Web that only operators can open (the demo's loopback dev UI).
 *
 * With `personTokens`, the plain routes also accept the signed-in person's access token, which
 * Temporal Web behind its OIDC login sends with `codec.passAccessToken` (the IdP's JWT for the
 * Temporal API, checked by ../auth/person-tokens, the module the gateway's operator routes share:
 * signature by the IdP's JWKS, issuer, audience, lifetime), for a person who may read the
 * namespace named in X-Namespace (read, write or admin on it, or on `temporal-system`): 401 for a
 * missing, expired or foreign token, 403 without that permission, 503 while the IdP's keys cannot
 * be fetched, all before the body is read. The person's subject is logged with each call.
 *
 * CORS is answered for the configured Temporal Web origins only, preflight included (Temporal Web
 * sends Content-Type, X-Namespace and, when configured to pass its access token, Authorization;
 * with includeCredentials it sends cookies).
 *
 * Decoding removes the payload encryption only: values sealed with ./seal stay sealed, because
 * this server never holds a Sealer.
 */
import { createHmac } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Payload } from '@temporalio/common';
import { AesGcmCodec, PayloadDecryptionError } from './aes-gcm-codec';
import { type KeyRing, toKeyRing } from './keys';
import { bearerToken, secretDigest, secretMatches } from '../auth/secrets';
import { mayRead, type PersonTokenSettings, PersonTokens } from '../auth/person-tokens';

export type { PersonTokenSettings } from '../auth/person-tokens';

export interface CodecServerOptions {
  /** PAYLOAD_ENCRYPTION_KEYS (or a parsed ring). */
  keys: string | KeyRing;
  /** The bearer token operators' tools must send. At least 16 characters. */
  authToken: string;
  /** Temporal Web origins allowed by CORS, e.g. ['http://localhost:8233']; '*' allows any origin. */
  corsOrigins: string[];
  /** Route prefix; default '/codec'. */
  prefix?: string;
  /** Also accept a signed-in person's access token (Temporal Web's passAccessToken) on the plain routes. */
  personTokens?: PersonTokenSettings;
}

type PersonCheck = { ok: true; subject: string } | { ok: false; status: 401 | 403 | 503; error: string };

/**
 * A verifier of people's access tokens (../auth/person-tokens: signature by the IdP's JWKS,
 * issuer, audience, lifetime), then a permission to read `namespace`: read, write or admin on it,
 * or on the whole cluster (`temporal-system:<role>`); with no namespace named, only
 * `temporal-system:admin`. An IdP whose keys cannot be fetched is 503.
 */
export function personTokenVerifier(settings: PersonTokenSettings): (token: string, namespace: string | undefined) => Promise<PersonCheck> {
  let tokens: PersonTokens;
  try {
    tokens = new PersonTokens(settings);
  } catch (e) {
    throw new Error(`codec server: ${(e as Error).message}`, { cause: e });
  }
  return async (token, namespace) => {
    const v = await tokens.verify(token);
    if (!v.ok) return { ok: false, status: v.status, error: v.error };
    if (!mayRead(v.person.permissions, namespace)) {
      return { ok: false, status: 403, error: `forbidden: ${v.person.subject} may not read namespace ${namespace ?? '(none named: send X-Namespace)'}` };
    }
    return { ok: true, subject: v.person.subject };
  };
}

/** Temporal Web and the CLI send a page of history's payloads at a time; 4 MB is ample. */
const CODEC_BODY_LIMIT = 4 * 1024 * 1024;
/** Temporal Web signed in sends its person's ID token too, as Authorization-Extras (read by nothing here). */
const ALLOWED_HEADERS = 'Authorization, Authorization-Extras, Content-Type, X-Namespace';

const JsonPayload = z.object({
  metadata: z.record(z.string(), z.string()).nullish(),
  data: z.string().nullish(),
});
/** A missing (or null) `payloads` is an empty list: the Temporal CLI sends `{}` when it has nothing to decode. */
const PayloadsBody = z.object({ payloads: z.array(JsonPayload).nullish().transform((p) => p ?? []) }).nullish();
type JsonPayload = z.infer<typeof JsonPayload>;

export function payloadFromJson({ metadata, data }: JsonPayload): Payload {
  return {
    metadata: metadata
      ? Object.fromEntries(Object.entries(metadata).map(([k, v]) => [k, new Uint8Array(Buffer.from(v, 'base64'))]))
      : {},
    data: data ? new Uint8Array(Buffer.from(data, 'base64')) : undefined,
  };
}

export function payloadToJson({ metadata, data }: Payload): { metadata: Record<string, string>; data?: string } {
  const out: { metadata: Record<string, string>; data?: string } = {
    metadata: Object.fromEntries(
      Object.entries(metadata ?? {}).map(([k, v]) => [k, Buffer.from(v ?? new Uint8Array()).toString('base64')]),
    ),
  };
  if (data && data.length > 0) out.data = Buffer.from(data).toString('base64');
  return out;
}

const normaliseOrigin = (o: string): string => o.trim().replace(/\/+$/, '').toLowerCase();

/** The capability-path token for Temporal Web, derived from the codec auth token. */
export function codecWebToken(authToken: string): string {
  return createHmac('sha256', authToken).update('mpf codec: temporal web path v1', 'utf8').digest('base64url');
}

/** The codec endpoint to give Temporal Web (`--ui-codec-endpoint`), e.g. http://host:port/codec/web/<token>. */
export function codecWebEndpoint(baseUrl: string, authToken: string, prefix = '/codec'): string {
  return `${baseUrl.replace(/\/+$/, '')}${prefix.replace(/\/+$/, '')}/web/${codecWebToken(authToken)}`;
}

const CODEC_PAYLOADS_JSON = {
  type: 'object',
  properties: {
    payloads: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          metadata: { type: 'object', additionalProperties: { type: 'string', description: 'base64' } },
          data: { type: 'string', description: 'base64' },
        },
      },
    },
  },
  examples: [{ payloads: [{ metadata: { encoding: 'YmluYXJ5L2VuY3J5cHRlZA==' }, data: 'AAECAw==' }] }],
};
const CODEC_ERROR_JSON = { type: 'object', properties: { error: { type: 'string' } }, required: ['error'] };
const CODEC_OPENAPI_BODY = { required: true, content: { 'application/json': { schema: CODEC_PAYLOADS_JSON } } };
const CODEC_OPENAPI_RESPONSES = {
  '200': { description: 'The payloads, encoded or decoded, in the same order', content: { 'application/json': { schema: CODEC_PAYLOADS_JSON } } },
  '400': { description: 'The body is not a list of payloads', content: { 'application/json': { schema: CODEC_ERROR_JSON } } },
  '401': { description: "Missing or wrong codec token (or person's access token: expired, forged, another issuer's)", content: { 'application/json': { schema: CODEC_ERROR_JSON } } },
  '403': { description: "A person's access token without read on the namespace named in X-Namespace", content: { 'application/json': { schema: CODEC_ERROR_JSON } } },
  '422': { description: 'A payload cannot be decrypted with these keys', content: { 'application/json': { schema: CODEC_ERROR_JSON } } },
  '503': { description: "The identity provider's keys cannot be fetched, so a person's access token cannot be checked now (the codec token still works)", content: { 'application/json': { schema: CODEC_ERROR_JSON } } },
};

/** Adds the codec routes to `app` (the gateway mounts it; see also startCodecServer). */
export function registerCodecServer(app: FastifyInstance, opts: CodecServerOptions): void {
  if (typeof opts.authToken !== 'string' || opts.authToken.length < 16) {
    throw new Error('codec server: authToken must be at least 16 characters');
  }
  const codec = new AesGcmCodec(toKeyRing(opts.keys));
  const tokenDigest = secretDigest(opts.authToken);
  const webTokenDigest = secretDigest(codecWebToken(opts.authToken));
  const origins = new Set(opts.corsOrigins.map(normaliseOrigin));
  const prefix = (opts.prefix ?? '/codec').replace(/\/+$/, '');

  const applyCors = (req: FastifyRequest, reply: FastifyReply): boolean => {
    reply.header('Vary', 'Origin');
    const origin = req.headers.origin;
    if (!origin || !(origins.has('*') || origins.has(normaliseOrigin(origin)))) return false;
    reply.header('Access-Control-Allow-Origin', origin);
    reply.header('Access-Control-Allow-Credentials', 'true');
    return true;
  };

  const person = opts.personTokens ? personTokenVerifier(opts.personTokens) : undefined;
  const denied = (status: 401 | 403 | 503, error: string): PersonCheck => ({ ok: false, status, error });
  const codecTokenRefused = denied(401, 'unauthorized: send Authorization: Bearer <codec token>');
  const authorised = {
    bearer: async (req: FastifyRequest): Promise<PersonCheck> => {
      const token = bearerToken(req.headers.authorization);
      if (secretMatches(token, tokenDigest)) return { ok: true, subject: '' };
      // A JWT (three dot-separated parts): a person's access token, when they are accepted.
      if (!person || !token || token.split('.').length !== 3) return codecTokenRefused;
      const ns = req.headers['x-namespace'];
      const checked = await person(token, typeof ns === 'string' && ns ? ns : undefined);
      if (checked.ok) req.log.info({ codecPerson: checked.subject }, 'codec: payloads for a signed-in person');
      return checked;
    },
    web: async (req: FastifyRequest): Promise<PersonCheck> => (secretMatches((req.params as { token?: string }).token, webTokenDigest) ? { ok: true, subject: '' } : codecTokenRefused),
  };

  for (const op of ['encode', 'decode'] as const) {
    for (const [url, isAuthorised] of [
      [`${prefix}/${op}`, authorised.bearer],
      [`${prefix}/web/:token/${op}`, authorised.web],
    ] as const) {
      app.options(url, { schema: { hide: true } }, async (req, reply) => {
        if (applyCors(req, reply)) {
          reply.header('Access-Control-Allow-Methods', 'POST, OPTIONS');
          reply.header('Access-Control-Allow-Headers', ALLOWED_HEADERS);
          reply.header('Access-Control-Max-Age', '600');
        }
        return reply.code(204).send();
      });

      // The token is checked in onRequest, before the body is read or parsed.
      const onRequest = async (req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> => {
        applyCors(req, reply);
        const checked = await isAuthorised(req);
        if (checked.ok) return undefined;
        // The unread body is not wanted: close the connection after this answer.
        reply.header('Connection', 'close');
        if (checked.status === 401) reply.header('WWW-Authenticate', 'Bearer realm="codec"');
        if (checked.status === 503) reply.header('Retry-After', '5');
        return reply.code(checked.status).send({ error: checked.error });
      };
      const web = url.includes('/web/');
      const schema = {
        tags: ['codec'],
        summary: `${op === 'encode' ? 'Encrypt' : 'Decrypt'} payloads (${web ? 'Temporal Web, capability URL' : 'Bearer codec token'})`,
        description:
          (web
            ? "Authorised by the path token (derived from CODEC_AUTH_TOKEN; give the URL only to an operators' Temporal Web). "
            : 'Authorised by Authorization: Bearer <CODEC_AUTH_TOKEN>, checked before the body is read. ') +
          "Temporal's remote codec protocol: { payloads: [{ metadata, data }] } in and out. Sealed PINs and tokens stay sealed.",
        operationId: `${op}Payloads${web ? 'ForTemporalWeb' : ''}`,
        security: web ? [] : [{ codecToken: [] }],
      };
      // Documented in JSON Schema for the OpenAPI document only (the gateway's transform reads it).
      const config = { openapi: { requestBody: CODEC_OPENAPI_BODY, responses: CODEC_OPENAPI_RESPONSES } };
      app.post(url, { bodyLimit: CODEC_BODY_LIMIT, onRequest, schema, config }, async (req, reply) => {
        const parsed = PayloadsBody.safeParse(req.body);
        if (!parsed.success) {
          const issue = parsed.error.issues[0];
          return reply.code(400).send({ error: `invalid body: ${issue?.path.join('.') || 'body'}: ${issue?.message}` });
        }
        const input = (parsed.data?.payloads ?? []).map(payloadFromJson);
        try {
          const output = op === 'encode' ? await codec.encode(input) : await codec.decode(input);
          return reply.send({ payloads: output.map(payloadToJson) });
        } catch (err) {
          if (err instanceof PayloadDecryptionError) return reply.code(422).send({ error: err.message });
          req.log.error({ err: { name: (err as Error).name } }, `codec ${op} failed`);
          return reply.code(500).send({ error: `codec ${op} failed` });
        }
      });
    }
  }
}

/** A fastify plugin form of registerCodecServer: `app.register(codecServerPlugin, opts)`. */
export async function codecServerPlugin(app: FastifyInstance, opts: CodecServerOptions): Promise<void> {
  registerCodecServer(app, opts);
}

export interface StartedCodecServer {
  app: FastifyInstance;
  /** e.g. http://127.0.0.1:PORT — the codec endpoint is `${url}${prefix}`. */
  url: string;
  port: number;
  close(): Promise<void>;
}

/**
 * Runs the codec server on its own (port 0 = a free port); over TLS with `https` (Temporal Web
 * sends a person's access token only to an https codec endpoint).
 */
export async function startCodecServer(
  opts: CodecServerOptions & { port: number; host?: string; logger?: boolean; https?: { key: string | Buffer; cert: string | Buffer } },
): Promise<StartedCodecServer> {
  const app = (opts.https ? Fastify({ logger: opts.logger ?? false, https: opts.https }) : Fastify({ logger: opts.logger ?? false })) as unknown as FastifyInstance;
  registerCodecServer(app, opts);
  const host = opts.host ?? '127.0.0.1';
  await app.listen({ port: opts.port, host });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : opts.port;
  const shownHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  return { app, url: `${opts.https ? 'https' : 'http'}://${shownHost}:${port}`, port, close: () => app.close() };
}
