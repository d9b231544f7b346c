/**
 * The gateway as a server: startGateway() builds the app (app.ts) and listens; runGatewayMain()
 * is the `mpf gateway` process, configured from the environment.
 *
 *   const gw = await startGateway({ mpf, apiKey, port: 0 });   // gw.url, gw.app, gw.close()
 */
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { ConfigError, loadEnv, requireKeys } from '../../config/env';
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
  return {
    url,
    app,
    ...(metricsServer ? { metricsUrl: metricsServer.url } : {}),
    close: async () => {
      await metricsServer?.close();
      await app.close();
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
  if (!env.GATEWAY_API_KEY) throw new ConfigError('GATEWAY_API_KEY: is required (at least 16 characters) for the gateway');
  const keys = requireKeys(env);
  const port = opts.port ?? env.GATEWAY_PORT;
  const host = opts.host ?? env.GATEWAY_HOST ?? '127.0.0.1';
  const warning = checkPublicAddresses(host, env); // throws under NODE_ENV=production
  if (warning) console.error(`gateway: ${warning}`);
  const tracing = startGatewayTracing(); // before the client and the app: both add their instrumentation
  const mpf = await mpfClientFromEnv(env, { keys, publicUrl: env.GATEWAY_PUBLIC_URL ?? localUrl(host, port) });
  const connection = mpf.temporal.connection;
  let gateway: RunningGateway;
  try {
    gateway = await startGateway({
      mpf,
      apiKey: env.GATEWAY_API_KEY,
      host,
      port,
      publicUrl: env.GATEWAY_PUBLIC_URL,
      trustProxy: env.GATEWAY_TRUST_PROXY,
      metricsAddress: env.GATEWAY_METRICS_ADDRESS,
      codec: env.CODEC_AUTH_TOKEN ? { keys, authToken: env.CODEC_AUTH_TOKEN, corsOrigins: env.CODEC_CORS_ORIGINS } : undefined,
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
    process.stdout.write(`listening on ${gateway.url}\n`);
  });
  await gateway.close();
  await connection.close();
  await tracing?.shutdown();
}

/** Tracing from OTEL_EXPORTER_OTLP_ENDPOINT (else off). */
function startGatewayTracing(): Tracing | undefined {
  return tracingFromEnv('mpf-gateway');
}
