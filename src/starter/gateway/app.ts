/**
 * The HTTP gateway's fastify app: zod schemas for validation and the OpenAPI document
 * (GET /openapi.json), the backend's API-key routes, the PIN-entry page and its pin_token routes
 * (rate-limited), the provider's notification webhook, health checks, and the codec server at
 * /codec for Temporal Web. With `personTokens` (GATEWAY_OIDC_ISSUER), the operator routes and
 * /codec also take a person's access token from the identity provider (auth/person-tokens.ts); who may call
 * what is the auth.ts plugin's policy, and this module only assembles. Built without listening, so tests drive it with `app.inject`; main.ts
 * listens and is the `mpf gateway` process.
 */
import fastifyRateLimit from '@fastify/rate-limit';
import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import Fastify, { type FastifyInstance } from 'fastify';
import { serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import { registerCodecServer } from '../../codec/codec-server';
import type { MpfClient } from '../client/mpf-client';
import type { SlotAhead } from '../client/pin-gate';
import { type KeyringSource, KeyringSource as Keyrings } from '../../auth/keyring';
import { gatewayAuth, rateLimitKeyOf } from './auth';
import type { PersonTokenSettings } from '../../auth/person-tokens';
import { MAX_FLOW_ID_PREFIX_LENGTH } from '../../contract/flow-kinds';
import type { GatewayContext } from './context';
import { frameworkErrors, installErrorHandlers } from './errors';
import { NotificationGuard } from './notification-guard';
import { gatewayLoggerOptions } from './logging';
import { gatewayDocsOptions } from './docs';
import { gatewaySwaggerOptions, isRateLimitExempt } from './openapi';
import { gatewayTracingPlugin, installRequestIds, requestIdServerOptions, withTraceIds } from './observability';
import { GatewayMetrics } from './metrics';
import { registerCategoryRoutes } from './routes/categories';
import { registerEventRoutes } from './routes/events';
import { registerProviderRoutes } from './routes/provider';
import { registerWebhookEndpointRoutes } from './routes/webhook-endpoints';
import { registerApiKeyRoutes } from './routes/api-keys';
import { ApiKeyCache, type ApiKeyCacheOptions } from '../client/api-keys';
import { registerLinkRoutes } from './routes/links';
import { registerLimitRoutes } from './routes/limits';
import { registerListRoutes } from './routes/lists';
import { registerReconciliationRoutes } from './routes/reconciliation';
import { notificationRoutes } from './routes/notifications';
import { registerOperationRoutes } from './routes/operations';
import { registerPinRoutes } from './routes/pin';
import { registerSwapRoutes } from './routes/swaps';
import { consolePlugin } from '../console/plugin';
import type { LocalSignIn } from '../console/local-sign-in';

export interface GatewayAppOptions {
  mpf: MpfClient;
  /**
   * GATEWAY_API_KEY: one key of role operator (every right), as before keyrings. Backend routes
   * need `x-api-key: <key>` or `Authorization: Bearer <key>`.
   */
  apiKey?: string;
  /** The keyring (GATEWAY_API_KEYS_FILE / GATEWAY_API_KEYS, plus GATEWAY_API_KEY); default: apiKey alone. */
  keyring?: KeyringSource;
  /** Mounts the codec server at /codec (its own Bearer token; exempt from the API key). */
  codec?: { keys: string; authToken: string; corsOrigins: string[] };
  /**
   * GATEWAY_OIDC_*: people's access tokens (`Authorization: Bearer <JWT>` of the identity
   * provider) on the operator routes (/v1/admin/*), mapped to a role from the permissions claim on
   * `namespace` (default the client's): admin on it or `temporal-system:admin` -> operator, read or
   * write -> read_only; and on /codec (read on the namespace named in X-Namespace). Unset: API keys only.
   */
  personTokens?: PersonTokenSettings & { namespace?: string };
  /**
   * PIN submissions per swap and client address that passed the pin_token check (requests with a
   * missing or wrong token are not counted, so they cannot lock the owner out); default 5 per minute.
   */
  pinRateLimit?: { max: number; timeWindowMs: number };
  /**
   * Wrong PINs per user_ref across all their swaps, shared by every gateway (kept in Temporal);
   * default 10 per 15 minutes. `answerTimeoutMs`: how long a PIN waits for the budget's answer
   * (default 2 s; tests shorten it).
   */
  userPinBudget?: { max: number; timeWindowMs: number; answerTimeoutMs?: number };
  /**
   * What the gateway does about the user's wrong-PIN budget as it starts a swap
   * (docs/security-outbound.md, "The wrong-PIN budget per user"): `reserve` (default) a slot for
   * the swap's PIN, which that PIN then uses through this gateway instead of a take of its own;
   * `start` the budget's workflow only, so the PIN's take updates it running (the release before
   * reservations, the bench's `before`); `off`: nothing, the PIN's take starts it.
   */
  pinSlotAhead?: SlotAhead;
  /**
   * Requests per client address and time window on every route but the health checks and the docs
   * (routes with their own limit keep it), per gateway process; default 6000 a minute (100/s).
   */
  rateLimit?: { max: number; timeWindowMs: number };
  /** Signals one flow may receive from this process's notification receiver; default 500. */
  notificationSignalsPerFlow?: number;
  /**
   * GATEWAY_TRUST_PROXY: fastify's trustProxy (true, or the proxies' addresses/CIDRs, comma-separated). Behind a
   * reverse proxy, set it so the per-address PIN limit sees clients, not the proxy. Default false.
   */
  trustProxy?: boolean | string | string[];
  /** false (default), true, or pino options such as { level, stream }; secrets are always redacted. */
  logger?: boolean | object;
  /** Its Prometheus metrics (metrics.ts); default: a registry of its own, served only when main.ts is given an address. */
  metrics?: GatewayMetrics;
  /**
   * This gateway's reading of the keys made through /v1/api_keys: how often it reads them (default
   * 5 s: a revoke reaches it within that) and how old a reading may grow before those keys are
   * refused 503 (default 15 s). The keyring's keys do not depend on it.
   */
  apiKeys?: Pick<ApiKeyCacheOptions, 'refreshMs' | 'staleMs'>;
  /**
   * The merchant's console at /console/ (../console/plugin.ts): with `personTokens`, people sign in
   * at that IdP as the public client `oidcClientId`; with `local` (the demo only, no personTokens),
   * through its one-time links, their tokens verified by the same path as an IdP's.
   */
  console?: { oidcClientId?: string; local?: LocalSignIn };
}

const DEFAULT_PIN_RATE_LIMIT = { max: 5, timeWindowMs: 60_000 };
const DEFAULT_RATE_LIMIT = { max: 6000, timeWindowMs: 60_000 };

/**
 * The longest path segment a route takes: a flow id is its prefix (`paylink-`, the longest) + a
 * reference of up to 100 characters, each of which may be percent-encoded (":" is %3A), so 8 + 300.
 * fastify's default (100) made references of 93–100 characters unreachable (414).
 */
export const MAX_PARAM_LENGTH = MAX_FLOW_ID_PREFIX_LENGTH + 3 * 100;

/** Builds the gateway's fastify app (not listening). */
export async function buildGateway(opts: GatewayAppOptions): Promise<FastifyInstance> {
  const keyring = opts.keyring ?? new Keyrings({ legacyKey: opts.apiKey });
  const ctx: GatewayContext = {
    mpf: opts.mpf,
    pinRateLimit: opts.pinRateLimit ?? DEFAULT_PIN_RATE_LIMIT,
    pinGate: opts.mpf.pinGate({
      ...(opts.userPinBudget ? { limits: opts.userPinBudget } : {}),
      onSettleFailed: (swapId, err) => app.log.warn({ swap_id: swapId, err: String(err) }, 'PIN budget slot not settled (given back after its hold time)'),
      slotAhead: opts.pinSlotAhead ?? 'reserve',
      onAheadFailed: (err) => app.log.debug({ err: String(err) }, "PIN budget's slot not reserved (or budget not started) ahead of its PIN (its take does it)"),
    }),
    notificationGuard: new NotificationGuard({ maxSignalsPerFlow: opts.notificationSignalsPerFlow }),
    metrics: opts.metrics ?? new GatewayMetrics({ mpf: opts.mpf }),
    apiKeyCache: new ApiKeyCache(opts.mpf.apiKeys, {
      ...opts.apiKeys,
      onReadFailed: (err) => app.log.warn({ err: { type: (err as Error)?.name, message: (err as Error)?.message } }, 'the API keys record could not be read (the last reading stays until it is stale)'),
    }),
  };

  const app = Fastify({
    logger: withTraceIds(gatewayLoggerOptions(opts.logger)),
    ...requestIdServerOptions,
    forceCloseConnections: true,
    bodyLimit: 256 * 1024,
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    frameworkErrors,
    trustProxy: opts.trustProxy ?? false,
  });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  installErrorHandlers(app);
  installRequestIds(app);
  const tracing = gatewayTracingPlugin(); // undefined unless tracing is installed
  if (tracing) await app.register(tracing);
  ctx.metrics.install(app);

  await app.register(fastifySwagger, gatewaySwaggerOptions());
  await app.register(fastifySwaggerUi, gatewayDocsOptions());
  // Every route but the health checks and the docs is limited per client address (a route may set its own).
  await app.register(fastifyRateLimit, {
    global: true,
    max: opts.rateLimit?.max ?? DEFAULT_RATE_LIMIT.max,
    timeWindow: opts.rateLimit?.timeWindowMs ?? DEFAULT_RATE_LIMIT.timeWindowMs,
    allowList: (req) => isRateLimitExempt(req.routeOptions.url),
    keyGenerator: (req) => rateLimitKeyOf(keyring, req),
  });

  if (opts.console?.local && opts.personTokens) throw new Error("the console's local sign-in is for a gateway without an identity provider (GATEWAY_OIDC_ISSUER unset)");
  const { namespace, ...personTokens } = opts.personTokens ?? {};
  const people = opts.personTokens ? (personTokens as PersonTokenSettings) : opts.console?.local?.tokenSettings;
  const personNamespace = namespace ?? opts.mpf.temporal?.options.namespace ?? 'default';
  await app.register(gatewayAuth, { keyring, personNamespace, recordKeys: ctx.apiKeyCache, ...(people ? { personTokens: people } : {}) });
  app.addHook('onClose', () => ctx.apiKeyCache.close());
  // After the last request: the PIN budget's reserved slots given back, its background calls settled.
  app.addHook('onClose', () => ctx.pinGate.close());

  registerSwapRoutes(app, ctx);
  registerPinRoutes(app, ctx);
  registerLinkRoutes(app, ctx);
  registerListRoutes(app, ctx);
  registerLimitRoutes(app, ctx);
  registerReconciliationRoutes(app, ctx);
  registerCategoryRoutes(app, ctx);
  registerEventRoutes(app, ctx);
  registerProviderRoutes(app, ctx);
  registerWebhookEndpointRoutes(app, ctx);
  registerApiKeyRoutes(app, ctx);
  registerOperationRoutes(app, ctx);
  await app.register(notificationRoutes, ctx);
  if (opts.codec) registerCodecServer(app, { ...opts.codec, prefix: '/codec', ...(people ? { personTokens: people } : {}) });
  if (opts.console) {
    const oidc = opts.personTokens && opts.console.oidcClientId ? { issuer: opts.personTokens.issuer, clientId: opts.console.oidcClientId } : undefined;
    await app.register(consolePlugin, {
      prefix: '/console',
      gateway: app,
      namespace: personNamespace,
      ...(people ? { personTokens: people } : {}),
      ...(oidc ? { oidc } : {}),
      ...(opts.console.local ? { local: opts.console.local } : {}),
      publicUrl: () => opts.mpf.publicUrl,
    });
  }

  await app.ready();
  return app;
}
