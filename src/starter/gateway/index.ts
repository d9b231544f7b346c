/**
 * The HTTP gateway (DESIGN.md "Gateway HTTP API"): fastify 5 with zod schemas for validation and
 * the OpenAPI document (GET /openapi.json), the backend's API-key routes, the PIN-entry page and
 * its pin_token routes (rate-limited), the provider's notification webhook, health checks, and
 * the codec server at /codec for Temporal Web.
 *
 *   const gw = await startGateway({ mpf, apiKey, port: 0 });   // gw.url, gw.app, gw.close()
 *
 * `mpf gateway` runs runGatewayMain(): configured from the environment, prints one line
 * `listening on http://127.0.0.1:PORT` (logs go to stderr), stops on SIGINT/SIGTERM.
 */
import type { AddressInfo } from 'node:net';
import fastifyRateLimit from '@fastify/rate-limit';
import fastifySwagger from '@fastify/swagger';
import Fastify, { type FastifyInstance } from 'fastify';
import { jsonSchemaTransform, jsonSchemaTransformObject, serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import { registerCodecServer } from '../../codec/codec-server';
import { connectClient, temporalTargetFromEnv } from '../../temporal/connection';
import { ConfigError, loadEnv, requireKeys } from '../../config/env';
import { MpfClient } from '../client';
import { apiKeyChecker } from './auth';
import type { GatewayContext } from './context';
import { installErrorHandlers, sendError } from './errors';
import { checkPublicAddresses } from './public-address';
import { gatewayLoggerOptions } from './logging';
import { registerLinkRoutes } from './routes-links';
import { registerMiscRoutes } from './routes-misc';
import { notificationRoutes } from './routes-notifications';
import { registerSwapRoutes } from './routes-swaps';

export { sanitizeUrl } from './logging';
export { PIN_PAGE_CSP } from './pin-page';

export interface GatewayOptions {
  mpf: MpfClient;
  /** GATEWAY_API_KEY: backend routes need `x-api-key: <key>` or `Authorization: Bearer <key>`. */
  apiKey: string;
  /** Default 127.0.0.1. */
  host?: string;
  /** 0 = a free port (default 0). */
  port?: number;
  /** GATEWAY_PUBLIC_URL; default http://<host>:<port>. Handed to mpf.setPublicUrl() after listen. */
  publicUrl?: string;
  /** Mounts the codec server at /codec (its own Bearer token; exempt from the API key). */
  codec?: { keys: string; authToken: string; corsOrigins: string[] };
  /** PIN submissions per swap and client address; default 5 per minute. */
  pinRateLimit?: { max: number; timeWindowMs: number };
  /** false (default), true, or pino options such as { level, stream }; secrets are always redacted. */
  logger?: boolean | object;
}

export interface RunningGateway {
  /** Where it listens, e.g. http://127.0.0.1:PORT. */
  url: string;
  app: FastifyInstance;
  close(): Promise<void>;
}

export const DEFAULT_PIN_RATE_LIMIT = { max: 5, timeWindowMs: 60_000 };

/** Builds the gateway's fastify app (not listening). */
export async function buildGateway(opts: GatewayOptions): Promise<FastifyInstance> {
  const checkApiKey = apiKeyChecker(opts.apiKey);
  const ctx: GatewayContext = { mpf: opts.mpf, pinRateLimit: opts.pinRateLimit ?? DEFAULT_PIN_RATE_LIMIT };

  const app = Fastify({
    logger: gatewayLoggerOptions(opts.logger),
    forceCloseConnections: true,
    bodyLimit: 256 * 1024,
  });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  installErrorHandlers(app);

  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'merchant-payment-flows gateway',
        version: '1.0.0',
        description:
          'Durable wallet swaps and hosted bank-transfer payment links on Temporal. Errors are ' +
          '{ error, message, field? }; a bad body is 400 invalid_request naming the field and starts nothing.',
      },
      components: {
        securitySchemes: {
          apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key', description: 'GATEWAY_API_KEY' },
          apiKeyBearer: { type: 'http', scheme: 'bearer', description: 'GATEWAY_API_KEY as a Bearer token' },
          pinToken: { type: 'http', scheme: 'bearer', description: "the swap's pin_token (from POST /v1/swaps)" },
        },
      },
    },
    transform: jsonSchemaTransform,
    transformObject: jsonSchemaTransformObject,
  });
  await app.register(fastifyRateLimit, { global: false });

  app.addHook('onRequest', async (req, reply) => {
    if (!req.routeOptions.config?.apiKey) return undefined;
    const verdict = checkApiKey(req);
    if (verdict === 'ok') return undefined;
    reply.header('www-authenticate', 'ApiKey header="x-api-key", Bearer');
    return sendError(reply, 401, 'unauthorized', verdict === 'missing' ? 'send the API key as x-api-key or Authorization: Bearer' : 'the API key is not valid');
  });

  registerSwapRoutes(app, ctx);
  registerLinkRoutes(app, ctx);
  registerMiscRoutes(app, ctx);
  await app.register(notificationRoutes, ctx);
  if (opts.codec) registerCodecServer(app, { ...opts.codec, prefix: '/codec' });

  await app.ready();
  return app;
}

const shownHost = (host: string): string =>
  host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;

/** Builds and starts the gateway; then points the client's pin_url / notification_url at it. */
export async function startGateway(opts: GatewayOptions): Promise<RunningGateway> {
  const app = await buildGateway(opts);
  const host = opts.host ?? '127.0.0.1';
  try {
    await app.listen({ host, port: opts.port ?? 0 });
  } catch (err) {
    await app.close();
    throw err;
  }
  const port = (app.server.address() as AddressInfo).port;
  const url = `http://${shownHost(host)}:${port}`;
  opts.mpf.setPublicUrl(opts.publicUrl ?? url);
  return { url, app, close: () => app.close() };
}

/**
 * `mpf gateway`: loads the environment (GATEWAY_API_KEY and PAYLOAD_ENCRYPTION_KEYS required),
 * connects to Temporal, serves until SIGINT/SIGTERM. Prints exactly one line to stdout,
 * `listening on http://HOST:PORT`; its logs (JSON, secrets redacted) go to stderr.
 */
export async function runGatewayMain(opts: { port?: number; host?: string } = {}): Promise<void> {
  const env = loadEnv();
  if (!env.GATEWAY_API_KEY) throw new ConfigError('GATEWAY_API_KEY: is required (at least 16 characters) for the gateway');
  const keys = requireKeys(env);
  const port = opts.port ?? env.GATEWAY_PORT;
  const host = opts.host ?? env.GATEWAY_HOST ?? '127.0.0.1';
  const warning = checkPublicAddresses(host, env); // throws under NODE_ENV=production
  if (warning) console.error(`gateway: ${warning}`);
  const client = await connectClient(temporalTargetFromEnv(env), keys);
  const mpf = new MpfClient({
    client,
    taskQueue: env.TEMPORAL_TASK_QUEUE,
    keys,
    publicUrl: env.GATEWAY_PUBLIC_URL ?? `http://${shownHost(host)}:${port}`,
    notificationBaseUrl: env.GATEWAY_NOTIFICATION_BASE_URL,
    pinMaxAttempts: env.SWAP_PIN_MAX_ATTEMPTS,
    swapNotificationWaitSeconds: env.SWAP_NOTIFICATION_WAIT_SECONDS,
    linkLifetimeSeconds: env.LINK_LIFETIME_SECONDS,
    linkLateNotificationGraceSeconds: env.LINK_LATE_NOTIFICATION_GRACE_SECONDS,
  });
  let gateway: RunningGateway;
  try {
    gateway = await startGateway({
      mpf,
      apiKey: env.GATEWAY_API_KEY,
      host,
      port,
      publicUrl: env.GATEWAY_PUBLIC_URL,
      codec: env.CODEC_AUTH_TOKEN ? { keys, authToken: env.CODEC_AUTH_TOKEN, corsOrigins: env.CODEC_CORS_ORIGINS } : undefined,
      logger: env.LOG_LEVEL === 'silent' ? false : { level: env.LOG_LEVEL, stream: process.stderr },
    });
  } catch (err) {
    await client.connection.close();
    throw err;
  }
  await new Promise<void>((resolve) => {
    const stop = (): void => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
    process.stdout.write(`listening on ${gateway.url}\n`);
  });
  await gateway.close();
  await client.connection.close();
}
