/**
 * The gateway's Prometheus metrics (prom-client, one registry per app): HTTP requests by method,
 * route pattern and status code with their latency, the provider's notifications by result,
 * readiness and the task queue's pollers (asked of Temporal at scrape time), and, in `mpf
 * gateway`, the Node process's own metrics. Names and help: src/observability/metric-catalog.ts.
 *
 * They are served by startMetricsServer() on a listener of their own (GATEWAY_METRICS_ADDRESS), never on the
 * API's port: the API faces the internet (notifications, PIN page), metrics belong on an internal
 * interface. Route patterns (`/v1/swaps/:swap_id`), never paths, are labels, so no id or token is.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { HTTP_LATENCY_BUCKETS, METRICS, NOTIFICATION_RESULTS, type NotificationResult } from '../../observability/metric-catalog';
import type { FlowKind } from '../../workflows/flow-ids';
import type { MpfClient } from '../client/mpf-client';
import { kindOfNotificationSegment, NOTIFICATION_ROUTE } from '../client/urls';
import { checkReadiness, type Readiness } from './readiness';

const FLOW_KINDS: FlowKind[] = ['swap', 'payment_link'];
const labels = (def: { labels: readonly string[] }) => [...def.labels];

export class GatewayMetrics {
  readonly registry = new Registry();
  private readonly httpRequests: Counter;
  private readonly httpDuration: Histogram;
  private readonly notifications: Counter;
  private readonly noted = new WeakMap<FastifyRequest, NotificationResult>();
  private readiness: { at: number; value: Promise<Readiness> } | undefined;

  constructor(opts: { mpf: MpfClient; processMetrics?: boolean }) {
    const register = [this.registry];
    const m = METRICS;
    this.httpRequests = new Counter({ name: m.httpRequests.name, help: m.httpRequests.help, labelNames: labels(m.httpRequests), registers: register });
    this.httpDuration = new Histogram({
      name: m.httpRequestDuration.name,
      help: m.httpRequestDuration.help,
      labelNames: labels(m.httpRequestDuration),
      buckets: HTTP_LATENCY_BUCKETS,
      registers: register,
    });
    this.notifications = new Counter({ name: m.notifications.name, help: m.notifications.help, labelNames: labels(m.notifications), registers: register });
    // Every series at 0 from the start, so Prometheus sees the first increase (an alert on refusals fires on the first one).
    for (const flowKind of FLOW_KINDS) for (const result of NOTIFICATION_RESULTS) this.notifications.inc({ flow_kind: flowKind, result }, 0);
    // One readiness check per scrape, shared by the two gauges.
    const readiness = (): Promise<Readiness> => {
      const now = Date.now();
      if (!this.readiness || now - this.readiness.at > 1_000) this.readiness = { at: now, value: checkReadiness(opts.mpf) };
      return this.readiness.value;
    };
    new Gauge({
      name: m.gatewayReady.name,
      help: m.gatewayReady.help,
      registers: register,
      async collect() {
        this.set((await readiness()).ready ? 1 : 0);
      },
    });
    new Gauge({
      name: m.taskQueuePollers.name,
      help: m.taskQueuePollers.help,
      labelNames: labels(m.taskQueuePollers),
      registers: register,
      async collect() {
        const r = await readiness();
        this.set({ task_queue_type: 'workflow' }, r.pollers?.workflow ?? -1);
        this.set({ task_queue_type: 'activity' }, r.pollers?.activity ?? -1);
      },
    });
    if (opts.processMetrics) collectDefaultMetrics({ register: this.registry });
  }

  /** What the notification route did with this request (counted when it is answered). */
  noteNotification(req: FastifyRequest, result: NotificationResult): void {
    this.noted.set(req, result);
  }

  /** Counts and times every answered request (onResponse). */
  install(app: FastifyInstance): void {
    app.addHook('onResponse', async (req, reply) => {
      const route = req.routeOptions.url ?? 'unmatched';
      const tags = { method: req.method, route, status_code: String(reply.statusCode) };
      // The key's public id (never the secret): bounded by the number of keys the keyring holds.
      // People (their access tokens) are counted together as `person`: bounded whoever signs in.
      this.httpRequests.inc({ ...tags, key_id: req.apiKey?.id ?? (req.person ? 'person' : 'none') });
      this.httpDuration.observe(tags, reply.elapsedTime / 1000);
      if (route === NOTIFICATION_ROUTE) {
        const kind = kindOfNotificationSegment((req.params as { kind?: string }).kind ?? '') ?? 'unknown';
        const result = this.noted.get(req) ?? (reply.statusCode >= 500 ? 'unavailable' : reply.statusCode === 404 ? 'not_found' : 'other');
        this.notifications.inc({ flow_kind: kind, result });
      }
    });
  }
}

export interface MetricsServer {
  /** http://host:port (GET /metrics). */
  url: string;
  close(): Promise<void>;
}

/** Serves GET /metrics of `metrics` on host:port (port 0: a free one). */
export async function startMetricsServer(metrics: GatewayMetrics, at: { host: string; port: number }): Promise<MetricsServer> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end('{"error":"not_found"}');
      return;
    }
    metrics.registry.metrics().then(
      (text) => {
        res.writeHead(200, { 'content-type': metrics.registry.contentType, 'cache-control': 'no-store' });
        res.end(text);
      },
      () => {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end('{"error":"metrics_unavailable"}');
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(at.port, at.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = at.host === '0.0.0.0' || at.host === '::' ? '127.0.0.1' : at.host.includes(':') ? `[${at.host}]` : at.host;
  return {
    url: `http://${host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
