/**
 * The gateway's OpenAPI document: @fastify/swagger's options, and the rules that make the document
 * fit for generators and people whatever route a module adds:
 *
 *   every operation      an operationId (the route's own, else derived from method and path), a
 *                        summary (the route's), security (the route's; else the API key when the
 *                        route's config asks for it; else none, declared as `security: []`)
 *   every status         a description instead of "Default Response"
 *   429, 503 and 504     declared with a Retry-After header: 429 on every route the gateway's rate
 *                        limit covers (all but the health checks), 503 on every /v1 route (they all
 *                        reach Temporal), 504 wherever a route declares it
 *   401                  on every secured route
 *   403                  on every API-key route (the key's role lacks the route's access)
 *   components           a `FooInput` twin identical to `Foo` (fastify-type-provider-zod emits
 *                        both) is merged into `Foo`; a twin used alone takes the plain name;
 *                        schemas no operation or webhook reaches are dropped (other apps' schemas
 *                        in the same process share zod's global registry)
 *   webhooks             every merchant event type, its body the contract's schema (openapi-webhooks.ts)
 *   allOf                an inline branch that narrows a referenced schema (an event's `state`) does
 *                        not close the object: its `additionalProperties: false` is dropped, else
 *                        no object could validate against both branches
 *
 * test/unit/openapi.test.ts checks these rules on the served document and runs `redocly lint` on it.
 */
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { API_KEY_SECURITY } from './context';
import { EVENTS_TAG, eventWebhooks } from './openapi-webhooks';

/** Routes outside the gateway's own rate limit (and so without a 429). */
export const RATE_LIMIT_EXEMPT_ROUTES: ReadonlySet<string> = new Set(['/healthz', '/readyz', '/openapi.json']);
/** Where the browsable API reference is served (no API key). */
export const DOCS_PREFIX = '/docs';

export function isRateLimitExempt(url: string | undefined): boolean {
  return url === undefined || RATE_LIMIT_EXEMPT_ROUTES.has(url) || url === DOCS_PREFIX || url.startsWith(`${DOCS_PREFIX}/`);
}

const RETRY_AFTER = {
  'Retry-After': { description: 'seconds to wait before trying again', schema: { type: 'integer', minimum: 0 } },
};

const STATUS_DESCRIPTIONS: Record<string, string> = {
  '200': 'OK',
  '201': 'Created',
  '204': 'No content',
  '400': "Invalid request: `message` says '<field>: <rule>' and `field` names the field; nothing was started",
  '401': 'Missing credentials (the WWW-Authenticate header says which)',
  '403': 'Forbidden',
  '404': 'Not found',
  '409': 'Conflict with the flow as it is',
  '410': 'Gone: the flow is closed',
  '413': 'Request body too large',
  '414': 'A path segment is too long',
  '415': 'Unsupported media type',
  '422': 'Unprocessable',
  '429': 'Too many requests: wait Retry-After seconds',
  '500': 'Internal error (logged by the gateway)',
  '502': "The provider refused or did not answer; the flow's view says what happened",
  '503': 'Temporal or a worker did not answer in time: retry after Retry-After seconds',
  '504': 'Started (or sent) but no answer yet: look the flow up by flow_id, after Retry-After seconds',
};

type Json = Record<string, unknown>;

/** getSwapsBySwapId for GET /v1/swaps/{swap_id}: the fallback operationId. */
export function deriveOperationId(method: string, url: string): string {
  const words = url
    .split('/')
    .filter((s) => s && s !== 'v1')
    .map((s) => {
      const param = /^[:{](\w+)}?$/.exec(s);
      const name = (param ? `by_${param[1]}` : s).split(/[^A-Za-z0-9]+/).filter(Boolean);
      return name.map((w) => w[0]!.toUpperCase() + w.slice(1)).join('');
    });
  return `${method.toLowerCase()}${words.join('')}`;
}

interface TransformInput {
  schema: Json | undefined;
  url: string;
  route: { method: string | string[]; config?: { apiKey?: boolean; openapi?: OpenApiExtras } };
  openapiObject: Json;
}

/**
 * What a route whose body and answers are not zod schemas (the codec server's) documents in its
 * `config.openapi`: the OpenAPI requestBody and responses, as they are to appear.
 */
export interface OpenApiExtras {
  requestBody?: Json;
  responses?: Record<string, Json>;
}

/** `/codec/web/:token/encode` as OpenAPI writes it: `/codec/web/{token}/encode`. */
const openApiPath = (url: string): string => url.replace(/:(\w+)/g, '{$1}');

/** The transforms of one document: per route, then the whole document. */
function gatewayTransforms(): { transform: (input: TransformInput) => { schema: Json; url: string }; transformObject: (input: { openapiObject: Json }) => Json } {
  const extras = new Map<string, OpenApiExtras>();
  return {
    /** Per route: the zod transform, then operationId and security when the route did not give them. */
    transform(input) {
      const out = jsonSchemaTransform(input as never) as { schema: Json | undefined; url: string };
      const schema: Json = { ...(out.schema ?? {}) };
      if (schema.hide) return { schema, url: out.url };
      const method = Array.isArray(input.route.method) ? input.route.method[0]! : input.route.method;
      schema.operationId ??= deriveOperationId(method, input.url);
      schema.security ??= input.route.config?.apiKey ? API_KEY_SECURITY : [];
      const documented = input.route.config?.openapi;
      if (documented) extras.set(`${method.toLowerCase()} ${openApiPath(input.url)}`, documented);
      return { schema, url: out.url };
    },
    /** The whole document: the zod components, then the rules of the module comment. */
    transformObject(input) {
      const doc = jsonSchemaTransformObject(input as never) as Json;
      for (const { path, method, op } of operations(doc)) {
        const documented = extras.get(`${method} ${path}`);
        if (documented?.requestBody) op.requestBody = documented.requestBody;
        if (documented?.responses) op.responses = { ...documented.responses };
      }
      doc.webhooks = eventWebhooks();
      normaliseOperations(doc);
      tidyComponents(doc);
      return doc;
    },
  };
}

function operations(doc: Json): Array<{ path: string; method: string; op: Json }> {
  const out: Array<{ path: string; method: string; op: Json }> = [];
  for (const [path, item] of Object.entries((doc.paths ?? {}) as Record<string, Json>)) {
    for (const [method, op] of Object.entries(item)) {
      if (['get', 'put', 'post', 'delete', 'patch', 'options', 'head'].includes(method)) out.push({ path, method, op: op as Json });
    }
  }
  return out;
}

const errorContent = (ref: string): Json => ({ 'application/json': { schema: { $ref: `#/components/schemas/${ref}` } } });

function normaliseOperations(doc: Json): void {
  for (const { path, op } of operations(doc)) {
    const responses = ((op.responses ??= {}) as Record<string, Json>);
    const secured = Array.isArray(op.security) && op.security.length > 0;
    if (secured && !responses['401']) responses['401'] = { description: STATUS_DESCRIPTIONS['401'], content: errorContent('Error') };
    // API-key routes: a key whose role lacks the route's access (docs/security.md).
    if (secured && (op.security as Json[]).some((s) => 'apiKey' in s) && !responses['403']) {
      const who = (op.security as Json[]).some((s) => 'personToken' in s) ? "the API key's role, or the person's permissions," : "the API key's role";
      responses['403'] = { description: `Forbidden: ${who} lacks this route's access (\`message\` names the role needed)`, content: errorContent('Error') };
    }
    if (!isRateLimitExempt(path) && !responses['429']) responses['429'] = { description: STATUS_DESCRIPTIONS['429'], content: errorContent('Error') };
    if (path.startsWith('/v1/') && !responses['503']) responses['503'] = { description: STATUS_DESCRIPTIONS['503'], content: errorContent('Unavailable') };
    for (const [status, response] of Object.entries(responses)) {
      if (!response.description || response.description === 'Default Response') {
        response.description = STATUS_DESCRIPTIONS[status] ?? `HTTP ${status}`;
      }
      if ((status === '429' || status === '503' || status === '504') && !isRateLimitExempt(path)) response.headers = { ...RETRY_AFTER, ...((response.headers as Json | undefined) ?? {}) };
    }
  }
}

/** Every `#/components/schemas/<id>` reference under `value`. */
function refsIn(value: unknown, into: Set<string>): Set<string> {
  if (Array.isArray(value)) value.forEach((v) => refsIn(v, into));
  else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (k === '$ref' && typeof v === 'string' && v.startsWith('#/components/schemas/')) into.add(v.slice('#/components/schemas/'.length));
      else refsIn(v, into);
    }
  }
  return into;
}

function rewriteRefs(value: unknown, from: string, to: string): void {
  if (Array.isArray(value)) value.forEach((v) => rewriteRefs(v, from, to));
  else if (value && typeof value === 'object') {
    const o = value as Json;
    for (const [k, v] of Object.entries(o)) {
      if (k === '$ref' && v === `#/components/schemas/${from}`) o[k] = `#/components/schemas/${to}`;
      else rewriteRefs(v, from, to);
    }
  }
}

/** Schemas reachable from the paths and webhooks (through other schemas too). */
function reachable(doc: Json, schemas: Record<string, unknown>): Set<string> {
  const seen = new Set<string>();
  const queue = [...refsIn([doc.paths, doc.webhooks], new Set())];
  while (queue.length > 0) {
    const id = queue.pop()!;
    if (seen.has(id)) continue;
    seen.add(id);
    queue.push(...refsIn(schemas[id], new Set()));
  }
  return seen;
}

/** Drops `additionalProperties` from the inline branches of every allOf under `value` (see the module comment). */
function openNarrowingBranches(value: unknown): void {
  if (Array.isArray(value)) value.forEach(openNarrowingBranches);
  else if (value && typeof value === 'object') {
    const o = value as Json;
    if (Array.isArray(o.allOf)) for (const branch of o.allOf as Json[]) if (branch && !('$ref' in branch)) delete branch.additionalProperties;
    Object.values(o).forEach(openNarrowingBranches);
  }
}

function tidyComponents(doc: Json): void {
  const components = (doc.components ??= {}) as Json;
  const schemas = ((components.schemas ??= {}) as Record<string, unknown>);
  let used = reachable(doc, schemas);
  for (const id of Object.keys(schemas)) {
    if (!id.endsWith('Input')) continue;
    const plain = id.slice(0, -'Input'.length);
    if (!(plain in schemas)) continue;
    const same = JSON.stringify(schemas[id]) === JSON.stringify(schemas[plain]);
    if (same || !used.has(plain)) {
      // One schema under the plain name: the twin's references point there.
      if (!same) schemas[plain] = schemas[id];
      delete schemas[id];
      rewriteRefs(doc.paths, id, plain);
      rewriteRefs(doc.webhooks, id, plain);
      rewriteRefs(schemas, id, plain);
    }
  }
  used = reachable(doc, schemas);
  // Sorted, so the document does not depend on the order modules registered their schemas.
  components.schemas = Object.fromEntries(Object.keys(schemas).filter((id) => used.has(id)).sort().map((id) => [id, schemas[id]]));
  openNarrowingBranches(components.schemas);
}

/** @fastify/swagger's options for the gateway. */
export function gatewaySwaggerOptions(): Record<string, unknown> {
  return {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'merchant-payment-flows gateway',
        version: '1.0.0',
        license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
        description:
          'Durable wallet swaps and hosted bank-transfer payment links on Temporal. Errors are ' +
          '{ error, message, field? }; a bad body is 400 invalid_request naming the field and starts nothing. ' +
          'Backend routes take the API key (x-api-key, or Authorization: Bearer); with GATEWAY_OIDC_ISSUER set, the read routes and ' +
          "the operator routes (/v1/admin/*) also take a person's access token from the identity provider (no person starts or cancels a flow); the PIN routes take the " +
          "swap's pin_token; the provider's notifications carry a per-flow token in their URL. 429 and 503 " +
          'answers carry Retry-After. The merchant events your endpoints receive are listed under webhooks.',
      },
      servers: [{ url: '/', description: 'this gateway' }],
      tags: [
        { name: 'swaps', description: 'Wallet currency swaps: start, PIN, state, cancel' },
        { name: 'payment links', description: 'Hosted NGN bank-transfer payment links' },
        { name: 'categories', description: "The provider's product categories" },
        { name: 'notifications', description: "The provider's notifications (the flows' notification_url)" },
        { name: 'PIN page', description: 'The reference PIN-entry page' },
        { name: 'codec', description: 'The payload codec server for Temporal Web and the Temporal CLI' },
        { name: 'operations', description: 'Liveness and readiness' },
        { name: 'provider guard', description: 'The kill switch and circuit breakers in front of the provider (operator role)' },
        { name: 'limits', description: "Today's use of the daily limits" },
        { name: 'API keys', description: 'Keys made, revoked and rotated through the API, beside the keyring file (operator role)' },
        EVENTS_TAG,
      ],
      components: {
        securitySchemes: {
          apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key', description: 'GATEWAY_API_KEY' },
          apiKeyBearer: { type: 'http', scheme: 'bearer', description: 'GATEWAY_API_KEY as a Bearer token' },
          pinToken: { type: 'http', scheme: 'bearer', description: "the swap's pin_token (from POST /v1/swaps)" },
          codecToken: {
            type: 'http',
            scheme: 'bearer',
            description: "CODEC_AUTH_TOKEN; with GATEWAY_OIDC_ISSUER set, also a person's access token (Temporal Web's passAccessToken) with read on the namespace named in X-Namespace",
          },
          personToken: {
            type: 'http',
            scheme: 'bearer',
            bearerFormat: 'JWT',
            description:
              "A person's access token from the identity provider (GATEWAY_OIDC_ISSUER, GATEWAY_OIDC_AUDIENCE): " +
              'admin on the namespace or temporal-system:admin in its permissions claim acts as the operator role on the operator routes (and may redeliver an event); ' +
              'read or write on it reads the lists and views, the reconciliation queue and the provider guard; no person starts or cancels a flow; an action is recorded as person <name> (sub <subject>)',
          },
        },
      },
    },
    ...gatewayTransforms(),
  };
}
