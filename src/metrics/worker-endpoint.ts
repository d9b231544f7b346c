/**
 * The worker's operations endpoint (WORKER_METRICS_ADDRESS), a small HTTP server of its own:
 *
 *   GET /metrics  the SDK's Prometheus text (its `temporal_*` metrics and ours, see catalog.ts,
 *                 read from the exporter's loopback port) followed by the Node process's metrics
 *                 (prom-client: memory, event loop lag, CPU)
 *   GET /healthz  200 while the process and its worker live; 503 once the worker failed or stopped
 *   GET /readyz   200 when the worker runs (polls its task queue) and Temporal answers; 503 while it
 *                 starts (search attributes, workflow bundle), drains, or Temporal does not answer
 *
 * It listens before the worker is built, so an orchestrator sees "alive, not ready" during start-up.
 * No secrets and no flow data are served: metric labels are kinds, states and endpoints only.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { NativeConnection, Worker } from '@temporalio/worker';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { request } from 'undici';

const READY_TIMEOUT_MS = 3_000;
const SCRAPE_TIMEOUT_MS = 5_000;
const PROMETHEUS_TEXT = 'text/plain; version=0.0.4; charset=utf-8';

export interface WorkerEndpoint {
  /** http://host:port, e.g. http://127.0.0.1:9464. */
  url: string;
  /** The worker and its connection, once built: /readyz follows the worker's state from then on. */
  attach(target: { worker: Worker; connection: NativeConnection }): void;
  close(): Promise<void>;
}

type Probe = { status: number; body: Record<string, unknown> };

export async function startWorkerEndpoint(opts: { host: string; port: number; exporterUrl?: string }): Promise<WorkerEndpoint> {
  let target: { worker: Worker; connection: NativeConnection } | undefined;
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });

  const metrics = async (): Promise<string> => {
    let sdk = '';
    if (opts.exporterUrl) {
      const res = await request(opts.exporterUrl, { headersTimeout: SCRAPE_TIMEOUT_MS, bodyTimeout: SCRAPE_TIMEOUT_MS });
      sdk = await res.body.text();
      if (res.statusCode !== 200) throw new Error(`the SDK's exporter answered ${res.statusCode}`);
    }
    return `${sdk.trimEnd()}\n${await registry.metrics()}`;
  };

  const healthz = (): Probe => {
    const state = target?.worker.getState() ?? 'STARTING';
    if (state === 'FAILED' || state === 'STOPPED') return { status: 503, body: { ok: false, state } };
    return { status: 200, body: { ok: true, state } };
  };

  const readyz = async (): Promise<Probe> => {
    if (!target) return { status: 503, body: { ok: false, error: 'starting' } };
    const state = target.worker.getState();
    if (state !== 'RUNNING') return { status: 503, body: { ok: false, error: 'not_running', state } };
    const conn = target.connection;
    try {
      await conn.withDeadline(Date.now() + READY_TIMEOUT_MS, () => conn.workflowService.getSystemInfo({}));
    } catch {
      return { status: 503, body: { ok: false, error: 'temporal_unavailable', state } };
    }
    return { status: 200, body: { ok: true, state } };
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? '/').split('?')[0];
    const json = (p: Probe) => {
      res.writeHead(p.status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      res.end(JSON.stringify(p.body));
    };
    if (req.method !== 'GET' && req.method !== 'HEAD') return json({ status: 405, body: { ok: false, error: 'method_not_allowed' } });
    if (path === '/healthz') return json(healthz());
    if (path === '/readyz') return json(await readyz());
    if (path === '/metrics') {
      try {
        const text = await metrics();
        res.writeHead(200, { 'content-type': PROMETHEUS_TEXT, 'cache-control': 'no-store' });
        res.end(text);
      } catch {
        json({ status: 503, body: { ok: false, error: 'metrics_unavailable' } });
      }
      return;
    }
    json({ status: 404, body: { ok: false, error: 'not_found' } });
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const shownHost = opts.host.includes(':') ? `[${opts.host}]` : opts.host;
  return {
    url: `http://${shownHost}:${port}`,
    attach(t) {
      target = t;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
