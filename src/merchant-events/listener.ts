/**
 * A local receiver of merchant events (`mpf events listen`, and the tests' receiver): verifies
 * each delivery's Standard Webhooks signature with the `standardwebhooks` package and reports it.
 * A bad or missing signature is answered 401; a verified one with what `answer` decides (default
 * 200). A request whose connection closed before it was answered is reported `aborted`.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FlowEvent } from '../contract/merchant-events';
import { verifyDelivery } from './signing';

export interface ReceivedDelivery {
  /** The webhook-id header (the event id). */
  id: string;
  /** How many deliveries of this id this receiver has seen, this one included. */
  attempt: number;
  received_at: string;
  verified: boolean;
  /** Why verification failed. */
  error?: string;
  event?: FlowEvent;
  /** The raw body, exactly as received. */
  body: string;
  headers: Record<string, string>;
  /** What was answered; undefined when the connection closed first. */
  status?: number;
  aborted?: boolean;
}

export interface ListenerOptions {
  secrets: readonly string[];
  host?: string;
  port?: number;
  /**
   * The status to answer a verified delivery with (may wait first; default 200). Called once per
   * delivery, with the delivery and the request's connection-closed promise.
   */
  answer?: (d: ReceivedDelivery, closed: Promise<void>) => number | Promise<number>;
  /** Called when a delivery has been answered (or its connection closed). */
  onDelivery?: (d: ReceivedDelivery) => void;
}

export interface RunningListener {
  url: string;
  deliveries: ReceivedDelivery[];
  close(): Promise<void>;
}

const MAX_BODY = 1024 * 1024;

export async function startEventListener(opts: ListenerOptions): Promise<RunningListener> {
  const deliveries: ReceivedDelivery[] = [];
  const seen = new Map<string, number>();

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const closed = new Promise<void>((resolve) => res.once('close', () => resolve()));
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const c of req as AsyncIterable<Buffer>) {
      size += c.length;
      if (size > MAX_BODY) {
        res.writeHead(413).end();
        return;
      }
      chunks.push(c);
    }
    const body = Buffer.concat(chunks).toString('utf8');
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : v;
    const id = headers['webhook-id'] ?? '(no webhook-id)';
    const attempt = (seen.get(id) ?? 0) + 1;
    seen.set(id, attempt);
    const d: ReceivedDelivery = { id, attempt, received_at: new Date().toISOString(), verified: false, body, headers };
    try {
      d.event = verifyDelivery(opts.secrets, body, headers) as FlowEvent;
      d.verified = true;
    } catch (err) {
      d.error = (err as Error).message;
    }
    let status = 401;
    if (d.verified) {
      try {
        status = opts.answer ? await opts.answer(d, closed) : 200;
      } catch {
        status = 500;
      }
    }
    if (res.destroyed || res.writableEnded || req.socket.destroyed) {
      d.aborted = true;
    } else {
      d.status = status;
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(d.verified ? { received: true } : { error: 'invalid signature' }));
    }
    deliveries.push(d);
    opts.onDelivery?.(d);
  };

  const server: Server = createServer((req, res) => {
    if (req.method !== 'POST') {
      res.writeHead(405, { allow: 'POST' }).end();
      return;
    }
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => resolve());
  });
  const addr = server.address() as AddressInfo;
  const host = addr.address.includes(':') ? `[${addr.address}]` : addr.address;
  return {
    url: `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${addr.port}/`,
    deliveries,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
