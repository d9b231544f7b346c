/**
 * The gateway as a server: startGateway() builds the app (app.ts) and listens; runGatewayMain()
 * is the `mpf gateway` process, configured from the environment.
 *
 *   const gw = await startGateway({ mpf, apiKey, port: 0 });   // gw.url, gw.app, gw.close()
 */
import { DEFAULT_LEASE_BLOCK } from '../client/deployment-quota';
import { KeyringSource, LEGACY_KEY_ID } from '../../auth/keyring';
import { type PersonTokenSettings, PersonTokens } from '../../auth/person-tokens';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { type AppEnv, ConfigError, fileVariable, isSetDirectly, loadEnv, requireKeys } from '../../config/env';
import { mpfClientFromEnv } from '../client/from-env';
import { localUrl } from '../client/urls';
import { buildGateway, type GatewayAppOptions } from './app';
import { GatewayMetrics, startMetricsServer } from './metrics';
import { checkPublicAddresses } from './public-address';
import { type Tracing, tracingFromEnv } from '../../observability/tracing';

export interface GatewayOptions extends GatewayAppOptions {
  /** Default 127.0.0.1. */
  host?: string;
  /** 0 = a free port (default 0). */
  port?: number;
  /** GATEWAY_PUBLIC_URL; default http://<host>:<port>. Handed to mpf.setPublicUrl() after listen. */
  publicUrl?: string;
  /** GATEWAY_METRICS_ADDRESS: serve GET /metrics on a listener of its own (port 0: a free one). */
  metricsAddress?: { host: string; port: number };
}

export interface RunningGateway {
  /** Where it listens, e.g. http://127.0.0.1:PORT. */
  url: string;
  app: FastifyInstance;
  /** Where GET /metrics is served (with metricsAddress), e.g. http://127.0.0.1:PORT. */
  metricsUrl?: string;
  close(): Promise<void>;
}

/** Builds and starts the gateway; then points the client's pin_url / notification_url at it. */
export async function startGateway(opts: GatewayOptions): Promise<RunningGateway> {
  const metrics = opts.metrics ?? (opts.metricsAddress ? new GatewayMetrics({ mpf: opts.mpf, processMetrics: true }) : undefined);
  const app = await buildGateway({ ...opts, metrics });
  const host = opts.host ?? '127.0.0.1';
  try {
    await app.listen({ host, port: opts.port ?? 0 });
  } catch (err) {
    await app.close();
    throw err;
  }
  const url = localUrl(host, (app.server.address() as AddressInfo).port);
  opts.mpf.setPublicUrl(opts.publicUrl ?? url);
  let metricsServer;
  try {
    metricsServer = metrics && opts.metricsAddress ? await startMetricsServer(metrics, opts.metricsAddress) : undefined;
  } catch (err) {
    await app.close();
    throw err;
  }
  // The provider guard's reading kept fresh, so a start never waits for it (src/starter/client/provider-guard.ts).
  const stopWatching = opts.mpf.watchProviderGuard();
  return {
    url,
    app,
    ...(metricsServer ? { metricsUrl: metricsServer.url } : {}),
    close: async () => {
      await stopWatching();
      await metricsServer?.close();
      await app.close();
      // After the last request: the unused units of a leased deployment count go back to its ledger.
      await opts.mpf.returnLeasedQuota();
    },
  };
}

/**
 * `mpf gateway`: loads the environment (GATEWAY_API_KEY and PAYLOAD_ENCRYPTION_KEYS required),
 * connects to Temporal, serves until SIGINT/SIGTERM. Prints exactly one line to stdout,
 * `listening on http://HOST:PORT`; its logs (JSON, secrets redacted) go to stderr.
 */
export async function runGatewayMain(opts: { port?: number; host?: string } = {}): Promise<void> {
  const env = loadEnv();
  // The keyring: GATEWAY_API_KEYS_FILE (watched: edits apply without a restart), GATEWAY_API_KEYS,
  // and GATEWAY_API_KEY as one key of role operator. A bad entry stops the start, naming it.
  const keysFile = fileVariable('GATEWAY_API_KEYS');
  let keyring: KeyringSource;
  try {
    keyring = new KeyringSource({
      file: keysFile,
      json: isSetDirectly('GATEWAY_API_KEYS') ? env.GATEWAY_API_KEYS : undefined,
      legacyKey: env.GATEWAY_API_KEY,
      onReload: (r) => console.error(`gateway: ${r.message}`),
    });
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
  if (env.GATEWAY_API_KEY) {
    console.error(`gateway: WARNING: GATEWAY_API_KEY is one key of role operator (id ${LEGACY_KEY_ID}) that holds every right, reconciliation included; give each caller a key of its own role in GATEWAY_API_KEYS_FILE (mpf keys new)`);
  }
  const keys = requireKeys(env);
  const personTokens = personTokensFromEnv(env);
  const port = opts.port ?? env.GATEWAY_PORT;
  const host = opts.host ?? env.GATEWAY_HOST ?? '127.0.0.1';
  const warning = checkPublicAddresses(host, env); // throws under NODE_ENV=production
  if (warning) console.error(`gateway: ${warning}`);
  const tracing = startGatewayTracing(); // before the client and the app: both add their instrumentation
  // A long-lived process: a deployment's daily count is leased in blocks and returned as it closes (deployment-quota.ts).
  const mpf = await mpfClientFromEnv(env, { keys, publicUrl: env.GATEWAY_PUBLIC_URL ?? localUrl(host, port), deploymentLeaseBlock: DEFAULT_LEASE_BLOCK });
  const connection = mpf.temporal.connection;
  let gateway: RunningGateway;
  try {
    gateway = await startGateway({
      mpf,
      keyring,
      host,
      port,
      publicUrl: env.GATEWAY_PUBLIC_URL,
      trustProxy: env.GATEWAY_TRUST_PROXY,
      metricsAddress: env.GATEWAY_METRICS_ADDRESS,
      codec: env.CODEC_AUTH_TOKEN ? { keys, authToken: env.CODEC_AUTH_TOKEN, corsOrigins: env.CODEC_CORS_ORIGINS } : undefined,
      ...(personTokens ? { personTokens: { ...personTokens, namespace: env.TEMPORAL_NAMESPACE }, console: { oidcClientId: env.GATEWAY_CONSOLE_CLIENT_ID } } : {}),
      logger: env.LOG_LEVEL === 'silent' ? false : { level: env.LOG_LEVEL, stream: process.stderr },
    });
  } catch (err) {
    await connection.close();
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
    if (gateway.metricsUrl) console.error(`gateway: metrics on ${gateway.metricsUrl}/metrics`);
    if (personTokens) void announcePersonTokens(personTokens, env.TEMPORAL_NAMESPACE, Boolean(env.CODEC_AUTH_TOKEN), env.GATEWAY_CONSOLE_CLIENT_ID);
    process.stdout.write(`listening on ${gateway.url}\n`);
  });
  await gateway.close();
  keyring.close();
  await connection.close();
  await tracing?.shutdown();
}

/** GATEWAY_OIDC_*: people's access tokens on the operator routes and /codec; undefined when GATEWAY_OIDC_ISSUER is unset. */
export function personTokensFromEnv(env: AppEnv): PersonTokenSettings | undefined {
  if (!env.GATEWAY_OIDC_ISSUER || !env.GATEWAY_OIDC_AUDIENCE) return undefined;
  const settings: PersonTokenSettings = {
    issuer: env.GATEWAY_OIDC_ISSUER,
    audience: env.GATEWAY_OIDC_AUDIENCE,
    permissionsClaim: env.GATEWAY_OIDC_PERMISSIONS_CLAIM,
    ...(env.GATEWAY_OIDC_JWKS_URL ? { jwksUrl: env.GATEWAY_OIDC_JWKS_URL } : {}),
  };
  try {
    new PersonTokens(settings); // the same checks as the gateway's, named by variable
  } catch (e) {
    throw new ConfigError(`GATEWAY_OIDC_ISSUER / GATEWAY_OIDC_JWKS_URL: ${(e as Error).message}`, { cause: e });
  }
  return settings;
}

/**
 * Says at start-up where people's tokens are taken, and whether the IdP's keys can be fetched now.
 * An IdP that cannot be reached does not stop the gateway: API keys keep working, and people's
 * tokens are answered 503 until it can be reached (fail closed, never let through).
 */
async function announcePersonTokens(settings: PersonTokenSettings, namespace: string, codec: boolean, consoleClient: string): Promise<void> {
  console.error(`gateway: people's access tokens from ${settings.issuer} (audience ${settings.audience}, claim ${settings.permissionsClaim ?? 'permissions'}, namespace ${namespace}) accepted on the API${codec ? ' and /codec' : ''}; the console at /console/ signs people in as client ${consoleClient}`);
  const why = await new PersonTokens(settings).check();
  if (why) console.error(`gateway: WARNING: the identity provider ${settings.issuer} is unavailable: ${why}; people's access tokens are answered 503 until it is reachable; API keys keep working`);
}

/** Tracing from OTEL_EXPORTER_OTLP_ENDPOINT (else off). */
function startGatewayTracing(): Tracing | undefined {
  return tracingFromEnv('mpf-gateway');
}
